package quality

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// cacheFixture is a store with a history of one asset, a History whose cache is under test and a
// reference History that always reads the store.
type cacheFixture struct {
	t     *testing.T
	st    *store.Store
	h     *History
	ref   *History
	asset string
	keys  []seriesKey
	t0    time.Time
}

func newCacheFixture(t *testing.T, runs int) *cacheFixture {
	t.Helper()
	st := storetest.Open(t)
	f := &cacheFixture{t: t, st: st, h: NewHistory(st), ref: NewHistory(st), asset: "warehouse:sqlite/main.events",
		keys: []seriesKey{singleSeries("rows_per_hour", ""), singleSeries("null_rate", "a")},
		t0:   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	seedSeries(t, st, f.asset, f.keys, f.t0, runs)
	return f
}

// seedSeries writes runs hourly points of every key from t0, in one transaction.
func seedSeries(t testing.TB, st *store.Store, asset string, keys []seriesKey, t0 time.Time, runs int) {
	t.Helper()
	ctx := context.Background()
	err := st.Write(ctx, func(tx *sql.Tx) error {
		var runID int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO check_runs (asset, started_at, finished_at, status) VALUES (?, ?, ?, 'pass') RETURNING id`,
			asset, store.Timestamp(t0), store.Timestamp(t0)).Scan(&runID); err != nil {
			return err
		}
		for start := 0; start < runs; start += 200 {
			var values []string
			var args []any
			for i := start; i < min(runs, start+200); i++ {
				for j, k := range keys {
					values = append(values, "(?, ?, ?, ?, ?, ?, 'pass')")
					args = append(args, runID, asset, k.metric, k.subject, store.Timestamp(t0.Add(time.Duration(i)*time.Hour)), float64(i*10+j))
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO metric_points (run_id, asset, metric, subject, at, value, status) VALUES `+strings.Join(values, ", "), args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// hour is the fixture's i-th hour.
func (f *cacheFixture) hour(i int) time.Time { return f.t0.Add(time.Duration(i) * time.Hour) }

// check reads every key at each of ats through one validated view, as a run does, and compares
// each answer with the store's.
func (f *cacheFixture) check(what string, ats ...time.Time) {
	f.t.Helper()
	ctx := context.Background()
	for _, at := range ats {
		v := f.h.view(ctx, f.asset)
		for _, k := range f.keys {
			got, err := v.read(ctx, k, at)
			if err != nil {
				f.t.Fatal(err)
			}
			want, err := f.ref.read(ctx, f.asset, k, at)
			if err != nil {
				f.t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				f.t.Fatalf("%s: %s/%s at %s: cached %d points %v…, store %d points %v…", what, k.metric, k.subject, at,
					len(got[k.subject]), head(got[k.subject]), len(want[k.subject]), head(want[k.subject]))
			}
		}
	}
}

func head(pts []Point) []Point { return pts[:min(3, len(pts))] }

// record records a run of h at `at` with one point per fixture key of the given status (the
// first key's value is value), opening incidents for failures when open.
func (f *cacheFixture) record(h *History, at time.Time, status Status, value float64, open bool) (*Report, error) {
	rep := &Report{Table: "events", Asset: f.asset, Status: status, Window: Window{Since: at.Add(-time.Hour), Until: at, Label: "hour"}}
	for i, k := range f.keys {
		rep.Results = append(rep.Results, Result{Check: "volume", Metric: k.metric, Subject: k.subject, Value: value + float64(i), Status: status, recorded: true})
	}
	return rep, h.record(context.Background(), rep, "m", at, open, at, nil)
}

func (f *cacheFixture) mustRecord(h *History, at time.Time, status Status, value float64, open bool) *Report {
	f.t.Helper()
	rep, err := f.record(h, at, status, value, open)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

// reads counts the series statements f.h sent while fn ran.
func (f *cacheFixture) reads(fn func()) int64 {
	before := f.h.seriesReads.Load()
	fn()
	return f.h.seriesReads.Load() - before
}

// The cached series is the store's answer after every kind of write: the run's own record, a
// record by another process, incidents opened and judged, a run at an earlier instant, warn and
// fail points, and a record that failed.
func TestCachedSeriesMatchTheStore(t *testing.T) {
	f := newCacheFixture(t, 48)
	ctx := context.Background()
	f.check("cold", f.hour(48), f.hour(49), f.hour(20), f.t0)

	// (a) The run's own record is added to the cache; the next run reads no series.
	f.mustRecord(f.h, f.hour(48), Pass, 1000, false)
	if n := f.reads(func() { f.check("own record", f.hour(49)) }); n != 0 {
		t.Errorf("after the run's own record, a run read %d series from the store, want 0", n)
	}
	f.check("own record, other instants", f.hour(48), f.hour(30), f.t0)

	// A warn point is not eligible: it stays out of the cache, which stays valid.
	f.mustRecord(f.h, f.hour(49), Warn, 2000, false)
	if n := f.reads(func() { f.check("own warn", f.hour(50)) }); n != 0 {
		t.Errorf("after the run's own warn, a run read %d series, want 0", n)
	}

	// (b) Another process records points of the asset: the version moved, the cache is re-read.
	other := NewHistory(f.st)
	f.mustRecord(other, f.hour(50), Pass, 3000, false)
	if n := f.reads(func() { f.check("other process", f.hour(51)) }); n == 0 {
		t.Error("after another process's record, the run read no series: the cache served a stale answer")
	}
	f.check("other process, other instants", f.hour(50), f.hour(10))

	// (c) An incident opened by a failure, then judged a false positive, then another judged expected.
	rep := f.mustRecord(f.h, f.hour(51), Fail, 4000, true)
	if len(rep.Incidents) != 1 {
		t.Fatalf("the failing run opened %d incidents, want 1", len(rep.Incidents))
	}
	f.check("incident open", f.hour(52), f.hour(51))
	f.mustRecord(f.h, f.hour(52), Pass, 5000, false) // inside the open incident: excluded
	f.check("pass inside an open incident", f.hour(53))
	inc := incidents.New(f.st, func() time.Time { return f.hour(53) })
	if _, err := inc.SetStatus(ctx, rep.Incidents[0].ID, "false_positive", "test", "not a problem"); err != nil {
		t.Fatal(err)
	}
	f.check("false positive", f.hour(54), f.hour(52))
	f.mustRecord(f.h, f.hour(54), Pass, 6000, false)
	f.check("after the false positive", f.hour(55))
	rep = f.mustRecord(f.h, f.hour(55), Fail, 7000, true)
	if _, err := inc.SetStatus(ctx, rep.Incidents[0].ID, "expected", "test", "a migration"); err != nil {
		t.Fatal(err)
	}
	f.check("expected", f.hour(56), f.hour(55))
	f.mustRecord(f.h, f.hour(56), Pass, 8000, false)
	f.check("after the expected incident", f.hour(57), f.hour(40))

	// (d) A run at an earlier instant than the cached points (a backfill between two hours).
	f.check("warm", f.hour(57))
	f.mustRecord(f.h, f.hour(20).Add(30*time.Minute), Pass, 9000, false)
	f.check("earlier run", f.hour(57), f.hour(21), f.hour(20).Add(31*time.Minute), f.hour(20).Add(30*time.Minute), f.hour(20))

	// (f) A record that fails (a status the table refuses) rolls back and leaves the cache exact;
	// the next record is added as usual.
	f.check("warm", f.hour(57))
	if _, err := f.record(f.h, f.hour(57), Status("bogus"), 10000, false); err == nil {
		t.Fatal("a record with a bad status was accepted")
	}
	f.check("failed record", f.hour(58), f.hour(57))
	f.mustRecord(f.h, f.hour(58), Pass, 11000, false)
	if n := f.reads(func() { f.check("after a failed record", f.hour(59)) }); n != 0 {
		t.Errorf("after a failed record and a good one, a run read %d series, want 0", n)
	}
}

// (e) A series longer than the limit is cached cut at the limit: a run at an earlier instant
// that would need points beyond it reads the store, and new points push the oldest out.
func TestCachedSeriesCutAtTheLimit(t *testing.T) {
	f := newCacheFixture(t, baselineDepth+100)
	last := baselineDepth + 100
	f.check("cold", f.hour(last))
	if n := f.reads(func() { f.check("earlier than the cut", f.hour(last-50), f.hour(50), f.hour(1)) }); n == 0 {
		t.Error("a run needing points beyond the cached limit read nothing from the store")
	}
	for i := range 3 {
		f.mustRecord(f.h, f.hour(last+i), Pass, float64(100000+i), false)
	}
	if n := f.reads(func() { f.check("three runs later", f.hour(last+3)) }); n != 0 {
		t.Errorf("a run after three own records read %d series, want 0", n)
	}
	f.check("three runs later, other instants", f.hour(last+1), f.hour(last-10), f.hour(5))
}

// Two points of one series at one instant are ordered as the engine chooses: a read that would
// include them goes to the store, one before them is served from memory (a benchmark's runs at
// one fixed clock).
func TestCachedSeriesLeaveTiesToTheStore(t *testing.T) {
	f := newCacheFixture(t, 10)
	f.check("cold", f.hour(10))
	f.mustRecord(f.h, f.hour(9), Pass, 500, false) // the same instant as the last seeded point
	if n := f.reads(func() { f.check("before the tie", f.hour(9), f.hour(5)) }); n != 0 {
		t.Errorf("reads before the tied instant sent %d series reads, want 0", n)
	}
	if n := f.reads(func() { f.check("after the tie", f.hour(10)) }); n == 0 {
		t.Error("a read including two points at one instant was served from memory")
	}

	f = newCacheFixture(t, 10)
	f.check("cold", f.hour(10))
	for range 3 { // runs at one clock: each from the second ties the last
		f.mustRecord(f.h, f.hour(10), Pass, 600, false)
		if n := f.reads(func() { f.check("one clock", f.hour(10)) }); n != 0 {
			t.Errorf("a run at the clock of the last sent %d series reads, want 0", n)
		}
	}
	f.check("one clock, later", f.hour(11), f.hour(10).Add(time.Nanosecond))
}

// Concurrent runs on one History over one asset each get the store's answer (run under -race).
func TestCachedSeriesUnderConcurrentRuns(t *testing.T) {
	f := newCacheFixture(t, 48)
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for i := range 5 {
				at := f.hour(48 + g*10 + i)
				if _, e := f.record(f.h, at, Pass, float64(g*100+i), false); e != nil && err == nil {
					err = e
				}
				v := f.h.view(context.Background(), f.asset)
				if _, e := v.read(context.Background(), f.keys[0], at.Add(time.Minute)); e != nil && err == nil {
					err = e
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	f.check("after concurrent runs", f.hour(100), f.hour(60), f.hour(49))
}

// The cache holds at most seriesCacheAssets assets.
func TestSeriesCacheIsBounded(t *testing.T) {
	c := newSeriesCache()
	k := singleSeries("rows_per_hour", "")
	for i := range seriesCacheAssets + 10 {
		a := fmt.Sprintf("asset%d", i)
		c.validate(a, 1)
		c.put(a, 1, k, &cachedSeries{buf: []Point{{At: time.Unix(int64(i), 0), Value: 1}}, end: 1})
	}
	if len(c.assets) != seriesCacheAssets || c.points != seriesCacheAssets {
		t.Fatalf("cache holds %d assets and %d points, want %d of each", len(c.assets), c.points, seriesCacheAssets)
	}
}

// A run is served the cache's own points, not a copy: what it was served stays as it was while
// later runs add their points (below it, or into a new copy) and the oldest leave.
func TestServedSeriesNeverChange(t *testing.T) {
	f := newCacheFixture(t, baselineDepth)
	ctx := context.Background()
	var served [][]Point
	var kept [][]Point
	for i := range seriesHeadroom + 5 { // past the room kept for new points: one copy
		var pts map[string][]Point
		var err error
		n := f.reads(func() { pts, err = f.h.view(ctx, f.asset).read(ctx, f.keys[0], f.hour(baselineDepth+i)) })
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && n != 0 {
			t.Fatalf("run %d read %d series from the store: the test would not see the cache's points", i, n)
		}
		served = append(served, pts[f.keys[0].subject])
		kept = append(kept, slices.Clone(pts[f.keys[0].subject]))
		f.mustRecord(f.h, f.hour(baselineDepth+i), Pass, float64(i), false)
	}
	for i := range served {
		if !reflect.DeepEqual(served[i], kept[i]) {
			t.Fatalf("the points served to run %d changed afterwards", i)
		}
	}
	f.check("after the runs", f.hour(baselineDepth+seriesHeadroom+5), f.hour(baselineDepth))
}
