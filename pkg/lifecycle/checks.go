package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// CheckOptions say how an incident's checks are re-run: the window and the tables' event-time column.
type CheckOptions struct {
	Window          string
	TimeZone        string
	TimestampColumn string
	// KeyColumns overrides the key of the incident's own uniqueness check.
	KeyColumns []string
}

// CheckRun is one re-run of an incident's checks: its own failing check (unless the plan moved
// the data elsewhere) and every check of its latest plan.
type CheckRun struct {
	Window quality.Window
	// PlanID is the plan whose checks ran (0: no plan).
	PlanID int64
	// Superseded explains why the incident's own check was replaced by a plan check.
	Superseded string
	Checks     []Check
	// Before are the failing points that opened the incident; After are this re-run's results.
	Before, After []receipts.Check
	// Failing says, one line per result, what does not pass yet.
	Failing []string
	RunIDs  []int64
}

// Passed is true when every check produced results and all of them pass.
func (c CheckRun) Passed() bool { return len(c.Failing) == 0 }

// Summary names the checks and the check runs, for the incident's timeline.
func (c CheckRun) Summary() string {
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

// Check is one re-run result as the incident judges it.
type Check struct {
	Asset   string  `json:"asset"`
	Origin  string  `json:"origin" jsonschema:"incident (its own failing check) or the plan check it came from"`
	Check   string  `json:"check"`
	Metric  string  `json:"metric"`
	Subject string  `json:"subject,omitempty"`
	Value   float64 `json:"value"`
	Status  string  `json:"status" jsonschema:"pass, warn, fail, or not_judged (too little history to judge: does not count as passing)"`
	Why     string  `json:"why"`
}

// rerun is how one failure mode or plan check name is re-run: the quality check, the history
// metrics its points are recorded under, and, when the name is a column metric (zero_rate,
// sum_per_hour), that metric alone.
type rerun struct {
	check   quality.Check
	metrics []string
	column  quality.ColumnMetric
}

// rerunOf is the one mapping from an incident's failure mode (the quality check that failed) or a
// plan check's name (a check, or a column metric the predicted symptom calls for) to what is
// re-run and which recorded metrics say what failed.
func rerunOf(name string) (rerun, error) {
	if ms, err := quality.ParseColumnMetrics([]string{name}); err == nil && len(ms) == 1 {
		return rerun{check: quality.Column, metrics: []string{string(ms[0])}, column: ms[0]}, nil
	}
	switch name {
	case "custom":
		return rerun{}, fmt.Errorf("custom assertions are not kept in the check history, so they cannot be re-run here: run run_quality_check (dw-quality) with the assertion, then resolve the incident")
	case "schema":
		return rerun{}, fmt.Errorf("a schema incident has no data check to re-run: verify the schema with dw-schema")
	}
	checks, err := quality.ParseChecks([]string{name})
	if err != nil || len(checks) != 1 {
		return rerun{}, fmt.Errorf("%q has no quality check to re-run (use a check: %s, or a column metric: %s)", name,
			strings.Join(checkNames(), ", "), strings.Join(quality.AllColumnMetrics(), ", "))
	}
	r := rerun{check: checks[0]}
	switch r.check {
	case quality.NullRate:
		r.metrics = []string{"null_rate"}
	case quality.Volume:
		r.metrics = []string{"rows_per_hour"}
	case quality.VolumeByHour:
		r.metrics = []string{"rows_in_hour"}
	case quality.Freshness:
		r.metrics = []string{"freshness_lag_seconds", "load_lag_seconds"}
	case quality.Uniqueness:
		r.metrics = []string{"duplicate_rows"}
	case quality.Column:
		r.metrics = quality.AllColumnMetrics()
	case quality.Dimension:
		r.metrics = []string{"keys_moved"}
	case quality.Reconcile:
		r.metrics = []string{"reconcile_ratio"}
	case quality.SchemaChanges:
		r.metrics = []string{"schema_changes"}
	default:
		return rerun{}, fmt.Errorf("%q has no quality check to re-run", name)
	}
	return r, nil
}

func checkNames() []string {
	var out []string
	for _, c := range quality.AllChecks {
		if c != quality.Custom {
			out = append(out, string(c))
		}
	}
	return out
}

// covers is true when re-running name measures what failure mode mode measured.
func covers(name, mode string) bool {
	a, err1 := rerunOf(name)
	b, err2 := rerunOf(mode)
	return err1 == nil && err2 == nil && a.check == b.check
}

// failingPoints are the warn and fail points of the newest run on asset with one among metrics:
// the incident's "before", and the subjects (columns, keys, upstreams) its re-run must measure.
func failingPoints(ctx context.Context, hist *quality.History, asset string, metrics []string) ([]receipts.Check, error) {
	var newest quality.RunRecord
	var found []quality.MetricRecord
	for _, metric := range metrics {
		runs, err := hist.Runs(ctx, quality.HistoryQuery{Asset: asset, Metric: metric, Limit: 200})
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if r.Asset != asset {
				continue
			}
			var bad []quality.MetricRecord
			for _, m := range r.Metrics {
				if m.Status == string(quality.Fail) || m.Status == string(quality.Warn) {
					bad = append(bad, m)
				}
			}
			if len(bad) == 0 {
				continue
			}
			switch {
			case newest.ID == 0 || r.StartedAt.After(newest.StartedAt):
				newest, found = r, bad
			case r.ID == newest.ID:
				found = append(found, bad...)
			}
			break
		}
	}
	var out []receipts.Check
	for _, m := range found {
		out = append(out, receipts.Check{At: newest.StartedAt, Asset: newest.Asset, Metric: m.Metric, Subject: m.Subject, Value: m.Value, Status: m.Status})
	}
	return out, nil
}

