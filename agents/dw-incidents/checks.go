package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// checkOptions say how an incident's checks are re-run: the window and the tables' event-time column.
type checkOptions struct {
	Window          string
	TimeZone        string
	TimestampColumn string
	// KeyColumns overrides the key of the incident's own uniqueness check.
	KeyColumns []string
}

// incidentChecks is one re-run of an incident's checks: its own failing check (unless the plan moved
// the data elsewhere) and every check of its latest plan.
type incidentChecks struct {
	Window quality.Window
	// PlanID is the plan whose checks ran (0: no plan).
	PlanID int64
	// Superseded explains why the incident's own check was replaced by a plan check.
	Superseded string
	Checks     []verifyCheck
	// Before are the failing points that opened the incident; After are this re-run's results.
	Before, After []receipts.Check
	// Failing says, one line per result, what does not pass yet.
	Failing []string
	RunIDs  []int64
}

// Passed is true when every check produced results and all of them pass.
func (c incidentChecks) Passed() bool { return len(c.Failing) == 0 }

// Summary names the checks and the check runs, for the incident's timeline.
func (c incidentChecks) Summary() string {
	var names []string
	for _, r := range c.Checks {
		n := r.Metric
		if r.Subject != "" {
			n += " (" + r.Subject + ")"
		}
		n += " on " + r.Asset
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	runs := make([]string, len(c.RunIDs))
	for i, id := range c.RunIDs {
		runs[i] = fmt.Sprintf("#%d", id)
	}
	s := fmt.Sprintf("%d checks %s (check runs %s): %s", len(c.Checks), c.Window.Label, strings.Join(runs, ", "), strings.Join(names, "; "))
	if c.PlanID != 0 {
		s += fmt.Sprintf("; plan #%d", c.PlanID)
	}
	if c.Superseded != "" {
		s += "; " + c.Superseded
	}
	return s
}

// checkRequest is one check to run: which table, which check, and where it came from.
type checkRequest struct {
	asset  string
	origin string
	req    quality.Request
}

// runIncidentChecks re-runs the incident's own failing check and its latest plan's checks over the
// window on the configured warehouse, records the runs in the check history, and returns every
// result with the receipt's before and after records. A plan check whose supersedes names the
// incident's asset replaces the incident's own check (the plan moved the data to a new table, and
// the old one keeps its bad rows). It never opens incidents.
func runIncidentChecks(ctx context.Context, env *mcpkit.Env, inc incidents.Incident, opts checkOptions) (incidentChecks, error) {
	st, err := env.Store.Get(ctx)
	if err != nil {
		return incidentChecks{}, err
	}
	out := incidentChecks{Checks: []verifyCheck{}, Before: []receipts.Check{}, After: []receipts.Check{}}
	plan, err := plans.Latest(ctx, st, inc.ID)
	switch {
	case errors.Is(err, plans.ErrNoPlan):
	case err != nil:
		return incidentChecks{}, err
	default:
		out.PlanID = plan.ID
	}
	var superseding *plans.Check
	for i, c := range plan.Checks {
		if c.Supersedes != "" && strings.EqualFold(c.Supersedes, inc.Asset) {
			superseding = &plan.Checks[i]
			out.Superseded = fmt.Sprintf("the incident's own check on %s is superseded by the plan's %s check on %s (%s)", inc.Asset, c.Check, c.Asset, c.Why)
			break
		}
	}
	var metric string
	var own quality.Check
	if superseding == nil {
		if metric, own, err = metricOf(inc.FailureMode); err != nil {
			return incidentChecks{}, err
		}
	} else if m, c, err := metricOf(inc.FailureMode); err == nil {
		metric, own = m, c // still read the failing points: they are the receipt's "before"
	}
	if env.Config.Warehouse == nil {
		return incidentChecks{}, fmt.Errorf("warehouse is not configured: set warehouse.engine and warehouse.dsn in %s", env.Config.Source)
	}
	engine := env.Config.Warehouse.Engine
	now := env.Now()
	out.Window, err = quality.ParseWindow(quality.WindowSpec{Window: opts.Window, TimeZone: opts.TimeZone}, now)
	if err != nil {
		return incidentChecks{}, err
	}
	hist := quality.NewHistory(st)
	var subjects []string
	if metric != "" {
		// The last run with a failing point of this metric says which subjects failed.
		runs, err := hist.Runs(ctx, quality.HistoryQuery{Asset: inc.Asset, Metric: metric, Limit: 200})
		if err != nil {
			return incidentChecks{}, err
		}
		for _, r := range runs {
			if r.Asset != inc.Asset {
				continue
			}
			for _, m := range r.Metrics {
				if m.Status == string(quality.Fail) || m.Status == string(quality.Warn) {
					out.Before = append(out.Before, receipts.Check{At: r.StartedAt, Asset: r.Asset, Metric: m.Metric, Subject: m.Subject, Value: m.Value, Status: m.Status})
					if m.Subject != "" && !slices.Contains(subjects, m.Subject) {
						subjects = append(subjects, m.Subject)
					}
				}
			}
			if len(out.Before) > 0 {
				break
			}
		}
	}
	var todo []checkRequest
	if superseding == nil {
		table, err := tableOf(inc.Asset, engine)
		if err != nil {
			return incidentChecks{}, err
		}
		req := quality.Request{Table: table, TimestampColumn: opts.TimestampColumn, Window: out.Window, Checks: []quality.Check{own}}
		switch own {
		case quality.NullRate:
			req.Columns = subjects
		case quality.Uniqueness:
			req.KeyColumns = opts.KeyColumns
			if len(req.KeyColumns) == 0 && len(subjects) > 0 {
				req.KeyColumns = strings.Split(subjects[0], ",")
			}
		}
		todo = append(todo, checkRequest{asset: inc.Asset, origin: "incident", req: req})
	}
	for i, c := range plan.Checks {
		origin := fmt.Sprintf("plan #%d check %d", plan.ID, i+1)
		checks, err := quality.ParseChecks([]string{c.Check})
		if err != nil || len(checks) != 1 {
			return incidentChecks{}, fmt.Errorf("%s on %s: %v", origin, c.Asset, err)
		}
		if checks[0] == quality.Custom {
			return incidentChecks{}, fmt.Errorf("%s on %s is a custom check, which a plan cannot carry (no assertion SQL): run it with run_quality_check (dw-quality) and store a plan without it", origin, c.Asset)
		}
		table, err := tableOf(c.Asset, engine)
		if err != nil {
			return incidentChecks{}, fmt.Errorf("%s: %w", origin, err)
		}
		w := out.Window
		if c.Window != "" {
			if w, err = quality.ParseWindow(quality.WindowSpec{Window: c.Window, TimeZone: opts.TimeZone}, now); err != nil {
				return incidentChecks{}, fmt.Errorf("%s: %w", origin, err)
			}
		}
		req := quality.Request{Table: table, TimestampColumn: opts.TimestampColumn, Window: w, Checks: checks, Columns: c.Columns, KeyColumns: c.KeyColumns}
		if checks[0] == quality.Uniqueness && len(req.KeyColumns) == 0 {
			req.KeyColumns = c.Columns
		}
		todo = append(todo, checkRequest{asset: c.Asset, origin: origin, req: req})
	}
	wh, err := warehouse.Connect(env.Config.Warehouse)
	if err != nil {
		return incidentChecks{}, err
	}
	defer wh.Close()
	checker := quality.NewChecker(wh, hist, env.Now)
	for _, t := range todo {
		rep, err := checker.Run(ctx, t.req)
		if err != nil {
			return incidentChecks{}, fmt.Errorf("re-run %s (%s) on %s: %w", t.req.Checks[0], t.origin, t.req.Table, err)
		}
		out.RunIDs = append(out.RunIDs, rep.RunID)
		for _, r := range rep.Results {
			out.Checks = append(out.Checks, verifyCheck{Asset: rep.Asset, Origin: t.origin, Check: r.Check, Metric: r.Metric, Subject: r.Subject,
				Value: r.Value, Status: string(r.Status), Why: r.Why})
			out.After = append(out.After, receipts.Check{At: now, Asset: rep.Asset, Metric: r.Metric, Subject: r.Subject, Value: r.Value, Status: string(r.Status), Why: r.Why})
			if r.Status != quality.Pass {
				name := r.Metric
				if r.Subject != "" {
					name += " (" + r.Subject + ")"
				}
				out.Failing = append(out.Failing, fmt.Sprintf("%s on %s %s: %s", name, rep.Asset, r.Status, r.Why))
			}
		}
		if len(rep.Results) == 0 {
			out.Failing = append(out.Failing, fmt.Sprintf("the re-run of %s (%s) on %s produced no result", t.req.Checks[0], t.origin, rep.Asset))
		}
	}
	return out, nil
}
