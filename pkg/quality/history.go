package quality

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/store"
)

// History is the check history in the shared store (migration 0003_quality.sql).
type History struct {
	st    *store.Store
	stmts *stmtCache
	cache *seriesCache // the baseline series read, per asset (seriescache.go)
	// seriesReads counts the series statements sent to the store, for the tests.
	seriesReads atomic.Int64
	// unsettled counts the points written pending since the last flush; settledOnce is set by
	// this History's first flush (settleDue).
	unsettled   atomic.Int64
	settledOnce atomic.Bool
	// betweenHalves runs between a series read's two statements, for the tests.
	betweenHalves func()

	// behind says runs that fail no check are answered before their record is written
	// (WriteBehind); runIDs holds the ids reserved for them.
	behind bool
	runIDs runIDPool
}

// Close releases the read statements h keeps prepared. A History kept for the process's life
// needs no Close; one made for a single task should be closed after it.
func (h *History) Close() error { return h.stmts.close() }

// Store is the store h reads and writes.
func (h *History) Store() *store.Store { return h.st }

// NewHistory wraps an open store. A process keeps one per store: its series cache and its count
// of pending points (settleDue) live as long as it does.
func NewHistory(st *store.Store) *History {
	return &History{st: st, stmts: &stmtCache{db: st.DB}, cache: newSeriesCache()}
}

// WriteBehind makes h answer a run that fails no check before its record is written (record
// says when it does not) and returns h. The agent's History writes behind: a run's durable write
// is most of what a check of a short window costs beyond its warehouse statements. A re-run
// whose record is evidence (a fix's verification) uses a History that does not.
func (h *History) WriteBehind() *History {
	h.behind = true
	return h
}

// stmtCache keeps the history's fixed read statements prepared. A run reads one baseline per
// metric: compiling the baseline query (its two incident subqueries) each time cost more than
// running it on a short history. database/sql prepares a cached statement again on each pool
// connection it lands on. (Writes go through the store's writer transaction, a separate pool.)
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// stmtCacheLimit bounds the statements kept (the history's reads have a few fixed texts).
const stmtCacheLimit = 16

// get returns q prepared, or nil when it cannot be kept (the caller then sends the text).
func (c *stmtCache) get(ctx context.Context, q string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stmts[q]; ok {
		return s
	}
	if len(c.stmts) >= stmtCacheLimit {
		return nil
	}
	s, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil // a real error shows when the text itself is sent
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[q] = s
	return s
}

// close closes the kept statements (a later get prepares again).
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.Close())
		delete(c.stmts, q)
	}
	return errors.Join(errs...)
}

// query runs q on the store's pool, prepared when it can be.
func (h *History) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s := h.stmts.get(ctx, q); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return h.st.DB.QueryContext(ctx, q, args...)
}

// Series returns the eligible earlier points of one metric, newest first: before `before`, and
// not inside an incident on the same asset unless it was judged a false positive (an incident
// that is open, confirmed, or "expected" must not teach the baseline that its values are normal —
// elementary#980, soda-core#2013). A point that itself opened or joined an incident is excluded
// on the same terms. A point judged warn or fail trains the baseline only once its incident was
// judged a false positive (or expected): assets that never open incidents (no domain, autonomy
// L0) would otherwise teach the baseline every anomaly they measured.
func (h *History) Series(ctx context.Context, asset, metric, subject string, before time.Time, limit int) ([]Point, error) {
	bySubject, err := h.read(ctx, asset, seriesKey{metric: metric, subject: subject, limit: limit}, before)
	return bySubject[subject], err
}

// SeriesByPrefix is Series for every subject starting with prefix (a dimension's keys), by
// subject, on the same eligibility terms.
func (h *History) SeriesByPrefix(ctx context.Context, asset, metric, prefix string, before time.Time, limit int) (map[string][]Point, error) {
	return h.series(ctx, asset, metric, `p.subject LIKE ? ESCAPE '\'`, likeEscape(prefix)+"%", before, limit)
}

// read is the one history read behind every baseline: k's series of asset before `at`, by subject.
func (h *History) read(ctx context.Context, asset string, k seriesKey, at time.Time) (map[string][]Point, error) {
	if k.prefix {
		return h.SeriesByPrefix(ctx, asset, k.metric, k.subject, at, k.limit)
	}
	return h.series(ctx, asset, k.metric, "p.subject = ?", k.subject, at, k.limit)
}