// requests are the quality requests that re-measure what failed: the base request (table, window,
// time column) with the check and the columns, metrics or specs the failing points name. The
// reconciliation has one request per reading of its recorded upstream (see ReconcileSpecsOf).
func (r rerun) requests(base quality.Request, before []receipts.Check, planColumns, keyColumns []string) ([][]quality.Request, error) {
	base.Checks = []quality.Check{r.check}
	var subjects, metrics []string
	for _, b := range before {
		if b.Subject != "" && !slices.Contains(subjects, b.Subject) {
			subjects = append(subjects, b.Subject)
		}
		if !slices.Contains(metrics, b.Metric) {
			metrics = append(metrics, b.Metric)
		}
	}
	one := func(q quality.Request) [][]quality.Request { return [][]quality.Request{{q}} }
	switch r.check {
	case quality.NullRate:
		base.Columns = planColumns
		if len(base.Columns) == 0 {
			base.Columns = subjects
		}
	case quality.Uniqueness:
		base.KeyColumns = keyColumns
		if len(base.KeyColumns) == 0 {
			base.KeyColumns = planColumns
		}
		if len(base.KeyColumns) == 0 && len(subjects) > 0 {
			base.KeyColumns = strings.Split(subjects[0], ",")
		}
	case quality.Column:
		base.Columns = planColumns
		if len(base.Columns) == 0 {
			base.Columns = subjects // the columns that failed, not every column of the table
		}
		if r.column != "" {
			base.ColumnMetrics = []quality.ColumnMetric{r.column}
			break
		}
		ms, err := quality.ParseColumnMetrics(metrics)
		if err != nil {
			return nil, err
		}
		base.ColumnMetrics = ms
	case quality.Dimension:
		if len(subjects) == 0 {
			return nil, fmt.Errorf("no failing dimension point is recorded, so the key to group by is unknown: run run_quality_check (dw-quality) with the dimension")
		}
		var out [][]quality.Request
		for _, s := range subjects {
			q := base
			spec := quality.DimensionSpecOf(s)
			q.Dimension = &spec
			out = append(out, []quality.Request{q})
		}
		return out, nil
	case quality.Reconcile:
		if len(subjects) == 0 {
			return nil, fmt.Errorf("no failing reconciliation point is recorded, so the upstream is unknown: run run_quality_check (dw-quality) with the reconciliation")
		}
		var out [][]quality.Request
		for _, s := range subjects {
			var alts []quality.Request
			for _, spec := range quality.ReconcileSpecsOf(s) {
				q := base
				q.Reconcile = &spec
				alts = append(alts, q)
			}
			out = append(out, alts)
		}
		return out, nil
	}
	return one(base), nil
}

// tableOf reads the table out of a warehouse URN (warehouse:<engine>/<db.schema.table>).
func tableOf(asset, engine string) (string, error) {
	rest, ok := strings.CutPrefix(asset, "warehouse:")
	eng, table, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || table == "" {
		return "", fmt.Errorf("asset %q is not a warehouse table URN (warehouse:<engine>/<table>); only warehouse checks can be re-run", asset)
	}
	if !strings.EqualFold(eng, engine) {
		return "", fmt.Errorf("asset %q is on %s but warehouse.engine is %s: point the config at the asset's warehouse", asset, eng, engine)
	}
	return table, nil
}

