package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Monitor is a declared quality check on one warehouse table, run by dw-quality's run_monitors
// when its schedule says it is due (from cron or CI).
type Monitor struct {
	Name string `yaml:"name"`
	// Domain names the entry of domains whose owners and autonomy apply (L1+ opens incidents).
	Domain string `yaml:"domain"`
	// Table is the warehouse table: name, schema.name or database.schema.name.
	Table string `yaml:"table"`
	// TimestampColumn is the column the window is read on.
	TimestampColumn string `yaml:"timestamp_column"`
	// KeyColumns must be unique within the window (one key, possibly composite).
	KeyColumns []string `yaml:"key_columns"`
	// Columns limits the null-rate and column checks; empty means every column.
	Columns []string `yaml:"columns"`
	// Checks is a subset of MonitorChecks; empty means volume, freshness, null_rate, uniqueness
	// and custom (the hour-of-day volume, column, dimension, reconciliation and schema checks run
	// when listed).
	Checks []string `yaml:"checks"`
	// ColumnMetrics limits the column check's metrics; empty means every metric each column's
	// type allows, distinct excepted.
	ColumnMetrics []string `yaml:"column_metrics"`
	// Thresholds are fixed limits judged instead of the history baseline.
	Thresholds []MonitorThreshold `yaml:"thresholds"`
	// Dimension is the key the dimension check groups by.
	Dimension *MonitorDimension `yaml:"dimension"`
	// Reconcile names the upstream the reconciliation check compares the table with.
	Reconcile *MonitorReconcile `yaml:"reconcile"`
	// LoadTimestampColumn records when each row was loaded; freshness then reports load lag too.
	LoadTimestampColumn string `yaml:"load_timestamp_column"`
	// MaxLoadLag fails load lag beyond it whatever the history says.
	MaxLoadLag time.Duration `yaml:"max_load_lag"`
	// Window is today (default), yesterday, this_hour, last_hour, or a duration such as 6h, read in
	// TimeZone.
	Window   string `yaml:"window"`
	TimeZone string `yaml:"time_zone"`
	// Schedule is a five-field cron expression (or @hourly, @daily, @every 30m), read in TimeZone.
	Schedule string `yaml:"schedule"`
	// MaxFreshnessLag fails freshness beyond it whatever the history says.
	MaxFreshnessLag time.Duration `yaml:"max_freshness_lag"`
	// Assertions are custom SQL rules: each a SELECT returning the violating rows.
	Assertions []MonitorAssertion `yaml:"assertions"`
}

// MonitorAssertion is one custom SQL rule of a monitor.
type MonitorAssertion struct {
	Name string `yaml:"name"`
	SQL  string `yaml:"sql"`
}

// MonitorThreshold is a fixed limit on one metric (of one column, or of every measured column).
type MonitorThreshold struct {
	Metric string   `yaml:"metric"`
	Column string   `yaml:"column"`
	Min    *float64 `yaml:"min"`
	Max    *float64 `yaml:"max"`
}

// MonitorDimension is the dimension check's key, and optionally the column summed per key.
type MonitorDimension struct {
	Column  string `yaml:"column"`
	Measure string `yaml:"measure"`
	MaxKeys int    `yaml:"max_keys"`
	Top     int    `yaml:"top"`
}

// MonitorReconcile is the upstream table a model is reconciled with.
type MonitorReconcile struct {
	Upstream                string `yaml:"upstream"`
	UpstreamTimestampColumn string `yaml:"upstream_timestamp_column"`
	Column                  string `yaml:"column"`
	UpstreamColumn          string `yaml:"upstream_column"`
}

// MonitorChecks are the check names a monitor may list (pkg/quality's checks; a test keeps the
// two lists equal).
var MonitorChecks = []string{"schema_changes", "volume", "volume_by_hour", "freshness", "null_rate", "column", "dimension", "reconciliation", "uniqueness", "custom"}

// DefaultMonitorChecks run when a monitor lists none.
var DefaultMonitorChecks = []string{"volume", "freshness", "null_rate", "uniqueness", "custom"}

// MonitorColumnMetrics are the metric names column_metrics may list (pkg/quality's column
// metrics; a test keeps the two lists equal).
var MonitorColumnMetrics = []string{"zero_rate", "negative_rate", "sum_per_hour", "mean", "min", "max", "stddev",
	"empty_rate", "min_length", "max_length", "mean_length", "true_rate", "distinct"}