// series reads the eligible points of one series (or of every series matching subjectCond). The
// incident exclusion is written twice: first as one uncorrelated test of whether the asset has any
// incident that could exclude a point at all, which both engines evaluate once per statement, and
// only when it has one, per point. Most assets have none, and the per-point probe was a fifth of a
// read of eight weeks of points; the result is the same either way. The settled and the pending
// points (migration 0016) are read by one statement each, each newest first from its index, and
// merged here: in one statement the engine sorted their union again. A limit of 0 or less reads
// every eligible point.
func (h *History) series(ctx context.Context, asset, metric, subjectCond string, subject any, before time.Time, limit int) (map[string][]Point, error) {
	if err := h.st.AwaitWrites(ctx); err != nil {
		return nil, err
	}
	h.seriesReads.Add(1)
	where := seriesWhere(subjectCond)
	args := []any{asset, metric, subject, store.Timestamp(before), asset}
	if limit > 0 {
		args = append(args, limit)
	}
	// Pending first: a flush between the two statements (any process's) moves points from the
	// pending half to the settled one, where the second statement finds them again (dropped below
	// by id), instead of between two reads that would both miss them.
	pending, err := h.seriesHalf(ctx, store.PointsHalf(false, seriesCols, where, "at DESC", limit), args)
	if err != nil {
		return nil, err
	}
	if h.betweenHalves != nil {
		h.betweenHalves()
	}
	settled, err := h.seriesHalf(ctx, store.PointsHalf(true, seriesCols, where, "at DESC", limit), args)
	if err != nil {
		return nil, err
	}
	if len(pending) > 0 && len(settled) > 0 {
		seen := make(map[int64]bool, len(pending))
		for _, r := range pending {
			seen[r.id] = true
		}
		settled = slices.DeleteFunc(settled, func(r seriesRow) bool { return seen[r.id] })
	}
	out := map[string][]Point{}
	for i, j, n := 0, 0, 0; (limit <= 0 || n < limit) && (i < len(settled) || j < len(pending)); n++ {
		var r seriesRow
		if j == len(pending) || (i < len(settled) && !settled[i].At.Before(pending[j].At)) {
			r, i = settled[i], i+1
		} else {
			r, j = pending[j], j+1
		}
		out[r.subject] = append(out[r.subject], r.Point)
	}
	return out, nil
}

// seriesCols are the columns a series read selects (seriesHalf scans them).
const seriesCols = "id, subject, at, value"

// seriesWhere is a series read's condition on its point p (the asset, metric, subject matched by
// subjectCond, and an instant, then the eligibility rule). Its arguments: the asset, the metric,
// the subject, the instant and the asset again.
func seriesWhere(subjectCond string) string {
	return `p.asset = ? AND p.metric = ? AND ` + subjectCond + ` AND p.at < ?
  AND (p.status = 'pass' OR EXISTS (SELECT 1 FROM incidents j
      WHERE j.id = p.incident_id AND j.status IN ('false_positive', 'expected')))
  AND (NOT EXISTS (SELECT 1 FROM incidents a WHERE a.asset = ? AND a.status <> 'false_positive')
    OR NOT EXISTS (SELECT 1 FROM incidents i
      WHERE i.asset = p.asset AND i.status <> 'false_positive'
        AND (i.id = p.incident_id OR (p.at >= i.opened_at AND (i.resolved_at IS NULL OR p.at <= i.resolved_at)))))`
}

// seriesRow is one point of a series read, with its row id and subject.
type seriesRow struct {
	id      int64
	subject string
	Point
}