// checkRequest is one check to run: which table, which check, and where it came from.
type checkRequest struct {
	asset  string
	origin string
	req    quality.Request
	// alts are readings of the same check tried in turn when req's does not resolve (a recorded
	// upstream that reads as a table or as a table and a column).
	alts []quality.Request
	// supersedes is the incident asset a plan check stands in for (its history judges this check).
	supersedes string
	// hoursOnly marks a volume check added to a superseding column check only for its hour buckets
	// (a sum per hour on a new table counts the hours since its first row); its result is not reported.
	hoursOnly bool
	// firstRow is the hour of the new table's first row in the window (zero: unknown).
	firstRow time.Time
}

// notJudged is the status of a result quality could not judge (no baseline yet, no rows): it is
// reported as such and does not count as passing.
const notJudged = "not_judged"

// runChecks re-runs the incident's own failing check and its latest plan's checks over the
// window on the configured warehouse, records the runs in the check history, and returns every
// result with the receipt's before and after records. A plan check whose supersedes names the
// incident's asset replaces the incident's own check (the plan moved the data to a new table, and
// the old one keeps its bad rows). It never opens incidents.
func (s *Service) runChecks(ctx context.Context, inc incidents.Incident, opts CheckOptions) (CheckRun, error) {
	st := s.d.Store
	out := CheckRun{Checks: []Check{}, Before: []receipts.Check{}, After: []receipts.Check{}}
	plan, err := plans.Latest(ctx, st, inc.ID)
	switch {
	case errors.Is(err, plans.ErrNoPlan):
	case err != nil:
		return CheckRun{}, err
	default:
		out.PlanID = plan.ID
	}
	var superseding *plans.Check
	coversMode := false
	for i, c := range plan.Checks {
		if c.Supersedes != "" && strings.EqualFold(c.Supersedes, inc.Asset) {
			if superseding == nil {
				superseding = &plan.Checks[i]
			}
			coversMode = coversMode || covers(c.Check, inc.FailureMode)
		}
	}
	if superseding != nil {
		c := *superseding
		out.Superseded = fmt.Sprintf("the incident's own check on %s is superseded by the plan's %s check on %s (%s)", inc.Asset, c.Check, c.Asset, c.Why)
		if !coversMode {
			// Checks elsewhere that leave out what failed cannot say the failure is gone.
			out.Failing = append(out.Failing, fmt.Sprintf("the plan's checks superseding %s leave out the incident's failure mode (%s): "+
				"store a plan with a %s check on %s", inc.Asset, inc.FailureMode, inc.FailureMode, c.Asset))
		}
	}
	own, ownErr := rerunOf(inc.FailureMode)
	if superseding == nil && ownErr != nil {
		return CheckRun{}, ownErr
	}
	if s.d.Config.Warehouse == nil {
		return CheckRun{}, fmt.Errorf("warehouse is not configured: set warehouse.engine and warehouse.dsn in %s", s.d.Config.Source)
	}
	engine := s.d.Config.Warehouse.Engine
	now := s.d.Now()
	out.Window, err = quality.ParseWindow(quality.WindowSpec{Window: opts.Window, TimeZone: opts.TimeZone}, now)
	if err != nil {
		return CheckRun{}, err
	}
	hist := quality.NewHistory(st)
	defer hist.Close()
	if ownErr == nil {
		// The last run with failing points of the incident's check says what failed (columns,
		// metrics, keys, upstreams): they are the receipt's "before" and what the re-run measures.
		if out.Before, err = failingPoints(ctx, hist, inc.Asset, own.metrics); err != nil {
			return CheckRun{}, err
		}
		if out.Before == nil {
			out.Before = []receipts.Check{}
		}
	}
	var todo []checkRequest
	add := func(asset, origin, supersedes string, reqs [][]quality.Request) {
		for _, alts := range reqs {
			t := checkRequest{asset: asset, origin: origin, req: alts[0], alts: alts[1:], supersedes: supersedes}
			if supersedes != "" && t.req.Checks[0] == quality.Column {
				t.req.Checks = []quality.Check{quality.Column, quality.Volume}
				t.hoursOnly = true
			}
			todo = append(todo, t)
		}
	}
	if superseding == nil {
		table, err := tableOf(inc.Asset, engine)
		if err != nil {
			return CheckRun{}, err
		}
		reqs, err := own.requests(quality.Request{Table: table, TimestampColumn: opts.TimestampColumn, Window: out.Window}, out.Before, nil, opts.KeyColumns)
		if err != nil {
			return CheckRun{}, fmt.Errorf("re-run %s on %s: %w", inc.FailureMode, inc.Asset, err)
		}
		add(inc.Asset, "incident", "", reqs)
	}
	for i, c := range plan.Checks {
		origin := fmt.Sprintf("plan #%d check %d", plan.ID, i+1)
		kind, err := rerunOf(c.Check)
		if err != nil {
			if c.Check == string(quality.Custom) {
				return CheckRun{}, fmt.Errorf("%s on %s is a custom check, which a plan cannot carry (no assertion SQL): run it with run_quality_check (dw-quality) and store a plan without it", origin, c.Asset)
			}
			// A check this verification cannot run is not judged, so the incident is not resolved on the others.
			out.Failing = append(out.Failing, fmt.Sprintf("%s (%s of %s on %s) was not judged: %v", origin, c.Check, strings.Join(c.Columns, ", "), c.Asset, err))
			continue
		}
		table, err := tableOf(c.Asset, engine)
		if err != nil {
			return CheckRun{}, fmt.Errorf("%s: %w", origin, err)
		}
		w := out.Window
		if c.Window != "" {
			if w, err = quality.ParseWindow(quality.WindowSpec{Window: c.Window, TimeZone: opts.TimeZone}, now); err != nil {
				return CheckRun{}, fmt.Errorf("%s: %w", origin, err)
			}
		}
		// A plan check carries columns and keys, not dimension or reconciliation specs: those come
		// from the incident's failing points when the check is the incident's own kind.
		var before []receipts.Check
		if ownErr == nil && own.check == kind.check {
			before = out.Before
		}
		reqs, err := kind.requests(quality.Request{Table: table, TimestampColumn: opts.TimestampColumn, Window: w}, before, c.Columns, c.KeyColumns)
		if err != nil {
			out.Failing = append(out.Failing, fmt.Sprintf("%s (%s on %s) was not judged: %v", origin, c.Check, c.Asset, err))
			continue
		}
		supersedes := ""
		if c.Supersedes != "" && strings.EqualFold(c.Supersedes, inc.Asset) {
			supersedes = inc.Asset
		}
		add(c.Asset, origin, supersedes, reqs)
	}
	wh, err := warehouse.Connect(s.d.Config.Warehouse)
	if err != nil {
		return CheckRun{}, err
	}
	defer wh.Close()
	checker := quality.NewChecker(wh, hist, s.d.Now)
	g := graph.New(st, s.d.Now)
	for _, t := range todo {
		var before quality.RecordedSchema
		if t.req.Checks[0] == quality.SchemaChanges {
			// The change that failed is on the asset until the re-run records the columns now.
			if before, err = recordedSchema(ctx, g, t.asset); err != nil {
				return CheckRun{}, err
			}
		}
		rep, err := checker.Run(ctx, t.req)
		for len(t.alts) > 0 && err != nil {
			t.req, t.alts = t.alts[0], t.alts[1:]
			rep, err = checker.Run(ctx, t.req)
		}
		if errors.Is(err, warehouse.ErrNoSuchTable) {
			// A table the plan's corrected statement has not created yet: not judged, so the
			// incident stays open, and the other checks still run.
			out.Failing = append(out.Failing, fmt.Sprintf("%s (%s on %s) was not judged: %v", t.origin, t.req.Checks[0], t.asset, err))
			continue
		}
		if err != nil {
			return CheckRun{}, fmt.Errorf("re-run %s (%s) on %s: %w", t.req.Checks[0], t.origin, t.req.Table, err)
		}
		out.RunIDs = append(out.RunIDs, rep.RunID)
		results := rep.Results
		if t.hoursOnly {
			results = nil
			for _, r := range rep.Results {
				if r.Check == string(quality.Volume) {
					t.firstRow = firstRowHour(r, t.req.Window)
					continue
				}
				results = append(results, r)
			}
		}
		if t.req.Checks[0] == quality.SchemaChanges && slices.ContainsFunc(before.Changes, quality.ColumnChange.Harmful) {
			now, err := recordedSchema(ctx, g, t.asset)
			if err != nil {
				return CheckRun{}, err
			}
			results = schemaVerdicts(before, now.Columns)
		}
		for _, r := range results {
			value, status, why, err := judge(ctx, hist, t, r, now)
			if err != nil {
				return CheckRun{}, err
			}
			out.Checks = append(out.Checks, Check{Asset: rep.Asset, Origin: t.origin, Check: r.Check, Metric: r.Metric, Subject: r.Subject,
				Value: value, Status: status, Why: why})
			out.After = append(out.After, receipts.Check{At: now, Asset: rep.Asset, Metric: r.Metric, Subject: r.Subject, Value: value, Status: status, Why: why})
			if status != string(quality.Pass) {
				name := r.Metric
				if r.Subject != "" {
					name += " (" + r.Subject + ")"
				}
				out.Failing = append(out.Failing, fmt.Sprintf("%s on %s %s: %s", name, rep.Asset, status, why))
			}
		}
		if len(results) == 0 {
			out.Failing = append(out.Failing, fmt.Sprintf("the re-run of %s (%s) on %s produced no result", t.req.Checks[0], t.origin, rep.Asset))
		}
	}
	return out, nil
}

