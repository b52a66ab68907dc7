package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/quality"
)

type runMonitorsParams struct {
	Names []string `json:"names,omitempty" jsonschema:"Monitors to consider (default all configured)"`
	Force bool     `json:"force,omitempty" jsonschema:"Run them even when their schedule says they are not due"`
}

type monitorRun struct {
	Monitor   string                `json:"monitor"`
	Table     string                `json:"table"`
	Ran       bool                  `json:"ran"`
	Status    string                `json:"status" jsonschema:"pass, warn, fail, error, or not_due"`
	Summary   string                `json:"summary,omitempty"`
	Error     string                `json:"error,omitempty"`
	RunID     int64                 `json:"run_id,omitempty"`
	Incidents []quality.IncidentRef `json:"incidents,omitempty"`
	Failures  []quality.Result      `json:"failures,omitempty" jsonschema:"The failing and warning results of this run"`
	NextDue   *time.Time            `json:"next_due,omitempty"`
	Domain    *quality.Domain       `json:"domain,omitempty"`
}

type runMonitorsResult struct {
	Runs    []monitorRun `json:"runs"`
	Ran     int          `json:"ran"`
	NotDue  int          `json:"not_due"`
	Failing int          `json:"failing" jsonschema:"Monitors that failed or could not run"`
	// Failed makes `dw-quality call run_monitors` exit 100 for cron and CI.
	Failed bool `json:"failed" jsonschema:"true when any monitor failed or could not run"`
}

func runMonitors(d *deps) mcpkit.Tool {
	return mcpkit.Write("run_monitors",
		"Run the quality monitors declared in the config (monitors:) whose cron schedule says they are due, or all with force. "+
			"Each runs like run_quality_check and is recorded; failed is true when any monitor fails or cannot run, so "+
			"`dw-quality call run_monitors` exits 100 in cron or CI.",
		func(ctx context.Context, p runMonitorsParams) (runMonitorsResult, error) {
			out := runMonitorsResult{Runs: []monitorRun{}}
			mons, err := selectMonitors(d.env.Config.Monitors, p.Names)
			if err != nil {
				return out, err
			}
			hist, err := d.history(ctx)
			if err != nil {
				return out, err
			}
			for i, m := range mons {
				mcpkit.ReportProgress(ctx, float64(i), float64(len(mons)), "monitor "+m.Name)
				run := d.runMonitor(ctx, hist, m, p.Force)
				switch run.Status {
				case "not_due":
					out.NotDue++
				case "fail", "error":
					out.Failing++
				}
				if run.Ran {
					out.Ran++
				}
				out.Runs = append(out.Runs, run)
			}
			mcpkit.ReportProgress(ctx, float64(len(mons)), float64(len(mons)), "done")
			out.Failed = out.Failing > 0
			return out, nil
		})
}

