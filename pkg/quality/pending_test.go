package quality

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func countPending(t *testing.T, st *store.Store) int {
	t.Helper()
	var n int
	if err := st.DB.QueryRow(`SELECT count(*) FROM metric_points WHERE settled = 0`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Points a run writes pending are read as the settled ones are, and settling them changes no
// read and no version: a cached series stays valid across the flush.
func TestPendingPointsAreReadAsSettledOnes(t *testing.T) {
	ctx := context.Background()
	f := newCacheFixture(t, 48) // 48 settled hours
	writer := NewHistory(f.st)
	for i := 48; i < 60; i++ {
		status := Pass
		if i%5 == 0 {
			status = Warn // not eligible: the halves apply the same rule
		}
		f.mustRecord(writer, f.hour(i), status, float64(i), false)
	}
	// The writer's first record settled what was pending, its own points too.
	if n := countPending(t, f.st); n != 11*len(f.keys) {
		t.Fatalf("%d pending points after 12 runs, want %d", n, 11*len(f.keys))
	}
	ats := []time.Time{f.hour(20), f.hour(49), f.hour(55), f.hour(59), f.hour(60), f.hour(80)}
	read := func() map[string]map[string][]Point {
		out := map[string]map[string][]Point{}
		for _, k := range f.keys {
			for _, at := range ats {
				for _, limit := range []int{3, 20, 1000} {
					k.limit = limit
					got, err := f.ref.read(ctx, f.asset, k, at)
					if err != nil {
						t.Fatal(err)
					}
					out[fmt.Sprintf("%s/%s/%s/%d", k.metric, k.subject, at, limit)] = got
				}
			}
		}
		return out
	}
	before := read()
	if len(before) != len(f.keys)*len(ats)*3 {
		t.Fatalf("%d reads kept, want %d", len(before), len(f.keys)*len(ats)*3)
	}
	if pts := before[fmt.Sprintf("rows_per_hour//%s/3", f.hour(60))][""]; len(pts) != 3 || !pts[0].At.Equal(recordedAt(f.hour(59))) {
		t.Fatalf("newest three points before hour 60: %v, want the pending hour 59 first", pts)
	}
	f.check("before settling", ats...) // the cache now holds the series
	version, err := f.h.seriesVersion(ctx, f.asset)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.DB.Exec(store.SettlePointsSQL); err != nil {
		t.Fatal(err)
	}
	if n := countPending(t, f.st); n != 0 {
		t.Fatalf("%d pending points after settling", n)
	}
	if v, err := f.h.seriesVersion(ctx, f.asset); err != nil || v != version {
		t.Fatalf("version after settling: %d (%v), want %d unchanged", v, err, version)
	}
	if after := read(); !reflect.DeepEqual(after, before) {
		t.Fatal("settling changed what a read returns")
	}
	if n := f.reads(func() { f.check("after settling", ats...) }); n != 0 {
		t.Fatalf("the cache read %d series again after a flush that changed nothing", n)
	}
}

// A flush between a series read's two statements loses no point and counts none twice: the
// pending half is read first, and what the flush moved is found again in the settled half.
func TestASeriesReadAcrossAFlushSeesEveryPointOnce(t *testing.T) {
	ctx := context.Background()
	f := newCacheFixture(t, 24)
	writer := NewHistory(f.st)
	for i := 24; i < 30; i++ {
		f.mustRecord(writer, f.hour(i), Pass, float64(i), false)
	}
	if countPending(t, f.st) == 0 {
		t.Fatal("nothing pending to flush")
	}
	want, err := f.ref.read(ctx, f.asset, singleSeries("rows_per_hour", ""), f.hour(40))
	if err != nil {
		t.Fatal(err)
	}
	reader := NewHistory(f.st)
	reader.betweenHalves = func() {
		if _, err := f.st.DB.Exec(store.SettlePointsSQL); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{3, 10, 1000, 0} {
		// The last six runs pending again, as they were written.
		if _, err := f.st.DB.Exec(`UPDATE metric_points SET settled = 0 WHERE at >= ?`, store.Timestamp(f.hour(24))); err != nil {
			t.Fatal(err)
		}
		k := singleSeries("rows_per_hour", "")
		k.limit = limit
		got, err := reader.read(ctx, f.asset, k, f.hour(40))
		if err != nil {
			t.Fatal(err)
		}
		w := want[""]
		if limit > 0 && limit < len(w) {
			w = w[:limit]
		}
		if !reflect.DeepEqual(got[""], w) {
			t.Fatalf("limit %d across a flush: %d points %v…, want %d %v…", limit, len(got[""]), head(got[""]), len(w), head(w))
		}
		if limit == 3 && !got[""][0].At.Equal(recordedAt(f.hour(29))) {
			t.Fatalf("newest point %v, want the last run's", got[""][0])
		}
	}
}

// A History settles the pending points every settleEvery points, so readers never scan more
// than about that many of them.
func TestPendingPointsAreSettledInBatches(t *testing.T) {
	f := newCacheFixture(t, 0)
	h := NewHistory(f.st)
	const perRun = 300
	flushes := 0
	for i := 0; i < 12; i++ {
		rep := &Report{Table: "events", Asset: f.asset, Status: Pass, Window: Window{Since: f.hour(i - 1), Until: f.hour(i), Label: "hour"}}
		for j := 0; j < perRun; j++ {
			rep.Results = append(rep.Results, Result{Check: "column", Metric: "distinct", Subject: "c" + string(rune('a'+j%26)) + string(rune('a'+j/26)), Value: float64(j), Status: Pass, recorded: true})
		}
		before := countPending(t, f.st)
		if err := h.record(context.Background(), rep, "m", f.hour(i), false, f.hour(i), nil); err != nil {
			t.Fatal(err)
		}
		n := countPending(t, f.st)
		if n > settleEvery {
			t.Fatalf("run %d: %d pending points, more than %d", i, n, settleEvery)
		}
		if n < before+perRun {
			flushes++
		}
	}
	// The first run (what was pending before), then the run that brings 900 pending to 1,200.
	if flushes != 3 {
		t.Fatalf("%d flushes in 12 runs, want 3 (runs 0, 4 and 8)", flushes)
	}
}

// On SQLite each half of a series read (the statements History.series sends, and the one-statement
// union diagnosis reads) goes through its own partial index, newest first: no scan of the table
// and no sort.
func TestSeriesReadUsesBothIndexes(t *testing.T) {
	f := newCacheFixture(t, 4)
	if f.st.Dialect() != store.SQLite {
		t.Skip("EXPLAIN QUERY PLAN is SQLite's")
	}
	explain := func(q string, args ...any) string { return storetest.ExplainSQLite(t, f.st, q, args...) }
	scans := func(plan string) bool {
		return strings.Contains(plan, "SCAN p ") || strings.HasSuffix(plan, "SCAN p") || strings.Contains(plan, "SCAN metric_points")
	}
	args := []any{f.asset, "rows_per_hour", "", store.Timestamp(f.hour(3)), f.asset, 10}
	for settled, index := range map[bool]string{true: "metric_points_settled", false: "metric_points_pending"} {
		plan := explain(store.PointsHalf(settled, seriesCols, seriesWhere("p.subject = ?"), "at DESC", 10), args...)
		if !strings.Contains(plan, "COVERING INDEX "+index) || scans(plan) {
			t.Fatalf("settled=%v half's plan %q, want a covering read of %s", settled, plan, index)
		}
		if strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") {
			t.Fatalf("settled=%v half sorts instead of reading its index newest first: %q", settled, plan)
		}
	}
	q, qargs := store.PointsQuery("subject, at, value", "p.asset = ? AND p.metric = ? AND p.subject = ? AND p.at < ?", "at DESC",
		[]any{f.asset, "rows_per_hour", "", store.Timestamp(f.hour(3))}, 10)
	all := explain(q, qargs...)
	for _, want := range []string{"metric_points_settled", "metric_points_pending"} {
		if !strings.Contains(all, want) {
			t.Fatalf("plan %q does not use %s", all, want)
		}
	}
	if scans(all) {
		t.Fatalf("plan %q scans the table", all)
	}
	// The flush finds the pending points through their index, not by scanning every point.
	var id, parent, notused int
	var detail string
	if err := f.st.DB.QueryRow("EXPLAIN QUERY PLAN "+store.SettlePointsSQL).Scan(&id, &parent, &notused, &detail); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, "metric_points_pending") {
		t.Fatalf("the flush's plan %q does not use the pending index", detail)
	}
}