// transferable are the metrics a superseding check judges against the superseded asset's history,
// and whether a value below that asset's expected range is also bad (fewer rows, a smaller sum or
// mean: values lost or divided) or fine (fewer nulls, zeros, negatives or empty strings, fresher data).
var transferable = map[string]bool{
	"null_rate": false, "rows_per_hour": true, "freshness_lag_seconds": false, "load_lag_seconds": false,
	string(quality.ZeroRate): false, string(quality.NegativeRate): false, string(quality.EmptyRate): false,
	string(quality.SumPerHour): true, string(quality.Mean): true,
}

// judge is a result's status for the incident. A superseding check on a new table is judged against
// the superseded asset's expected range where that asset has one: the new table has no history of
// its own, and the old table's history is what the data should look like (0% nulls before the
// incident stays the bar for the -v2 table). Otherwise quality's verdict stands, except that a
// result with neither a baseline nor a rule ("0 earlier checks, 5 needed", no rows to measure) was
// not judged and does not count as passing.
func judge(ctx context.Context, hist *quality.History, t checkRequest, r quality.Result, now time.Time) (value float64, status, why string, err error) {
	if lowIsBad, ok := transferable[r.Metric]; ok && t.supersedes != "" {
		lo, hi, found, err := expectedRange(ctx, hist, t.supersedes, r)
		if err != nil {
			return 0, "", "", err
		}
		if found {
			v, what := r.Value, fmtValue(r.Metric, r.Value)
			if r.Metric == "rows_per_hour" && r.Rows != nil {
				// A new table's rows start when the corrected job started writing: its rate counts
				// the hours since its first row in the window, not the whole window.
				v = round3(rateSinceFirstRow(r, t.req.Window, now))
				what = fmt.Sprintf("%s since its first row in the window", fmtValue(r.Metric, v))
			}
			if r.Metric == string(quality.SumPerHour) && !t.firstRow.IsZero() {
				// The same for a sum per hour: the window's sum over the hours the new table has rows.
				w := t.req.Window
				v = round3(r.Value * w.Hours(now) / quality.Window{Since: t.firstRow, Until: w.Until}.Hours(now))
				what = fmt.Sprintf("%s since its first row in the window", fmtValue(r.Metric, v))
			}
			status = string(quality.Pass)
			if v > hi || lowIsBad && v < lo {
				status = string(quality.Fail)
			}
			bar := fmt.Sprintf("up to %s", fmtValue(r.Metric, hi))
			if lowIsBad {
				bar = fmt.Sprintf("%s to %s", fmtValue(r.Metric, lo), fmtValue(r.Metric, hi))
			}
			return v, status, fmt.Sprintf("%s against %s expected on %s, the table it supersedes (its history is the bar for the new table)",
				what, bar, t.supersedes), nil
		}
	}
	if r.Status == quality.Pass && r.Baseline == nil && r.ExpectedLow == nil && r.ExpectedHigh == nil {
		return r.Value, notJudged, r.Why + " — not judged, so it does not count as passing", nil
	}
	return r.Value, string(r.Status), r.Why, nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// expectedRange is the newest expected range recorded for the result's metric on asset (the same
// subject; for freshness any, since the event-time column may be named differently).
func expectedRange(ctx context.Context, hist *quality.History, asset string, r quality.Result) (lo, hi float64, found bool, err error) {
	q := quality.HistoryQuery{Asset: asset, Metric: r.Metric, Subject: r.Subject, Limit: 50}
	if r.Metric == "freshness_lag_seconds" {
		q.Subject = ""
	}
	runs, err := hist.Runs(ctx, q)
	if err != nil {
		return 0, 0, false, fmt.Errorf("read the history of %s on %s: %w", r.Metric, asset, err)
	}
	for _, run := range runs {
		if !strings.EqualFold(run.Asset, asset) {
			continue
		}
		for _, m := range run.Metrics {
			if m.ExpectedLow != nil && m.ExpectedHigh != nil && m.Baseline != nil {
				return *m.ExpectedLow, *m.ExpectedHigh, true, nil
			}
		}
	}
	return 0, 0, false, nil
}

// rateSinceFirstRow is a volume result's rows per hour counted from the hour of its first row in the
// window (or the window's start, if later) to now.
func rateSinceFirstRow(r quality.Result, w quality.Window, now time.Time) float64 {
	return float64(*r.Rows) / quality.Window{Since: firstRowHour(r, w), Until: w.Until}.Hours(now)
}

// firstRowHour is the hour of a volume result's first row in the window, or the window's start if later.
func firstRowHour(r quality.Result, w quality.Window) time.Time {
	var first time.Time
	for _, h := range r.Hours {
		if h.Rows > 0 && (first.IsZero() || h.Hour.Before(first)) {
			first = h.Hour
		}
	}
	if first.After(w.Since) {
		return first
	}
	return w.Since
}

func fmtValue(metric string, v float64) string {
	switch metric {
	case "null_rate":
		return strconv.FormatFloat(100*v, 'g', 4, 64) + "% null"
	case string(quality.ZeroRate):
		return strconv.FormatFloat(100*v, 'g', 4, 64) + "% zeros"
	case string(quality.NegativeRate):
		return strconv.FormatFloat(100*v, 'g', 4, 64) + "% negative"
	case string(quality.EmptyRate):
		return strconv.FormatFloat(100*v, 'g', 4, 64) + "% empty"
	case string(quality.SumPerHour):
		return strconv.FormatFloat(v, 'g', 6, 64) + " per hour"
	case "load_lag_seconds":
		return time.Duration(v*float64(time.Second)).Round(time.Second).String() + " load lag"
	case "rows_per_hour":
		return strconv.FormatFloat(v, 'f', 1, 64) + " rows/hour"
	case "freshness_lag_seconds":
		return time.Duration(v*float64(time.Second)).Round(time.Second).String() + " behind"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// recordedSchema is what the schema check keeps on asset (nothing when it never ran there).
func recordedSchema(ctx context.Context, g *graph.Graph, asset string) (quality.RecordedSchema, error) {
	a, err := g.Get(ctx, graph.URN(asset))
	var nf *graph.NotFoundError
	if errors.As(err, &nf) {
		return quality.RecordedSchema{}, nil
	}
	if err != nil {
		return quality.RecordedSchema{}, fmt.Errorf("read the schema snapshot of %s: %w", asset, err)
	}
	rs, err := quality.ReadRecordedSchema(a.Attrs)
	if err != nil {
		return quality.RecordedSchema{}, fmt.Errorf("schema snapshot of %s: %w", asset, err)
	}
	return rs, nil
}

// schemaVerdicts judge a warehouse schema incident by its change, not by what changed since the
// last run (a re-run right after the break sees no change and would pass): each column removed,
// retyped or made nullable passes once the columns now have reverted it.
func schemaVerdicts(before quality.RecordedSchema, cols []quality.SchemaColumn) []quality.Result {
	var out []quality.Result
	zero := 0.0
	for _, ch := range before.Changes {
		if !ch.Harmful() {
			continue
		}
		r := quality.Result{Check: string(quality.SchemaChanges), Metric: "schema_changes", Subject: ch.Column, Unit: "changes",
			ExpectedLow: &zero, ExpectedHigh: &zero, Status: quality.Pass, SQL: "-- no query: the columns the warehouse catalog reports"}
		when := ""
		if !before.ChangedAt.IsZero() {
			when = " at " + before.ChangedAt.UTC().Format(time.RFC3339)
		}
		if ch.Undone(cols) {
			r.Why = fmt.Sprintf("%s%s; it is reverted now", ch.Describe(), when)
		} else {
			r.Value, r.Status = 1, quality.Fail
			r.Why = fmt.Sprintf("%s%s; the table still has it that way", ch.Describe(), when)
		}
		out = append(out, r)
	}
	return out
}