// seriesHalf runs one half of a series read: its rows, newest first.
func (h *History) seriesHalf(ctx context.Context, q string, args []any) ([]seriesRow, error) {
	rows, err := h.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read check history: %w", err)
	}
	defer rows.Close()
	var out []seriesRow
	for rows.Next() {
		var r seriesRow
		var at string
		if err := rows.Scan(&r.id, &r.subject, &at, &r.Value); err != nil {
			return nil, err
		}
		if r.At, err = store.ParseTimestamp(at); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// IncidentRef is an incident a run opened or joined.
type IncidentRef struct {
	ID          int64  `json:"id"`
	FailureMode string `json:"failure_mode"`
	Opened      bool   `json:"opened" jsonschema:"true when this run opened it, false when it joined an open one"`
	Summary     string `json:"summary"`
}

// record writes a run, its metric points and (when asked) the incidents of its failures in one
// transaction, so a crash never leaves points without their run or an incident without its evidence.
// Once committed, the run's points are added to the asset's cached series, or the entry is dropped
// (seriesCache.applyRun); a write that failed drops it too.
//
// A History that writes behind (WriteBehind) answers a run that failed no check before its record
// is written: the run takes an id reserved beforehand (takeRunID), and the record is queued on the
// store (store.WriteBehind), which writes it in order right after. A run that failed a check, one
// whose id could not be reserved, and every run while an earlier queued record is failing are
// written before the answer, as always: a failure's points are evidence the next call (another
// agent's diagnosis, an incident opened by hand) reads, its answer may name an incident, and a
// store that cannot be written must be told.
func (h *History) record(ctx context.Context, r *Report, monitor string, started time.Time, openIncidents bool, now time.Time, after <-chan struct{}) error {
	w := runWrite{asset: r.Asset, table: r.Table, monitor: monitor, started: started, finished: now, window: r.Window,
		status: r.Status, summary: r.Summary, results: r.Results}
	if h.behind && !r.Failed && h.st.BehindFailure() == nil {
		if id, err := h.takeRunID(ctx); err == nil {
			w.id, w.points = id, runPoints(r.Results, nil)
			w.results = nil // the caller owns the report once answered; the points are a copy
			r.RunID, r.recordedBehind = id, true
			h.st.WriteBehind(func(ctx context.Context) error {
				if after != nil {
					select { // a rollback stuck on the network must not hold the queue
					case <-after:
					case <-time.After(rollbackWait):
					}
				}
				_, err := h.write(ctx, w, false)
				if err != nil && store.IsUniqueViolation(err) && h.runWritten(ctx, w) {
					return nil // an earlier attempt committed; only its answer was lost
				}
				return err
			})
			return nil
		}
	}
	if err := h.st.Flush(ctx); err != nil {
		return fmt.Errorf("record check run: an earlier run's record, answered before it was written, still cannot be written: %w", err)
	}
	refs, err := h.write(ctx, w, openIncidents) // the store assigns the id
	if err != nil {
		return err
	}
	r.RunID, r.Incidents = refs.runID, append(r.Incidents, refs.incidents...)
	return nil
}

// rollbackWait bounds how long a record written behind its answer waits for the run's snapshot
// to roll back before it is written anyway.
const rollbackWait = 5 * time.Second

// runWritten says whether the store already holds w's run (a commit whose answer was lost makes
// the retry of the same record fail on its id).
func (h *History) runWritten(ctx context.Context, w runWrite) bool {
	var one int
	err := h.st.DB.QueryRowContext(ctx, `SELECT 1 FROM check_runs WHERE id = ? AND asset = ? AND started_at = ?`,
		w.id, w.asset, store.Timestamp(w.started)).Scan(&one)
	return err == nil
}

// runWrite is what record writes of one run. results are the run's results while incidents may
// be opened from them; a run written behind its answer carries its points instead.
type runWrite struct {
	id                    int64 // reserved (store.ReserveIDs), or 0 for the store to assign
	asset, table, monitor string
	started, finished     time.Time
	window                Window
	status                Status
	summary               string
	results               []Result
	points                []metricRow
}

// writtenRun is what a written run's answer names: its id and the incidents it opened or joined.
type writtenRun struct {
	runID     int64
	incidents []IncidentRef
}

// write writes w in one transaction: its incidents (when openIncidents), the run row and its
// points; then it settles pending points when due and keeps the series cache exact.
func (h *History) write(ctx context.Context, w runWrite, openIncidents bool) (writtenRun, error) {
	var out writtenRun
	var written []metricRow
	var version recordedVersion
	versionRead, settle, seen := false, false, int64(0)
	err := h.st.Write(ctx, func(tx *sql.Tx) error {
		out, written, versionRead, settle = writtenRun{}, nil, false, false
		incidentByMode := map[string]int64{}
		if openIncidents {
			modes := map[string][]string{}
			var order []string
			for _, res := range w.results {
				if res.Status != Fail {
					continue
				}
				if _, ok := modes[res.Check]; !ok {
					order = append(order, res.Check)
				}
				line := res.Why
				if res.Subject != "" {
					line = res.Subject + ": " + res.Why
				}
				modes[res.Check] = append(modes[res.Check], line)
			}
			for _, mode := range order {
				summary := w.table + " " + mode + " — " + strings.Join(modes[mode], "; ")
				// pkg/incidents owns the open-or-join rule (dedup while open, occurrences, timeline);
				// calling it inside this transaction commits the run and its incident together.
				o, err := incidents.OpenOrJoin(ctx, tx, w.asset, mode, severityFor(mode), summary, "dw-quality", w.finished)
				if err != nil {
					return err
				}
				incidentByMode[mode] = o.ID
				out.incidents = append(out.incidents, IncidentRef{ID: o.ID, FailureMode: mode, Opened: o.Opened, Summary: summary})
			}
		}
		// The run row's RETURNING also reads what the series cache needs (recordedVersion): the
		// asset's version before this run's points, and whether an incident covers the run's
		// instant. One statement fewer than reading them after the points; the write lock held
		// since BEGIN keeps any other writer out in between.
		at := store.Timestamp(w.started)
		cols, marks := "", ""
		var args []any
		if w.id != 0 {
			cols, marks, args = "id, ", "?, ", []any{w.id}
		}
		insertRun := `INSERT INTO check_runs (` + cols + `asset, monitor, started_at, finished_at, window_start, window_end, window_label, status, error, summary)
VALUES (` + marks + `?, ?, ?, ?, ?, ?, ?, ?, '', ?) RETURNING id, ` + recordedVersionTerms
		args = append(args, w.asset, w.monitor, at, store.Timestamp(w.finished),
			store.Timestamp(w.window.Since), store.Timestamp(w.window.Until), w.window.Label, string(w.status), w.summary,
			w.asset, w.asset, at, at)
		var before recordedVersion
		if err := tx.QueryRowContext(ctx, insertRun, args...).Scan(&out.runID, &before.version, &before.covered); err != nil {
			return fmt.Errorf("record check run: %w", err)
		}
		points := w.points
		if w.results != nil {
			points = runPoints(w.results, incidentByMode)
		}
		if err := insertPoints(ctx, tx, out.runID, w.asset, w.started, points); err != nil {
			return err
		}
		if settle, seen = h.settleDue(len(points)); settle {
			if _, err := tx.ExecContext(ctx, store.SettlePointsSQL); err != nil {
				return fmt.Errorf("settle the pending metric points: %w", err)
			}
		}
		written = points
		if len(incidentByMode) > 0 || !h.cache.holds(w.asset) {
			return nil
		}
		// The insert triggers bump the version by one per point (migration 0015).
		version = recordedVersion{version: before.version + int64(len(points)), covered: before.covered}
		versionRead = true
		return nil
	})
	if err == nil {
		h.settled(len(written), settle, seen)
	}
	if err != nil || !versionRead {
		h.cache.drop(w.asset)
		return out, err
	}
	h.cache.applyRun(w.asset, version, recordedAt(w.started), written)
	return out, nil
}

// runPoints are the metric points of a run's results (copies): those recorded, each with the incident its
// check opened or joined (incidentByMode, by check) when it failed.
func runPoints(results []Result, incidentByMode map[string]int64) []metricRow {
	points := make([]metricRow, 0, len(results))
	for i := range results {
		res := &results[i]
		if !res.recorded {
			continue
		}
		var inc any
		if id, ok := incidentByMode[res.Check]; ok && res.Status == Fail {
			inc = id
		}
		points = append(points, metricRow{res.Metric, res.Subject, res.Value, res.Status, copyBaseline(res.Baseline), inc})
		for _, x := range res.extra {
			var xinc any
			if id, ok := incidentByMode[res.Check]; ok && x.status == Fail {
				xinc = id
			}
			points = append(points, metricRow{x.metric, x.subject, x.value, x.status, copyBaseline(x.baseline), xinc})
		}
	}
	return points
}

// copyBaseline copies b: a record written behind its answer must not read the report the
// caller now owns.
func copyBaseline(b *Baseline) *Baseline {
	if b == nil {
		return nil
	}
	c := *b
	return &c
}

// settleEvery is how many points a History writes pending before it settles them (migration
// 0016): a flush moves each series' points into the series index at once, and readers scan at
// most about this many pending points of an asset through the time index.
const settleEvery = 1024

// settleDue says whether the run writing n points settles the pending ones: every settleEvery
// points, and at a History's first write, which settles what other processes left pending (a
// process that exits after a few runs never reaches settleEvery itself). seen is the count it
// judged by.
func (h *History) settleDue(n int) (due bool, seen int64) {
	seen = h.unsettled.Load()
	return !h.settledOnce.Load() || seen+int64(n) >= settleEvery, seen
}

// settled counts a committed run's n points, or, after its flush, takes off the seen points it
// settled: runs committed meanwhile keep their count.
func (h *History) settled(n int, flushed bool, seen int64) {
	if flushed {
		h.settledOnce.Store(true)
		h.unsettled.Add(-seen)
		return
	}
	h.unsettled.Add(int64(n))
}

// metricRow is one metric_points row of a run.
type metricRow struct {
	metric, subject string
	value           float64
	status          Status
	baseline        *Baseline
	incident        any // the incident id, or nil
}

// pointsPerInsert bounds one INSERT's rows: 11 placeholders each stays under every engine's limit.
const pointsPerInsert = 500

// insertPoints writes a run's metric points in one multi-row INSERT per 500 points (one round
// trip for a run's usual dozen, instead of one per point), pending (settleEvery).
func insertPoints(ctx context.Context, tx *sql.Tx, runID int64, asset string, at time.Time, points []metricRow) error {
	for start := 0; start < len(points); start += pointsPerInsert {
		chunk := points[start:min(start+pointsPerInsert, len(points))]
		values := make([]string, len(chunk))
		args := make([]any, 0, 11*len(chunk))
		for i, pt := range chunk {
			var base, lo, hi any
			if b := pt.baseline; b != nil {
				base, lo, hi = b.Median, b.Low, b.High
			}
			values[i] = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"
			args = append(args, runID, asset, pt.metric, pt.subject, store.Timestamp(at), pt.value, string(pt.status), base, lo, hi, pt.incident)
		}
		q := `INSERT INTO metric_points (run_id, asset, metric, subject, at, value, status, baseline, expected_low, expected_high, incident_id, settled)
VALUES ` + strings.Join(values, ", ")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("record %d metric points of run %d: %w", len(chunk), runID, err)
		}
	}
	return nil
}

