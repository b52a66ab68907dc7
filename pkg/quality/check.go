package quality

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// Check names one kind of check.
type Check string

// The checks run_quality_check knows.
const (
	NullRate   Check = "null_rate"
	Volume     Check = "volume"
	Uniqueness Check = "uniqueness"
	Freshness  Check = "freshness"
	Custom     Check = "custom"
	// VolumeByHour judges the window's last complete hour against the same hour of day.
	VolumeByHour Check = "volume_by_hour"
	// Column measures the column metrics (zeros, negatives, min, max, mean, sum, spread, distinct,
	// empty strings, lengths, true share) in the same pass as volume and null counts.
	Column Check = "column"
	// Dimension tracks rows or a sum per key value against each key's own history.
	Dimension Check = "dimension"
	// Reconcile compares a model's rows or sum with its upstream table's over the same window.
	Reconcile Check = "reconciliation"
	// SchemaChanges reports columns added, removed, retyped or made nullable since the last run
	// (named apart from the registry-side "schema" incidents dw-schema raises).
	SchemaChanges Check = "schema_changes"
)

// AllChecks in the order results are reported.
var AllChecks = []Check{SchemaChanges, Volume, VolumeByHour, Freshness, NullRate, Column, Dimension, Reconcile, Uniqueness, Custom}

// DefaultChecks run when a request names none: the column metrics are chosen per table, so they
// run only when asked for.
var DefaultChecks = []Check{Volume, Freshness, NullRate, Uniqueness, Custom}

