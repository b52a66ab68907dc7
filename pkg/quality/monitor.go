package quality

import (
	"fmt"
	"time"

	"github.com/dataworkers/dw/pkg/config"
)

// Due reports whether a monitor with this cron schedule is due at now, given its last run (zero
// when it never ran: a new monitor is due at once). It also returns the next time it will be due.
func Due(schedule string, loc *time.Location, last, now time.Time) (bool, time.Time, error) {
	sched, err := config.CronParser.Parse(schedule)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("schedule %q: %w", schedule, err)
	}
	if loc == nil {
		loc = time.UTC
	}
	if last.IsZero() {
		return true, sched.Next(now.In(loc)), nil
	}
	next := sched.Next(last.In(loc))
	if !next.After(now) {
		return true, sched.Next(now.In(loc)), nil
	}
	return false, next, nil
}

// Domain is the domain that governs an asset, with its autonomy level (0 … 4), or level -1 when no
// domain claims the asset.
type Domain struct {
	Name  string `json:"name,omitempty"`
	Level int    `json:"level"`
}

// DomainFor finds the domain of an asset: the named one when given (a monitor's domain), else the
// first whose asset patterns match the URN ('*' matches any run of characters, case-insensitive
// because warehouse identifiers fold).
func DomainFor(domains []config.Domain, name, asset string) Domain {
	d, ok := config.FindDomain(domains, name, asset)
	if !ok {
		return Domain{Level: -1}
	}
	return Domain{Name: d.Name, Level: d.Level()}
}

// MonitorRequest turns a configured monitor into a request; the caller adds the window (read at
// run time) and the incident policy.
func MonitorRequest(m config.Monitor) (Request, error) {
	checks, err := ParseChecks(m.Checks)
	if err != nil {
		return Request{}, err
	}
	metrics, err := ParseColumnMetrics(m.ColumnMetrics)
	if err != nil {
		return Request{}, err
	}
	req := Request{
		Table: m.Table, TimestampColumn: m.TimestampColumn, Checks: checks, Columns: m.Columns, ColumnMetrics: metrics,
		KeyColumns: m.KeyColumns, MaxFreshnessLag: m.MaxFreshnessLag, LoadTimestampColumn: m.LoadTimestampColumn,
		MaxLoadLag: m.MaxLoadLag, Monitor: m.Name,
	}
	for _, a := range m.Assertions {
		req.Assertions = append(req.Assertions, Assertion{Name: a.Name, SQL: a.SQL})
	}
	for _, t := range m.Thresholds {
		req.Thresholds = append(req.Thresholds, Threshold{Metric: t.Metric, Column: t.Column, Min: t.Min, Max: t.Max})
	}
	if d := m.Dimension; d != nil {
		req.Dimension = &DimensionSpec{Column: d.Column, Measure: d.Measure, MaxKeys: d.MaxKeys, Top: d.Top}
	}
	if r := m.Reconcile; r != nil {
		req.Reconcile = &ReconcileSpec{Upstream: r.Upstream, UpstreamTimestampColumn: r.UpstreamTimestampColumn, Column: r.Column, UpstreamColumn: r.UpstreamColumn}
	}
	return req, ValidateThresholds(req.Thresholds)
}