func selectMonitors(all []config.Monitor, names []string) ([]config.Monitor, error) {
	if len(all) == 0 {
		return nil, fmt.Errorf("no monitors are configured: add a monitors: section to the config (see configs/confluent-cloud.example.yaml)")
	}
	if len(names) == 0 {
		return all, nil
	}
	var out []config.Monitor
	for _, n := range names {
		i := slices.IndexFunc(all, func(m config.Monitor) bool { return m.Name == n })
		if i < 0 {
			var known []string
			for _, m := range all {
				known = append(known, m.Name)
			}
			return nil, fmt.Errorf("monitor %q is not configured (configured: %s)", n, strings.Join(known, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func zone(m config.Monitor) *time.Location {
	if m.TimeZone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(m.TimeZone)
	if err != nil { // validated at load; keep UTC if the zone database changed under us
		return time.UTC
	}
	return loc
}

func (d *deps) runMonitor(ctx context.Context, hist *quality.History, m config.Monitor, force bool) monitorRun {
	run := monitorRun{Monitor: m.Name, Table: m.Table}
	now := d.now()
	last, err := hist.LastRun(ctx, m.Name)
	if err != nil {
		run.Status, run.Error = "error", err.Error()
		return run
	}
	due, next, err := quality.Due(m.Schedule, zone(m), last, now)
	if err != nil {
		run.Status, run.Error = "error", err.Error()
		return run
	}
	if !due && !force {
		run.Status, run.NextDue = "not_due", &next
		return run
	}
	run.NextDue = &next
	if m.Domain != "" {
		dom := quality.DomainFor(d.env.Config.Domains, m.Domain, "")
		run.Domain = &dom
	}
	rep, err := d.checkMonitor(ctx, m, now)
	run.Ran = true
	if err != nil {
		run.Status, run.Error = "error", err.Error()
		return run
	}
	run.Status, run.Summary, run.RunID, run.Incidents = string(rep.Status), rep.Summary, rep.RunID, rep.Incidents
	for _, r := range rep.Results {
		if r.Status != quality.Pass {
			run.Failures = append(run.Failures, r)
		}
	}
	return run
}

func (d *deps) checkMonitor(ctx context.Context, m config.Monitor, now time.Time) (*quality.Report, error) {
	req, err := quality.MonitorRequest(m)
	if err != nil {
		return nil, err
	}
	if req.Window, err = quality.ParseWindow(quality.WindowSpec{Window: m.Window, TimeZone: m.TimeZone}, now); err != nil {
		return nil, err
	}
	c, _, err := d.checker(ctx)
	if err != nil {
		return nil, err
	}
	req.OpenIncidents = d.incidentPolicy(nil, m.Domain)
	return c.Run(ctx, req)
}

type listMonitorsParams struct{}

type monitorInfo struct {
	Name            string     `json:"name"`
	Domain          string     `json:"domain,omitempty"`
	Autonomy        string     `json:"autonomy,omitempty" jsonschema:"The domain's autonomy level; L1 and above open incidents on failure"`
	Table           string     `json:"table"`
	TimestampColumn string     `json:"timestamp_column,omitempty"`
	KeyColumns      []string   `json:"key_columns,omitempty"`
	Checks          []string   `json:"checks"`
	Assertions      []string   `json:"assertions,omitempty"`
	Window          string     `json:"window"`
	TimeZone        string     `json:"time_zone"`
	Schedule        string     `json:"schedule"`
	LastRun         *time.Time `json:"last_run,omitempty"`
	LastStatus      string     `json:"last_status,omitempty"`
	Due             bool       `json:"due"`
	NextDue         *time.Time `json:"next_due,omitempty"`
}

type listMonitorsResult struct {
	Monitors []monitorInfo `json:"monitors"`
}

func listMonitors(d *deps) mcpkit.Tool {
	return mcpkit.Read("list_monitors",
		"List the quality monitors declared in the config with their table, checks, schedule, last run and status, and whether each is due now.",
		func(ctx context.Context, _ listMonitorsParams) (listMonitorsResult, error) {
			out := listMonitorsResult{Monitors: []monitorInfo{}}
			if len(d.env.Config.Monitors) == 0 {
				return out, nil
			}
			hist, err := d.history(ctx)
			if err != nil {
				return out, err
			}
			now := d.now()
			for _, m := range d.env.Config.Monitors {
				info := monitorInfo{Name: m.Name, Domain: m.Domain, Table: m.Table, TimestampColumn: m.TimestampColumn, KeyColumns: m.KeyColumns,
					Checks: m.Checks, Window: m.Window, TimeZone: m.TimeZone, Schedule: m.Schedule}
				if len(info.Checks) == 0 {
					info.Checks = config.DefaultMonitorChecks
				}
				if info.Window == "" {
					info.Window = "today"
				}
				if info.TimeZone == "" {
					info.TimeZone = "UTC"
				}
				for _, a := range m.Assertions {
					info.Assertions = append(info.Assertions, a.Name)
				}
				for _, dom := range d.env.Config.Domains {
					if dom.Name == m.Domain {
						info.Autonomy = dom.Autonomy
					}
				}
				runs, err := hist.Runs(ctx, quality.HistoryQuery{Monitor: m.Name, Limit: 1})
				if err != nil {
					return out, err
				}
				var last time.Time
				if len(runs) > 0 {
					last = runs[0].StartedAt
					info.LastRun, info.LastStatus = &last, runs[0].Status
				}
				due, next, err := quality.Due(m.Schedule, zone(m), last, now)
				if err != nil {
					return out, err
				}
				info.Due, info.NextDue = due, &next
				out.Monitors = append(out.Monitors, info)
			}
			return out, nil
		}, mcpkit.LocalOnly())
}

type getCheckHistoryParams struct {
	Table   string `json:"table,omitempty" jsonschema:"Table or asset URN (a suffix such as orders_daily matches); default all"`
	Monitor string `json:"monitor,omitempty" jsonschema:"Only runs of this monitor"`
	Metric  string `json:"metric,omitempty" jsonschema:"Only this metric, e.g. null_rate, rows_per_hour, rows_in_hour, freshness_lag_seconds, load_lag_seconds, zero_rate, sum_per_hour, mean, dimension_rows_per_hour, reconcile_ratio, schema_changes, duplicate_rows, violating_rows"`
	Subject string `json:"subject,omitempty" jsonschema:"Only this column, key or assertion"`
	Since   string `json:"since,omitempty" jsonschema:"Only runs started at or after this time (RFC 3339 or a date)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"Most runs to return, newest first (default 50, at most 500)"`
}

type getCheckHistoryResult struct {
	Runs []quality.RunRecord `json:"runs"`
}

func getCheckHistory(d *deps) mcpkit.Tool {
	return mcpkit.Read("get_check_history",
		"Show earlier quality check runs from the local history, newest first: each run's status, window and the metrics it recorded "+
			"with their baselines and expected ranges (the series baselines learn from). Filter by table, monitor, metric or column.",
		func(ctx context.Context, p getCheckHistoryParams) (getCheckHistoryResult, error) {
			out := getCheckHistoryResult{Runs: []quality.RunRecord{}}
			q := quality.HistoryQuery{Asset: p.Table, Monitor: p.Monitor, Metric: p.Metric, Subject: p.Subject, Limit: p.Limit}
			if p.Limit < 0 || p.Limit > 500 {
				return out, fmt.Errorf("limit must be between 1 and 500")
			}
			if p.Since != "" {
				w, err := quality.ParseWindow(quality.WindowSpec{Since: p.Since}, d.now())
				if err != nil {
					return out, err
				}
				q.Since = w.Since
			}
			hist, err := d.history(ctx)
			if err != nil {
				return out, err
			}
			runs, err := hist.Runs(ctx, q)
			if err != nil {
				return out, err
			}
			if runs != nil {
				out.Runs = runs
			}
			return out, nil
		}, mcpkit.LocalOnly())
}