// recordError keeps a failed run visible in the history (no points: nothing was measured).
func (h *History) recordError(ctx context.Context, asset, monitor string, started, now time.Time, w Window, cause error) error {
	return h.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO check_runs (asset, monitor, started_at, finished_at, window_start, window_end, window_label, status, error, summary)
VALUES (?, ?, ?, ?, ?, ?, ?, 'error', ?, '')`, asset, monitor, store.Timestamp(started), store.Timestamp(now),
			store.Timestamp(w.Since), store.Timestamp(w.Until), w.Label, cause.Error())
		return err
	})
}

// severityFor: wrong or missing data (nulls, zeros, shifted values, a key's rows gone, a model
// out of step with its source, volume, staleness) is sev2 — it reaches money and dashboards; a
// duplicate key, a failed custom rule or a schema change is sev3 until a person raises it.
func severityFor(mode string) string {
	switch mode {
	case "null_rate", "volume", "volume_by_hour", "freshness", "column", "dimension", "reconciliation":
		return "sev2"
	}
	return "sev3"
}

// RunRecord is one run in the history.
type RunRecord struct {
	ID          int64          `json:"id"`
	Asset       string         `json:"asset"`
	Monitor     string         `json:"monitor,omitempty"`
	StartedAt   time.Time      `json:"started_at"`
	WindowLabel string         `json:"window_label"`
	WindowStart time.Time      `json:"window_start"`
	WindowEnd   time.Time      `json:"window_end"`
	Status      string         `json:"status" jsonschema:"pass, warn, fail or error"`
	Error       string         `json:"error,omitempty"`
	Summary     string         `json:"summary,omitempty"`
	Metrics     []MetricRecord `json:"metrics"`
}

// MetricRecord is one recorded metric of a run.
type MetricRecord struct {
	Metric       string   `json:"metric"`
	Subject      string   `json:"subject,omitempty"`
	Value        float64  `json:"value"`
	Status       string   `json:"status"`
	Baseline     *float64 `json:"baseline,omitempty"`
	ExpectedLow  *float64 `json:"expected_low,omitempty"`
	ExpectedHigh *float64 `json:"expected_high,omitempty"`
	IncidentID   *int64   `json:"incident_id,omitempty"`
}

// HistoryQuery filters Runs. Empty fields match everything.
type HistoryQuery struct {
	Asset   string // exact URN, or a suffix such as "usage_hourly" / "main.usage_hourly"
	Monitor string
	Metric  string
	Subject string
	Since   time.Time
	Limit   int
}

// Runs returns recent runs, newest first, each with its metrics (filtered by Metric/Subject).
func (h *History) Runs(ctx context.Context, q HistoryQuery) ([]RunRecord, error) {
	if q.Limit <= 0 || q.Limit > 500 {
		q.Limit = 50
	}
	if err := h.st.AwaitWrites(ctx); err != nil {
		return nil, err
	}
	var assets []string
	if q.Asset != "" {
		var err error
		if assets, err = h.matchingAssets(ctx, q.Asset); err != nil {
			return nil, err
		}
		if len(assets) == 0 {
			return nil, nil
		}
	}
	rq, args := runsQuery(q, assets)
	rows, err := h.st.DB.QueryContext(ctx, rq, args...)
	if err != nil {
		return nil, fmt.Errorf("read check history: %w", err)
	}
	var out []RunRecord
	for rows.Next() {
		var r RunRecord
		var started, ws, we string
		if err := rows.Scan(&r.ID, &r.Asset, &r.Monitor, &started, &r.WindowLabel, &ws, &we, &r.Status, &r.Error, &r.Summary); err != nil {
			rows.Close()
			return nil, err
		}
		r.StartedAt, _ = store.ParseTimestamp(started)
		r.WindowStart, _ = store.ParseTimestamp(ws)
		r.WindowEnd, _ = store.ParseTimestamp(we)
		r.Metrics = []MetricRecord{}
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := h.runMetrics(ctx, out, q); err != nil {
		return nil, err
	}
	return out, nil
}

// runsQuery selects the newest q.Limit runs matching q, of the assets given (any asset when none
// is): each filter is a condition only when set, so the runs are read newest first from the index
// that leads with it (the asset's, the monitor's, or the start time's) and the read stops at the limit.
func runsQuery(q HistoryQuery, assets []string) (string, []any) {
	where := []string{"1 = 1"}
	var args []any
	if len(assets) > 0 {
		where = append(where, "asset IN ("+strings.Repeat("?, ", len(assets)-1)+"?)")
		for _, a := range assets {
			args = append(args, a)
		}
	}
	if q.Monitor != "" {
		where = append(where, "monitor = ?")
		args = append(args, q.Monitor)
	}
	if !q.Since.IsZero() {
		where = append(where, "started_at >= ?")
		args = append(args, store.Timestamp(q.Since))
	}
	if q.Metric != "" || q.Subject != "" {
		cond, pargs := q.pointFilter("p.")
		where = append(where, "EXISTS (SELECT 1 FROM metric_points p WHERE p.run_id = check_runs.id"+cond+")")
		args = append(args, pargs...)
	}
	args = append(args, q.Limit)
	return `SELECT id, asset, monitor, started_at, window_label, window_start, window_end, status, error, summary
FROM check_runs WHERE ` + strings.Join(where, " AND ") + ` ORDER BY started_at DESC, id DESC LIMIT ?`, args
}

// matchingAssets lists the assets with runs that filter names: the asset itself, or any asset
// whose URN ends in "/"+filter or "."+filter ("usage_hourly", "main.usage_hourly"). An asset with
// runs under exactly that name (a URN, as the lifecycle passes) is the answer at one seek.
// Otherwise the distinct assets are read from the asset index, one seek each, so that the runs
// themselves are read from the same index (newest first for one asset; several are merged by a
// sort of their runs) instead of a suffix match over every run followed by a sort of them all.
func (h *History) matchingAssets(ctx context.Context, filter string) ([]string, error) {
	if strings.Contains(filter, ":") {
		var one int
		err := h.st.DB.QueryRowContext(ctx, `SELECT 1 FROM check_runs WHERE asset = ? LIMIT 1`, filter).Scan(&one)
		if err == nil {
			return []string{filter}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read check history: find the assets named %q: %w", filter, err)
		}
		// Not a URN with runs: a table name may hold ':' too (a quoted identifier).
	}
	// The distinct assets by skipping from one to the next in the asset index: a seek per asset,
	// not a read of every run's entry.
	rows, err := h.st.DB.QueryContext(ctx, `WITH RECURSIVE assets(asset) AS (
  SELECT min(asset) FROM check_runs
  UNION ALL
  SELECT (SELECT min(c.asset) FROM check_runs c WHERE c.asset > assets.asset) FROM assets WHERE assets.asset IS NOT NULL)
SELECT asset FROM assets WHERE asset IS NOT NULL AND (asset = ? OR asset LIKE ? ESCAPE '\' OR asset LIKE ? ESCAPE '\')`,
		filter, "%/"+likeEscape(filter), "%."+likeEscape(filter))
	if err != nil {
		return nil, fmt.Errorf("read check history: find the assets named %q: %w", filter, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("read check history: find the assets named %q: %w", filter, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read check history: find the assets named %q: %w", filter, err)
	}
	return out, nil
}

// runMetrics fills each run's Metrics (filtered by q's Metric and Subject) in one statement,
// served by the points' run index (migration 0017), in the order they were recorded.
func (h *History) runMetrics(ctx context.Context, runs []RunRecord, q HistoryQuery) error {
	if len(runs) == 0 {
		return nil
	}
	byID := make(map[int64]*RunRecord, len(runs))
	ids := make([]int64, len(runs))
	for i := range runs {
		byID[runs[i].ID] = &runs[i]
		ids[i] = runs[i].ID
	}
	mq, args := runMetricsQuery(ids, q)
	rows, err := h.st.DB.QueryContext(ctx, mq, args...)
	if err != nil {
		return fmt.Errorf("read the metrics of %d check runs: %w", len(runs), err)
	}
	defer rows.Close()
	for rows.Next() {
		var runID int64
		var m MetricRecord
		if err := rows.Scan(&runID, &m.Metric, &m.Subject, &m.Value, &m.Status, &m.Baseline, &m.ExpectedLow, &m.ExpectedHigh, &m.IncidentID); err != nil {
			return fmt.Errorf("read the metrics of %d check runs: %w", len(runs), err)
		}
		if r := byID[runID]; r != nil {
			r.Metrics = append(r.Metrics, m)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the metrics of %d check runs: %w", len(runs), err)
	}
	return nil
}

// runMetricsQuery selects the points of the runs ids (filtered by q's Metric and Subject), by run
// and in the order they were recorded. ids is never empty (runMetrics reads nothing for no runs).
func runMetricsQuery(ids []int64, q HistoryQuery) (string, []any) {
	args := make([]any, 0, len(ids)+2)
	for _, id := range ids {
		args = append(args, id)
	}
	cond, pargs := q.pointFilter("")
	return `SELECT run_id, metric, subject, value, status, baseline, expected_low, expected_high, incident_id FROM metric_points WHERE run_id IN (` +
		strings.Repeat("?, ", len(ids)-1) + `?)` + cond + " ORDER BY run_id, id", append(args, pargs...)
}

// pointFilter is q's metric and subject as conditions on metric_points (columns prefixed by
// alias), each one only when set, to follow a WHERE: the runs listed hold a matching point and
// carry only the matching points.
func (q HistoryQuery) pointFilter(alias string) (string, []any) {
	var cond string
	var args []any
	if q.Metric != "" {
		cond += " AND " + alias + "metric = ?"
		args = append(args, q.Metric)
	}
	if q.Subject != "" {
		cond += " AND " + alias + "subject = ?"
		args = append(args, q.Subject)
	}
	return cond, args
}

// LastRun is when the named monitor last ran (zero when never).
func (h *History) LastRun(ctx context.Context, monitor string) (time.Time, error) {
	if err := h.st.AwaitWrites(ctx); err != nil {
		return time.Time{}, err
	}
	var s sql.NullString
	if err := h.st.DB.QueryRowContext(ctx, `SELECT max(started_at) FROM check_runs WHERE monitor = ?`, monitor).Scan(&s); err != nil {
		return time.Time{}, fmt.Errorf("read last run of monitor %s: %w", monitor, err)
	}
	if !s.Valid {
		return time.Time{}, nil
	}
	return store.ParseTimestamp(s.String)
}

func likeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}