// ParseChecks validates check names; empty means all.
func ParseChecks(names []string) ([]Check, error) {
	if len(names) == 0 {
		return DefaultChecks, nil
	}
	var out []Check
	for _, n := range names {
		c := Check(strings.ToLower(strings.TrimSpace(n)))
		if !slices.Contains(AllChecks, c) {
			return nil, fmt.Errorf("check %q is unknown; use %s", n, checkNames())
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func checkNames() string {
	var s []string
	for _, c := range AllChecks {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

// Assertion is a custom SQL rule: a query selecting the rows that violate it. It passes when the
// query returns no rows. {{window_start}} and {{window_end}} are replaced by bound values.
type Assertion struct {
	Name string `json:"name" jsonschema:"Short name, e.g. egress_not_negative"`
	SQL  string `json:"sql" jsonschema:"SELECT returning the violating rows, e.g. SELECT * FROM orders WHERE amount_cents < 0"`
}

// Request is one run of checks on one table.
type Request struct {
	Table           string
	TimestampColumn string
	Window          Window
	Checks          []Check
	// Columns limits the null-rate and column checks (default: every column).
	Columns []string
	// ColumnMetrics limits the column check's metrics (default: every metric each column's type
	// allows, distinct excepted).
	ColumnMetrics []ColumnMetric
	// Thresholds are fixed limits judged instead of the history baseline.
	Thresholds []Threshold
	// Dimension is the key the dimension check groups by.
	Dimension *DimensionSpec
	// Reconcile names the upstream the reconciliation check compares the table with.
	Reconcile *ReconcileSpec
	// KeyColumns is the key whose uniqueness is checked (one key, possibly composite).
	KeyColumns []string
	Assertions []Assertion
	// MaxFreshnessLag, when set, fails freshness beyond it whatever the history says.
	MaxFreshnessLag time.Duration
	// LoadTimestampColumn is the column recording when each row was loaded (e.g. _loaded_at):
	// the freshness check then measures load lag apart from event freshness.
	LoadTimestampColumn string
	// MaxLoadLag, when set, fails load lag beyond it whatever the history says.
	MaxLoadLag time.Duration
	// Monitor is the config monitor this run belongs to ("" for ad-hoc runs).
	Monitor string
	// OpenIncidents decides, given the table's asset URN, whether failures open (or join) an
	// incident per failing check kind; nil never opens one. Callers decide from the domain's
	// autonomy or an explicit request.
	OpenIncidents func(asset string) bool
	// Progress, when set, is told after each warehouse query.
	Progress func(done, total int, message string)
}

// Result is one metric's verdict.
type Result struct {
	Check   string  `json:"check"`
	Metric  string  `json:"metric" jsonschema:"null_rate, rows_per_hour, rows_in_hour, freshness_lag_seconds, load_lag_seconds, a column metric (zero_rate, sum_per_hour, mean …), keys_moved, reconcile_ratio, schema_changes, duplicate_rows or violating_rows"`
	Subject string  `json:"subject,omitempty" jsonschema:"The column, key, hour of day, upstream or assertion the metric is about"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit" jsonschema:"ratio, rows/hour, rows, seconds, keys, changes, characters, values or per hour"`
	// Baseline is what earlier runs say; nil when the metric is a rule (duplicates, custom SQL,
	// NOT NULL) or history is still too short.
	Baseline     *Baseline `json:"baseline,omitempty"`
	ExpectedLow  *float64  `json:"expected_low,omitempty"`
	ExpectedHigh *float64  `json:"expected_high,omitempty"`
	Status       Status    `json:"status" jsonschema:"pass, warn or fail"`
	Why          string    `json:"why" jsonschema:"One sentence: the value against its baseline or rule"`
	SQL          string    `json:"sql" jsonschema:"The query that measured it (or the constraint that made a query unnecessary)"`
	// Sample holds up to warehouse.max_sample_rows offending rows for a warn or fail.
	Sample    *warehouse.Rows `json:"sample,omitempty"`
	SampleSQL string          `json:"sample_sql,omitempty"`
	// Volume details.
	Rows       *int64      `json:"rows,omitempty"`
	Hours      []HourCount `json:"hours,omitempty" jsonschema:"Rows per hour bucket (newest 168 at most)"`
	EmptyHours *int        `json:"empty_hours,omitempty" jsonschema:"Complete hours inside the window without a row"`
	// Freshness detail.
	Newest *time.Time `json:"newest,omitempty"`
	// Keys are a dimension check's moved keys, largest deviation first.
	Keys []KeyMove `json:"keys,omitempty"`
	// Changes are a schema check's column changes.
	Changes []ColumnChange `json:"changes,omitempty"`

	recorded bool
	extra    []extraPoint // recorded with the result, not shown (a dimension's per-key points)
}

// HourCount is one hour bucket of a volume check.
type HourCount struct {
	Hour time.Time `json:"hour"`
	Rows int64     `json:"rows"`
}

// Report is the answer of a run.
type Report struct {
	Table           string        `json:"table"`
	Asset           string        `json:"asset" jsonschema:"The table's URN in the context graph"`
	Engine          string        `json:"engine"`
	TimestampColumn string        `json:"timestamp_column,omitempty"`
	Window          Window        `json:"window"`
	Status          Status        `json:"status" jsonschema:"The worst result: pass, warn or fail"`
	Failed          bool          `json:"failed" jsonschema:"true when any check failed (makes dw-quality call exit 100)"`
	Summary         string        `json:"summary"`
	Results         []Result      `json:"results"`
	Queries         int           `json:"queries" jsonschema:"Warehouse queries this run sent (constraints answer some checks without one)"`
	RunID           int64         `json:"run_id"`
	Incidents       []IncidentRef `json:"incidents,omitempty"`
	DurationMS      float64       `json:"duration_ms"`

	baselines *baselineReads // the run's prefetched history reads, while it runs
	// recordedBehind says the run's record was queued to be written after the answer.
	recordedBehind bool
}

// Checker runs checks against one warehouse and records them in the history.
type Checker struct {
	wh   *warehouse.DB
	hist *History
	now  func() time.Time
	// prefetch reads a run's baselines while its warehouse statements run (prefetchBaselines);
	// baselineMisses counts the baselines a run asked for that its plan had not listed.
	prefetch       bool
	baselineMisses *atomic.Int64
}

// NewChecker builds a checker; now is the clock every decision uses.
func NewChecker(wh *warehouse.DB, hist *History, now func() time.Time) *Checker {
	if now == nil {
		now = time.Now
	}
	return &Checker{wh: wh, hist: hist, now: now, prefetch: true, baselineMisses: &atomic.Int64{}}
}

// AssetURN names a resolved warehouse table the way the context graph does:
// warehouse:<engine>/<database.schema.table> (SQLite has no database part).
func AssetURN(engine warehouse.Engine, t warehouse.Table) string {
	var parts []string
	for _, p := range []string{t.Database, t.Schema, t.Name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return "warehouse:" + string(engine) + "/" + strings.Join(parts, ".")
}

// Run resolves the table, runs the checks in as few warehouse queries as the engine does best,
// judges each metric against its baseline and records the run.
func (c *Checker) Run(ctx context.Context, req Request) (*Report, error) {
	rep, err := c.runOnce(ctx, req, true)
	if errors.Is(err, warehouse.ErrCatalogChanged) {
		// The table changed since it was described: plan and measure again from a fresh
		// description, in a new snapshot. Nothing of the first attempt was reported or recorded.
		return c.runOnce(ctx, req, false)
	}
	return rep, err
}

// runOnce is one attempt of Run. ahead serves a cached description of the table without waiting
// for its change marker (warehouse.Snapshot.ResolveAhead): the marker is read beside the run's
// later statements, and the attempt fails with ErrCatalogChanged, before anything is reported
// or recorded, when it moved.
func (c *Checker) runOnce(ctx context.Context, req Request, ahead bool) (*Report, error) {
	started := c.now()
	checks := req.Checks
	if len(checks) == 0 {
		checks = DefaultChecks
	}
	if err := ValidateThresholds(req.Thresholds); err != nil {
		return nil, err
	}
	// One read-only snapshot for the whole run: the catalog's change marker, the timestamp's
	// layout and every metric are read on the same state of the table, and the run pays for one
	// transaction (on PostgreSQL the cached resolve alone was a BEGIN, a query and a COMMIT).
	// A snapshot that cannot begin fails the run before the table is known, as a failed resolve
	// does: nothing is recorded (resolving it on the handle only to record the failure would make
	// an unreachable warehouse wait out its timeout twice).
	snap, err := c.wh.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin a read-only snapshot of the warehouse: %w", err)
	}
	closed := make(chan struct{})
	closeSnap := sync.OnceFunc(func() {
		// Nothing was written, so a failed rollback loses nothing (database/sql drops the
		// connection). It runs beside the history write, and the run waits for it, unless the
		// record is written behind the answer: that write waits for the rollback instead.
		go func() { _ = snap.Close(); close(closed) }()
	})
	awaitRollback := true
	defer func() {
		closeSnap()
		if awaitRollback {
			<-closed
		}
	}()
	resolve := snap.Resolve
	if ahead {
		resolve = snap.ResolveAhead
	}
	ti, err := resolve(ctx, req.Table)
	if err != nil {
		return nil, err
	}
	// verified says whether what was served ahead still described the table when the snapshot
	// was taken; every path that reports or records anything asks it first.
	verified := func(err error) error {
		if verr := snap.Verify(ctx); verr != nil {
			return verr
		}
		return err
	}
	d := c.wh.Dialect
	rep := &Report{
		Table: ti.Ref().String(), Asset: AssetURN(d.Engine, ti.Table), Engine: string(d.Engine),
		Window: req.Window, Results: []Result{},
	}
	p, err := c.plan(ctx, snap, ti, req, checks, started)
	if err != nil {
		return nil, verified(err)
	}
	rep.TimestampColumn = p.tsName
	// The run's baseline series are listed from the plan and the store reads them while the
	// warehouse runs the statements; each result waits for (or reads) its own series after them.
	rep.baselines = c.prefetchBaselines(ctx, rep.Asset, p.baselineKeys(req, rep.Window, started), started)
	if c.hist != nil && c.hist.behind {
		c.hist.reserveRunIDs(ctx) // beside the statements, for a record written behind the answer
	}
	p.stmts = snap
	err = verified(c.execute(ctx, p, req, rep, started))
	closeSnap()
	rep.baselines.stop()
	rep.baselines = nil
	if errors.Is(err, warehouse.ErrCatalogChanged) {
		return nil, err
	}
	if err != nil {
		if c.hist != nil {
			_ = c.hist.recordError(context.WithoutCancel(ctx), rep.Asset, req.Monitor, started, c.now(), req.Window, err)
		}
		return nil, err
	}
	// A record written behind the answer starts once the snapshot has rolled back (beside it, the
	// write would take a core from the rollback's round trip), and the run answers without
	// waiting for either.
	rep, err = c.finish(ctx, req, rep, started, closed)
	awaitRollback = rep == nil || !rep.recordedBehind
	return rep, err
}

// execute runs the plan's queries and turns their answers into results.
func (c *Checker) execute(ctx context.Context, p *plan, req Request, rep *Report, now time.Time) error {
	total := p.queryCount()
	done := 0
	step := func(msg string) {
		done++
		rep.Queries++
		total = max(total, done)
		if req.Progress != nil {
			req.Progress(done, total, msg)
		}
	}
	if p.has(SchemaChanges) {
		r, err := c.schemaResult(ctx, p.ti, rep, now)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	var prof profile
	if p.profile != nil {
		if err := c.runProfile(ctx, p, &prof); err != nil {
			return fmt.Errorf("profile %s: %w", rep.Table, err)
		}
		step("volume, null counts, column metrics and newest timestamp")
	}
	if p.hourly != nil {
		if err := c.runHourly(ctx, p, &prof); err != nil {
			return fmt.Errorf("profile %s: %w", rep.Table, err)
		}
		step("rows per hour from the index on " + p.tsName)
	}
	if p.has(Volume) {
		r, err := c.volumeResult(ctx, p, &prof, rep, now)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	if p.has(VolumeByHour) {
		r, ok, err := c.hourOfDayResult(ctx, p, &prof, rep, now)
		if err != nil {
			return err
		}
		if ok {
			rep.Results = append(rep.Results, r)
		}
	}
	if p.has(Freshness) {
		newest := prof.newest
		sqlText := p.profileSQL()
		if p.probe != nil {
			newest, sqlText = p.probe.newest, p.probe.sql
			step("freshness, from the timestamp's range read while planning")
		} else if !p.freshFromProfile || newest == nil {
			var raw any
			if err := p.stmts.QueryRow(ctx, p.fresh.sql, p.fresh.args, &raw); err != nil {
				return fmt.Errorf("freshness of %s: %w", rep.Table, err)
			}
			step("freshness")
			newest = nil
			if raw != nil {
				t, ok := warehouse.ParseTime(raw)
				if !ok {
					return fmt.Errorf("%w: freshness of %s: column %s holds %v, not a timestamp", warehouse.ErrTypeMismatch, rep.Table, p.tsName, raw)
				}
				newest = &t
			}
			sqlText = p.fresh.sql
		}
		r, err := c.freshnessResult(ctx, p, newest, sqlText, rep, req, now)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
		if p.loadQ != nil {
			fresh := &rep.Results[len(rep.Results)-1]
			lr, err := c.loadResult(ctx, p, fresh, rep, req, now, step)
			if err != nil {
				return err
			}
			rep.Results = append(rep.Results, lr)
		}
	}
	if p.has(NullRate) {
		for _, col := range p.nullCols {
			r, err := c.nullResult(ctx, p, col, &prof, rep, req, now)
			if err != nil {
				return err
			}
			rep.Results = append(rep.Results, r)
		}
	}
	if p.has(Column) {
		if p.distinct != nil {
			if err := c.runDistinct(ctx, p, &prof); err != nil {
				return fmt.Errorf("distinct counts of %s: %w", rep.Table, err)
			}
			step("distinct counts")
		}
		for i, mc := range p.metricCols {
			for _, m := range mc.metrics {
				r, err := c.columnResult(ctx, p, mc, m, &prof.cols[i], rep, req, now)
				if err != nil {
					return err
				}
				rep.Results = append(rep.Results, r)
			}
		}
	}
	if p.has(Dimension) && p.dim != nil {
		r, err := c.dimensionResult(ctx, p, rep, now, step)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	if p.has(Reconcile) && p.recon != nil {
		r, err := c.reconcileResult(ctx, p, &prof, rep, now, step)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	if p.has(Uniqueness) && p.dup != nil {
		r, err := c.uniquenessResult(ctx, p, &prof, rep, step)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	if p.has(Custom) {
		for _, a := range p.custom {
			var n int64
			if err := c.wh.QueryRow(ctx, a.count.sql, a.count.args, &n); err != nil {
				return fmt.Errorf("assertion %s: %w", a.name, err)
			}
			step("assertion " + a.name)
			r := Result{Check: string(Custom), Metric: "violating_rows", Subject: a.name, Value: float64(n), Unit: "rows",
				SQL: a.count.sql, Status: Pass, recorded: true, ExpectedLow: ptr(0.0), ExpectedHigh: ptr(0.0)}
			if n > 0 {
				r.Status = Fail
				r.Why = fmt.Sprintf("%s %s %s", countRows(n), plural(n, "violates", "violate"), a.name+" "+rep.Window.Label)
				if err := c.sample(ctx, &r, a.sample); err != nil {
					return err
				}
			} else {
				r.Why = "no rows violate " + a.name + " " + rep.Window.Label
			}
			rep.Results = append(rep.Results, r)
		}
	}
	return nil
}

// profile is what the one-pass scan measured.
type profile struct {
	rows    int64
	nonNull []int64
	newest  *time.Time
	hours   []HourCount
	cols    []colAcc // per plan.metricCols
	// reconSum is the model's sum for the reconciliation check.
	reconSum float64
}

func (c *Checker) runProfile(ctx context.Context, p *plan, prof *profile) error {
	prof.nonNull = make([]int64, len(p.scanCols))
	prof.cols = make([]colAcc, len(p.metricCols))
	rows, err := p.stmts.QueryAll(ctx, p.profile.sql, p.profile.args, maxHourBuckets+1)
	if err != nil {
		return err
	}
	if len(rows.Rows) > maxHourBuckets {
		return fmt.Errorf("the window spans more than %d hours with data: narrow it (since/until or window)", maxHourBuckets)
	}
	// Each row: hour_bucket, count(*), count(col) per scanned column, then max(ts) when freshness
	// asked for it and the column metrics' aggregates.
	for _, r := range rows.Rows {
		n := warehouse.Int(r[1])
		prof.rows += n
		for i := range p.scanCols {
			prof.nonNull[i] += warehouse.Int(r[2+i])
		}
		if p.newestAt > 0 && r[p.newestAt] != nil {
			v := r[p.newestAt]
			t, ok := warehouse.ParseTime(v)
			if !ok {
				return fmt.Errorf("%w: column %s holds %v, not a timestamp", warehouse.ErrTypeMismatch, p.tsName, v)
			}
			if prof.newest == nil || t.After(*prof.newest) {
				prof.newest = &t
			}
		}
		if t, ok := warehouse.ParseTime(r[0]); ok {
			prof.hours = append(prof.hours, HourCount{Hour: t, Rows: n})
		}
		for i, mc := range p.metricCols {
			for agg, at := range mc.terms {
				prof.cols[i].add(agg, r[at])
			}
		}
		if p.recon != nil && p.recon.sumAt > 0 && r[p.recon.sumAt] != nil {
			prof.reconSum += anyFloat(r[p.recon.sumAt])
		}
	}
	slices.SortFunc(prof.hours, func(a, b HourCount) int { return a.Hour.Compare(b.Hour) })
	return nil
}

// runHourly reads the rows per hour from the range counts (one row per hour with rows).
func (c *Checker) runHourly(ctx context.Context, p *plan, prof *profile) error {
	rows, err := p.stmts.QueryAll(ctx, p.hourly.sql, p.hourly.args, maxHourBuckets+1)
	if err != nil {
		return fmt.Errorf("hourly counts: %w", err)
	}
	if len(rows.Rows) > maxHourBuckets {
		return fmt.Errorf("the window spans more than %d hours with data: narrow it (since/until or window)", maxHourBuckets)
	}
	for _, r := range rows.Rows {
		t, ok := warehouse.ParseTime(r[0])
		if !ok {
			return fmt.Errorf("%w: hour bucket %v of column %s is not a time", warehouse.ErrTypeMismatch, r[0], p.tsName)
		}
		prof.hours = append(prof.hours, HourCount{Hour: t, Rows: warehouse.Int(r[1])})
	}
	slices.SortFunc(prof.hours, func(a, b HourCount) int { return a.Hour.Compare(b.Hour) })
	return nil
}

// maxHourBuckets bounds the grouped scan's answer (about 11 years of hours).
const maxHourBuckets = 100000

// Policies per metric: null rates only alarm upwards and tolerate one percentage point of drift;
// volume alarms both ways beyond 20 %; freshness alarms when later, with five minutes of slack.
var (
	nullPolicy   = Policy{MinPoints: 5, MaxPoints: 60, WarnZ: 3, FailZ: 5, AbsFloor: 0.01, Direction: UpIsBad}
	volumePolicy = Policy{MinPoints: 5, MaxPoints: 60, WarnZ: 3, FailZ: 5, AbsFloor: 1, RelFloor: 0.2, Direction: Both}
	lagPolicy    = Policy{MinPoints: 5, MaxPoints: 60, WarnZ: 3, FailZ: 5, AbsFloor: 300, RelFloor: 0.5, Direction: UpIsBad}
)

// baselineDepth is how many earlier points of a series a baseline reads (eight weeks of hourly runs).
const baselineDepth = 24 * 7 * 8

// lastCompleteHour is the start of the window's last hour that has ended by now, and whether that
// hour lies inside the window.
func lastCompleteHour(w Window, now time.Time) (time.Time, bool) {
	end := w.Until
	if now.Before(end) {
		end = now
	}
	start := end.Truncate(time.Hour).Add(-time.Hour)
	return start, !start.Before(w.Since)
}

// baseline judges what the history says about one series of the run's asset at `at` (prefetched
// by the run when its plan listed the series).
func (c *Checker) baseline(ctx context.Context, rep *Report, metric, subject string, at time.Time, pol Policy) (Baseline, bool, error) {
	if c.hist == nil {
		return Baseline{}, false, nil
	}
	bySubject, err := c.seriesPoints(ctx, rep, singleSeries(metric, subject), at)
	if err != nil {
		// An unreadable history fails the run (never a silent pass without a baseline).
		return Baseline{}, false, fmt.Errorf("baseline of %s %s: %w", metric, subject, err)
	}
	b, ok := ComputeBaseline(bySubject[subject], at, rep.Window.Location(), pol)
	return b, ok, nil
}

func (c *Checker) volumeResult(ctx context.Context, p *plan, prof *profile, rep *Report, now time.Time) (Result, error) {
	hours := rep.Window.Hours(now)
	rate := float64(prof.rows) / hours
	rows := prof.rows
	r := Result{Check: string(Volume), Metric: "rows_per_hour", Value: round(rate, 4), Unit: "rows/hour", SQL: p.volumeSQL(), Rows: &rows, recorded: true, Status: Pass}
	r.Hours = prof.hours
	if len(r.Hours) > 168 {
		r.Hours = r.Hours[len(r.Hours)-168:]
	}
	empty := emptyHours(prof.hours, rep.Window, now)
	r.EmptyHours = &empty
	head := fmt.Sprintf("%s %s (%s per hour)", countRows(prof.rows), rep.Window.Label, num(rate))
	b, ok, err := c.baseline(ctx, rep, r.Metric, "", now, volumePolicy)
	switch {
	case err != nil:
		return r, err
	case !ok:
		r.Why = head + "; " + tooFew(b.Points, volumePolicy.MinPoints)
		if prof.rows == 0 {
			r.Status, r.Why = Warn, "no rows "+rep.Window.Label+"; "+tooFew(b.Points, volumePolicy.MinPoints)
		}
	default:
		r.setBaseline(b, 0, math.Inf(1))
		r.Status = b.Judge(rate, volumePolicy.Direction)
		if prof.rows == 0 && b.Median > 0 {
			r.Status = Fail
		}
		r.Why = head + " against " + describe(*r.Baseline, num, " per hour")
	}
	if empty > 0 {
		r.Why += fmt.Sprintf("; %d complete %s without rows", empty, plural(int64(empty), "hour", "hours"))
	}
	return r, nil
}

// hourOfDayResult judges the window's last complete hour against the same local hour of day in
// earlier runs (its own series per hour of day): a pipeline that loses its 02:00 batch every night
// hides inside a daily total, and a quiet night hour must not look like an outage at noon.
func (c *Checker) hourOfDayResult(ctx context.Context, p *plan, prof *profile, rep *Report, now time.Time) (Result, bool, error) {
	start, local, ok := p.hourOfDay(rep.Window, now)
	if !ok {
		return Result{}, false, nil
	}
	var rows int64
	for _, h := range prof.hours {
		if h.Hour.Equal(start) {
			rows = h.Rows
		}
	}
	r := Result{Check: string(VolumeByHour), Metric: "rows_in_hour", Subject: local, Value: float64(rows), Unit: "rows", SQL: p.volumeSQL(), Rows: &rows, recorded: true, Status: Pass}
	head := fmt.Sprintf("%s in the %s hour", countRows(rows), local)
	b, ok, err := c.baseline(ctx, rep, r.Metric, r.Subject, now, volumePolicy)
	switch {
	case err != nil:
		return r, false, err
	case !ok:
		r.Why = head + "; " + tooFew(b.Points, volumePolicy.MinPoints)
	default:
		r.setBaseline(b, 0, math.Inf(1))
		r.Status = b.Judge(float64(rows), volumePolicy.Direction)
		if rows == 0 && b.Median > 0 {
			r.Status = Fail
		}
		r.Why = head + " against " + describe(*r.Baseline, num, "") + " of that hour"
	}
	return r, true, nil
}

// hourOfDay is the hour the hour-of-day check judges (the window's last complete hour) and its
// series' subject, the local hour of day ("14:00"); ok is false when the window holds no complete
// hour or the column holds whole days.
func (p *plan) hourOfDay(w Window, now time.Time) (start time.Time, subject string, ok bool) {
	start, inside := lastCompleteHour(w, now)
	if !inside || p.d.IsDateColumn(p.tf, p.tsType) {
		return time.Time{}, "", false
	}
	return start, start.In(w.Location()).Format("15:04"), true
}

// emptyHours counts complete hours inside the window (and before now) with no row.
func emptyHours(hours []HourCount, w Window, now time.Time) int {
	end := w.Until
	if now.Before(end) {
		end = now
	}
	first := w.Since.Truncate(time.Hour)
	if first.Before(w.Since) {
		first = first.Add(time.Hour)
	}
	last := end.Truncate(time.Hour) // the hour containing end is incomplete
	n := int(last.Sub(first) / time.Hour)
	if n <= 0 || n > maxHourBuckets {
		return 0
	}
	seen := 0
	for _, h := range hours {
		if !h.Hour.Before(first) && h.Hour.Before(last) && h.Rows > 0 {
			seen++
		}
	}
	return n - seen
}

func (c *Checker) freshnessResult(ctx context.Context, p *plan, newest *time.Time, sqlText string, rep *Report, req Request, now time.Time) (Result, error) {
	return c.lagResult(ctx, "freshness_lag_seconds", p.tsName, newest, sqlText, rep, req.MaxFreshnessLag, now)
}

// lagResult judges how old the newest value of a time column is: the event time (freshness) or
// the load time (load lag).
func (c *Checker) lagResult(ctx context.Context, metric, column string, newest *time.Time, sqlText string, rep *Report, limit time.Duration, now time.Time) (Result, error) {
	r := Result{Check: string(Freshness), Metric: metric, Subject: column, Unit: "seconds", SQL: sqlText, Status: Pass}
	if newest == nil {
		r.Status, r.Why = Fail, "the table has no "+column+" at all"
		return r, nil
	}
	r.Newest = newest
	lag := now.Sub(*newest).Seconds()
	if lag < 0 {
		lag = 0
	}
	r.Value, r.recorded = round(lag, 3), true
	head := fmt.Sprintf("newest %s is %s old", column, dur(lag))
	b, ok, err := c.baseline(ctx, rep, r.Metric, r.Subject, now, lagPolicy)
	switch {
	case err != nil:
		return r, err
	case !ok:
		r.Why = head + "; " + tooFew(b.Points, lagPolicy.MinPoints)
	default:
		r.setBaseline(b, 0, math.Inf(1))
		r.Status = b.Judge(lag, lagPolicy.Direction)
		r.Why = head + " against " + describeLag(*r.Baseline)
	}
	if limit > 0 && lag > limit.Seconds() {
		r.Status = Fail
		r.Why = fmt.Sprintf("%s, over the %s limit", head, dur(limit.Seconds()))
	}
	return r, nil
}

// loadResult measures the load time column apart from the event time, and tells the two causes
// apart in the freshness sentence: loads still arriving with old events means the source is late;
// finish summarises a run, times it and records it in the history (opening an incident when the
// request's policy says so): the last step of every check, warehouse or lake.
//
// A record written behind the answer waits for after (nil: nothing) before it starts.
func (c *Checker) finish(ctx context.Context, req Request, rep *Report, started time.Time, after <-chan struct{}) (*Report, error) {
	c.summarise(rep)
	rep.DurationMS = float64(c.now().Sub(started).Microseconds()) / 1000
	if c.hist != nil {
		open := req.OpenIncidents != nil && rep.Failed && req.OpenIncidents(rep.Asset)
		if err := c.hist.record(ctx, rep, req.Monitor, started, open, c.now(), after); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// loads stopped means the pipeline is.
func (c *Checker) loadResult(ctx context.Context, p *plan, fresh *Result, rep *Report, req Request, now time.Time, step func(string)) (Result, error) {
	var raw any
	if err := p.stmts.QueryRow(ctx, p.loadQ.sql, p.loadQ.args, &raw); err != nil {
		return Result{}, fmt.Errorf("load lag of %s: %w", rep.Table, err)
	}
	step("load lag")
	var newest *time.Time
	if raw != nil {
		t, ok := warehouse.ParseTime(raw)
		if !ok {
			return Result{}, fmt.Errorf("%w: load lag of %s: column %s holds %v, not a timestamp", warehouse.ErrTypeMismatch, rep.Table, p.loadName, raw)
		}
		newest = &t
	}
	r, err := c.lagResult(ctx, "load_lag_seconds", p.loadName, newest, p.loadQ.sql, rep, req.MaxLoadLag, now)
	if err != nil || fresh == nil || fresh.Status == Pass || newest == nil {
		return r, err
	}
	if r.Status == Pass {
		fresh.Why += fmt.Sprintf("; rows are still loading (newest %s %s old), so the events themselves arrive late", p.loadName, dur(r.Value))
	} else {
		fresh.Why += fmt.Sprintf("; loads stopped too (newest %s %s old)", p.loadName, dur(r.Value))
	}
	return r, nil
}

func (c *Checker) nullResult(ctx context.Context, p *plan, col scanCol, prof *profile, rep *Report, req Request, now time.Time) (Result, error) {
	r := Result{Check: string(NullRate), Metric: "null_rate", Subject: col.name, Unit: "ratio", Status: Pass}
	if col.notNull {
		r.SQL = "-- no query: " + col.name + " is declared NOT NULL"
		r.Why = "0% null " + rep.Window.Label + ": the column is declared NOT NULL"
		r.recorded = true
		r.ExpectedLow, r.ExpectedHigh = ptr(0.0), ptr(0.0)
		return r, nil
	}
	r.SQL = p.profileSQL()
	if prof.rows == 0 {
		r.Why = "no rows " + rep.Window.Label + " to measure nulls in"
		return r, nil
	}
	nulls := prof.rows - prof.nonNull[col.scanIndex]
	rate := float64(nulls) / float64(prof.rows)
	r.Value, r.recorded = round(rate, 6), true
	head := pct(rate) + " null " + rep.Window.Label
	if t := thresholdFor(req.Thresholds, string(NullRate), col.name); t != nil {
		r.judgeThreshold(t, rate, head, pct)
	} else {
		b, ok, err := c.baseline(ctx, rep, r.Metric, r.Subject, now, nullPolicy)
		if err != nil {
			return r, err
		}
		if !ok {
			r.Why = head + "; " + tooFew(b.Points, nullPolicy.MinPoints)
			return r, nil
		}
		r.setBaseline(b, 0, 1)
		r.Status = b.Judge(rate, nullPolicy.Direction)
		r.Why = head + " against " + describe(*r.Baseline, pct, "")
	}
	if r.Status != Pass && nulls > 0 {
		a := c.wh.Dialect.NewArgs()
		q := "SELECT * FROM " + p.table + " WHERE " + p.window(a) + " AND " + col.quoted + " IS NULL LIMIT " + fmt.Sprint(c.wh.MaxSample())
		if err := c.sample(ctx, &r, &query{sql: q, args: a.Vals}); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (c *Checker) uniquenessResult(ctx context.Context, p *plan, prof *profile, rep *Report, step func(string)) (Result, error) {
	keyName := strings.Join(p.keyNames, ",")
	r := Result{Check: string(Uniqueness), Metric: "duplicate_rows", Subject: keyName, Unit: "rows", Status: Pass, recorded: true,
		ExpectedLow: ptr(0.0), ExpectedHigh: ptr(0.0)}
	if p.dup.inferred != "" {
		r.SQL = "-- no query: " + p.dup.inferred
		r.Why = "(" + keyName + ") is unique " + rep.Window.Label + ": " + p.dup.inferred
		return r, nil
	}
	var dups int64
	if err := p.stmts.QueryRow(ctx, p.dup.count.sql, p.dup.count.args, &dups); err != nil {
		return r, fmt.Errorf("uniqueness of (%s): %w", keyName, err)
	}
	step("uniqueness")
	r.SQL, r.Value = p.dup.count.sql, float64(dups)
	if dups == 0 {
		r.Why = "(" + keyName + ") is unique " + rep.Window.Label
		return r, nil
	}
	r.Status = Fail
	r.Why = fmt.Sprintf("%s %s (%s) %s", countRows(dups), plural(dups, "duplicates", "duplicate"), keyName, rep.Window.Label)
	return r, c.sample(ctx, &r, p.dup.sample)
}

func (c *Checker) sample(ctx context.Context, r *Result, q *query) error {
	rows, err := c.wh.Query(ctx, q.sql, q.args, c.wh.MaxSample())
	if err != nil {
		return fmt.Errorf("sample for %s %s: %w", r.Check, r.Subject, err)
	}
	r.Sample, r.SampleSQL = &rows, q.sql
	return nil
}

func (r *Result) setBaseline(b Baseline, lo, hi float64) {
	clamp := func(v float64) float64 { return math.Min(math.Max(v, lo), hi) }
	b.Low, b.High, b.FailLow, b.FailHigh = clamp(b.Low), clamp(b.High), clamp(b.FailLow), clamp(b.FailHigh)
	r.Baseline = &b
	r.ExpectedLow, r.ExpectedHigh = ptr(round(b.Low, 6)), ptr(round(b.High, 6))
}

func (c *Checker) summarise(rep *Report) {
	rep.Status = Pass
	var bad []string
	for _, r := range rep.Results {
		rep.Status = worse(rep.Status, r.Status)
	}
	failing := 0
	for _, want := range []Status{Fail, Warn} {
		prev := ""
		for _, r := range rep.Results {
			if r.Status != want {
				continue
			}
			failing++
			// A column's metrics that fail together read as one sentence about the column:
			// "cost_micros: 41% zeros today …; the hourly sum is 58% below its baseline …".
			if r.Check == string(Column) && prev == r.Subject && len(bad) > 0 {
				bad[len(bad)-1] += "; " + r.Why
				continue
			}
			prev = ""
			if r.Check == string(Column) {
				prev = r.Subject
			}
			line := r.Why
			if r.Subject != "" && r.Check != string(Freshness) {
				line = r.Subject + ": " + line
			}
			bad = append(bad, string(want)+" "+line)
		}
	}
	rep.Failed = rep.Status == Fail
	if len(bad) == 0 {
		rep.Summary = fmt.Sprintf("all %d checks pass on %s %s", len(rep.Results), rep.Table, rep.Window.Label)
		return
	}
	rep.Summary = strings.Join(bad, "; ")
	if n := len(rep.Results) - failing; n > 0 {
		rep.Summary += fmt.Sprintf("; %d other %s pass", n, plural(int64(n), "check", "checks"))
	}
}

// ErrNoTimestamp is returned when a check needs a window and no timestamp column was named or found.
var ErrNoTimestamp = errors.New("timestamp column needed")

func ptr[T any](v T) *T { return &v }

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}