// CronParser is how monitor schedules are read (five fields, plus descriptors like @hourly).
var CronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func (c *Config) validateMonitors(add func(string, ...any)) {
	domains := map[string]bool{}
	for _, d := range c.Domains {
		domains[d.Name] = true
	}
	seen := map[string]bool{}
	for i, m := range c.Monitors {
		key := fmt.Sprintf("monitors[%d]", i)
		switch {
		case m.Name == "":
			add("%s.name: required (it names the monitor in run_monitors and the check history)", key)
		case seen[m.Name]:
			add("%s.name: %q is used twice; monitor names must be unique", key, m.Name)
		}
		seen[m.Name] = true
		if strings.TrimSpace(m.Table) == "" {
			add("%s.table: required, e.g. ANALYTICS.USAGE.USAGE_HOURLY", key)
		}
		if m.Domain != "" && !domains[m.Domain] {
			add("%s.domain: %q is not a name under domains", key, m.Domain)
		}
		for _, ch := range m.Checks {
			ok := false
			for _, k := range MonitorChecks {
				ok = ok || ch == k
			}
			if !ok {
				add("%s.checks: %q is unknown; use %s", key, ch, strings.Join(MonitorChecks, ", "))
			}
		}
		for _, cm := range m.ColumnMetrics {
			if !slices.Contains(MonitorColumnMetrics, cm) {
				add("%s.column_metrics: %q is unknown; use %s", key, cm, strings.Join(MonitorColumnMetrics, ", "))
			}
		}
		for j, th := range m.Thresholds {
			tkey := fmt.Sprintf("%s.thresholds[%d]", key, j)
			if th.Metric != "null_rate" && !slices.Contains(MonitorColumnMetrics, th.Metric) {
				add("%s.metric: %q is unknown; use null_rate or a column metric (%s)", tkey, th.Metric, strings.Join(MonitorColumnMetrics, ", "))
			}
			if th.Min == nil && th.Max == nil {
				add("%s: give min, max or both", tkey)
			} else if th.Min != nil && th.Max != nil && *th.Min > *th.Max {
				add("%s: min %v is above max %v", tkey, *th.Min, *th.Max)
			}
		}
		listed := func(check string) bool { return slices.Contains(m.Checks, check) }
		switch {
		case listed("dimension") && (m.Dimension == nil || strings.TrimSpace(m.Dimension.Column) == ""):
			add("%s.dimension.column: required by the dimension check, the key to group by (e.g. account_id)", key)
		case m.Dimension != nil && !listed("dimension"):
			add("%s.dimension: set but checks does not list dimension", key)
		case m.Dimension != nil && (m.Dimension.MaxKeys < 0 || m.Dimension.MaxKeys > 10000 || m.Dimension.Top < 0):
			add("%s.dimension: max_keys must be 1 … 10000 (default 1000) and top positive", key)
		}
		switch {
		case listed("reconciliation") && (m.Reconcile == nil || strings.TrimSpace(m.Reconcile.Upstream) == ""):
			add("%s.reconcile.upstream: required by the reconciliation check, the table the model is built from", key)
		case m.Reconcile != nil && !listed("reconciliation"):
			add("%s.reconcile: set but checks does not list reconciliation", key)
		}
		if m.MaxLoadLag < 0 {
			add("%s.max_load_lag: must not be negative", key)
		}
		if m.MaxLoadLag > 0 && m.LoadTimestampColumn == "" {
			add("%s.max_load_lag: needs load_timestamp_column, the column recording when rows were loaded", key)
		}
		if m.TimeZone != "" {
			if _, err := time.LoadLocation(m.TimeZone); err != nil {
				add("%s.time_zone: %q is not an IANA zone such as UTC or Europe/Berlin", key, m.TimeZone)
			}
		}
		switch w := strings.ToLower(m.Window); w {
		case "", "today", "yesterday", "this_hour", "last_hour":
		default:
			if d, err := time.ParseDuration(w); err != nil || d <= 0 {
				add("%s.window: %q; use today, yesterday, this_hour, last_hour or a duration such as 6h", key, m.Window)
			}
		}
		if m.Schedule == "" {
			add("%s.schedule: required, a cron expression such as \"5 * * * *\" (hourly at :05) or @daily", key)
		} else if _, err := CronParser.Parse(m.Schedule); err != nil {
			add("%s.schedule: %q is not a cron expression (%v)", key, m.Schedule, err)
		}
		if m.MaxFreshnessLag < 0 {
			add("%s.max_freshness_lag: must not be negative", key)
		}
		names := map[string]bool{}
		for j, a := range m.Assertions {
			akey := fmt.Sprintf("%s.assertions[%d]", key, j)
			if a.Name == "" || names[a.Name] {
				add("%s.name: required and unique within the monitor", akey)
			}
			names[a.Name] = true
			if strings.TrimSpace(a.SQL) == "" {
				add("%s.sql: required, a SELECT returning the violating rows", akey)
			}
		}
	}
}
