package quality

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// TestInsertPointsChunks: a run with more points than one INSERT carries writes them all, each
// with its own values (baseline, bounds, incident), in the order given.
func TestInsertPointsChunks(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	const asset = "warehouse:sqlite/main.keys"
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	n := pointsPerInsert*2 + 3
	var points []metricRow
	for i := range n {
		pt := metricRow{metric: "rows_by_key", subject: fmt.Sprintf("k%d", i), value: float64(i), status: Pass}
		if i%2 == 1 {
			pt.status, pt.baseline = Warn, &Baseline{Median: float64(i), Low: float64(i) - 1, High: float64(i) + 1}
		}
		points = append(points, pt)
	}
	writeRun(t, st, asset, at, points)
	rows, err := st.DB.QueryContext(ctx, `SELECT subject, value, status, baseline, expected_low, expected_high FROM metric_points WHERE asset = ? ORDER BY id`, asset)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var subject, status string
		var v float64
		var base, lo, hi sql.NullFloat64
		if err := rows.Scan(&subject, &v, &status, &base, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		want := points[i]
		if subject != want.subject || v != want.value || status != string(want.status) || base.Valid != (want.baseline != nil) ||
			want.baseline != nil && (base.Float64 != want.baseline.Median || lo.Float64 != want.baseline.Low || hi.Float64 != want.baseline.High) {
			t.Fatalf("row %d = %s %v %s %v %v %v, want %+v", i, subject, v, status, base, lo, hi, want)
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("%d points written, want %d", i, n)
	}
}

// writeRun records one run of asset at at with its points, through insertPoints.
func writeRun(t testing.TB, st *store.Store, asset string, at time.Time, points []metricRow) {
	t.Helper()
	ctx := context.Background()
	err := st.Write(ctx, func(tx *sql.Tx) error {
		var runID int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO check_runs (asset, started_at, finished_at, status) VALUES (?, ?, ?, 'pass') RETURNING id`,
			asset, store.Timestamp(at), store.Timestamp(at)).Scan(&runID); err != nil {
			return err
		}
		return insertPoints(ctx, tx, runID, asset, at, points)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkBaselineReads times a run's five baseline reads over a history of 2,000 earlier runs
// (DW_TEST_STORE=postgres for the PostgreSQL store) and over an empty one, where the statement's
// preparation is most of the cost; 2000_runs_cached is the same five read through the series
// cache, as a monitor's next run does: one version read, then each series served from memory.
func BenchmarkBaselineReads(b *testing.B) {
	ctx := context.Background()
	st := storetest.Open(b)
	h := NewHistory(st)
	const asset = "warehouse:sqlite/main.events"
	type key struct{ metric, subject string }
	keys := []key{{"rows_per_hour", ""}, {"freshness_lag_seconds", "at"}, {"null_rate", "a"}, {"null_rate", "b"}, {"null_rate", "c"}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	read := func(b *testing.B, before time.Time) {
		for b.Loop() {
			for _, k := range keys {
				if _, err := h.Series(ctx, asset, k.metric, k.subject, before, 24*7*8); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("empty", func(b *testing.B) { read(b, t0) })
	for i := range 2000 {
		var points []metricRow
		for j, k := range keys {
			points = append(points, metricRow{metric: k.metric, subject: k.subject, value: float64(i + j), status: Pass})
		}
		writeRun(b, st, asset, t0.Add(time.Duration(i)*time.Hour), points)
	}
	// Settled, as a History's flushes leave all but its last few hundred points.
	if _, err := st.DB.ExecContext(ctx, store.SettlePointsSQL); err != nil {
		b.Fatal(err)
	}
	b.Run("2000_runs", func(b *testing.B) { read(b, t0.Add(2000*time.Hour)) })
	b.Run("2000_runs_cached", func(b *testing.B) {
		before := t0.Add(2000 * time.Hour)
		for b.Loop() {
			v := h.view(ctx, asset)
			for _, k := range keys {
				pts, err := v.read(ctx, singleSeries(k.metric, k.subject), before)
				if err != nil || len(pts[k.subject]) != baselineDepth {
					b.Fatalf("%d points, %v", len(pts[k.subject]), err)
				}
			}
		}
	})
}

// BenchmarkHistoryRuns times get_check_history's read (History.Runs: the newest runs, each with
// its metric points) over a history of DW_BENCH_RUNS runs (default 20,000) of six points each,
// spread over 20 assets, as about six weeks of hourly monitors on 20 tables leave
// (DW_TEST_STORE=postgres for the PostgreSQL store).
func BenchmarkHistoryRuns(b *testing.B) {
	ctx := context.Background()
	runs := 20000
	if s := os.Getenv("DW_BENCH_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			b.Fatalf("DW_BENCH_RUNS=%q: want an integer ≥ 100", s)
		}
		runs = n
	}
	st := storetest.Open(b)
	h := NewHistory(st)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	metrics := []metricRow{{metric: "rows_per_hour"}, {metric: "freshness_lag_seconds", subject: "at"},
		{metric: "null_rate", subject: "a"}, {metric: "null_rate", subject: "b"}, {metric: "null_rate", subject: "c"}, {metric: "duplicate_keys", subject: "id"}}
	asset := func(i int) string { return fmt.Sprintf("warehouse:sqlite/main.table_%02d", i%20) }
	for start := 0; start < runs; start += 1000 {
		err := st.Write(ctx, func(tx *sql.Tx) error {
			for i := start; i < min(start+1000, runs); i++ {
				at := t0.Add(time.Duration(i) * 3 * time.Minute)
				var runID int64
				if err := tx.QueryRowContext(ctx, `INSERT INTO check_runs (asset, started_at, finished_at, status) VALUES (?, ?, ?, 'pass') RETURNING id`,
					asset(i), store.Timestamp(at), store.Timestamp(at)).Scan(&runID); err != nil {
					return err
				}
				points := slices.Clone(metrics)
				for j := range points {
					points[j].value, points[j].status = float64(i+j), Pass
				}
				if err := insertPoints(ctx, tx, runID, asset(i), at, points); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.DB.ExecContext(ctx, store.SettlePointsSQL); err != nil {
		b.Fatal(err)
	}
	if st.Dialect() == store.PostgreSQL {
		// As autovacuum leaves a mature store: without statistics the planner guesses thousands
		// of points for 50 runs and starts parallel workers, which cost more than the read.
		if _, err := st.DB.ExecContext(ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		q    HistoryQuery
	}{
		{"newest_50", HistoryQuery{Limit: 50}},
		{"one_asset_null_rate_50", HistoryQuery{Asset: "table_07", Metric: "null_rate", Limit: 50}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				out, err := h.Runs(ctx, c.q)
				if err != nil || len(out) != 50 || len(out[0].Metrics) == 0 {
					b.Fatalf("%d runs, %v", len(out), err)
				}
			}
		})
	}
}

// TestRunsReadEachRunsPointsThroughTheRunIndex checks get_check_history's read: every listed run
// carries exactly its own points, in the order recorded, from both halves (settled and pending),
// filtered by metric and subject; and on SQLite the one statement that reads them seeks the run
// index instead of scanning every point.
func TestRunsReadEachRunsPointsThroughTheRunIndex(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	h := NewHistory(st)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	assets := []string{"warehouse:sqlite/main.orders", "warehouse:sqlite/main.refunds"}
	want := map[time.Time][]string{}
	for i := range 6 {
		at := t0.Add(time.Duration(i) * time.Hour)
		var points []metricRow
		for j := range i%3 + 1 {
			points = append(points, metricRow{metric: []string{"null_rate", "rows_per_hour"}[j%2], subject: fmt.Sprintf("c%d", j), value: float64(10*i + j), status: Pass})
			want[at] = append(want[at], fmt.Sprintf("%s/c%d=%d", points[j].metric, j, 10*i+j))
		}
		writeRun(t, st, assets[i%2], at, points)
		if i == 3 { // the first four runs settled, the last two pending
			if _, err := st.DB.ExecContext(ctx, store.SettlePointsSQL); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := func(q HistoryQuery) map[time.Time][]string {
		t.Helper()
		runs, err := h.Runs(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		out := map[time.Time][]string{}
		for _, r := range runs {
			out[r.StartedAt] = []string{}
			for _, m := range r.Metrics {
				out[r.StartedAt] = append(out[r.StartedAt], fmt.Sprintf("%s/%s=%g", m.Metric, m.Subject, m.Value))
			}
		}
		return out
	}
	if all := got(HistoryQuery{Limit: 10}); fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("runs' points\n got %v\nwant %v", all, want)
	}
	// Filtered: only runs holding a matching point are listed, each with its matching points.
	filtered := got(HistoryQuery{Asset: "refunds", Metric: "rows_per_hour", Subject: "c1", Limit: 10})
	wantFiltered := map[time.Time][]string{t0.Add(time.Hour): {"rows_per_hour/c1=11"}, t0.Add(5 * time.Hour): {"rows_per_hour/c1=51"}}
	if fmt.Sprint(filtered) != fmt.Sprint(wantFiltered) {
		t.Fatalf("filtered runs\n got %v\nwant %v", filtered, wantFiltered)
	}
	// A table name may hold ':' (a quoted identifier): the name and the URN both find its runs.
	quoted := "warehouse:postgres/shop.public.a:b"
	writeRun(t, st, quoted, t0.Add(9*time.Hour), []metricRow{{metric: "rows_per_hour", value: 90, status: Pass}})
	for _, name := range []string{quoted, "a:b", "public.a:b"} {
		if runs := got(HistoryQuery{Asset: name, Limit: 10}); len(runs) != 1 || fmt.Sprint(runs[t0.Add(9*time.Hour)]) != "[rows_per_hour/=90]" {
			t.Errorf("runs of %q: %v", name, runs)
		}
	}
	if runs := got(HistoryQuery{Asset: "warehouse:postgres/shop.public.nothing", Limit: 10}); len(runs) != 0 {
		t.Errorf("a URN without runs found %v", runs)
	}
	if st.Dialect() != store.SQLite {
		return
	}
	q, args := runMetricsQuery([]int64{1, 2, 3}, HistoryQuery{Metric: "null_rate"})
	if p := storetest.ExplainSQLite(t, st, q, args...); !strings.Contains(p, "INDEX metric_points_by_run (run_id=?)") || strings.Contains(p, "SCAN metric_points") {
		t.Fatalf("the runs' points are read with %q, want a search of metric_points_by_run", p)
	}
}

// TestRunsAreListedNewestFirstFromAnIndex checks the list get_check_history reads: whatever the
// filters, the runs come newest first from an index (no sort of every run, no scan of the table),
// so the read stops at the limit. On SQLite, by EXPLAIN QUERY PLAN.
func TestRunsAreListedNewestFirstFromAnIndex(t *testing.T) {
	st := storetest.Open(t)
	asset := "warehouse:sqlite/main.orders"
	for _, c := range []struct {
		name   string
		q      HistoryQuery
		assets []string
		index  string
	}{
		{"every asset", HistoryQuery{Limit: 50}, nil, "check_runs_by_started"},
		{"since", HistoryQuery{Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Limit: 50}, nil, "check_runs_by_started"},
		{"one asset", HistoryQuery{Limit: 50}, []string{asset}, "check_runs_by_asset"},
		{"one asset's metric", HistoryQuery{Metric: "null_rate", Subject: "amount", Limit: 50}, []string{asset}, "check_runs_by_asset"},
		{"a monitor", HistoryQuery{Monitor: "orders-hourly", Limit: 1}, nil, "check_runs_by_monitor"},
	} {
		q, args := runsQuery(c.q, c.assets)
		p := storetest.ExplainSQLite(t, st, q, args...)
		if !strings.Contains(p, "INDEX "+c.index) || strings.Contains(p, "TEMP B-TREE FOR ORDER BY") || strings.Contains(p, "SCAN metric_points") {
			t.Errorf("%s: the runs are listed with %q, want %s newest first with no sort", c.name, p, c.index)
		}
	}
	// Several assets named by one suffix are one search of the asset index per asset.
	q, args := runsQuery(HistoryQuery{Limit: 50}, []string{asset, "warehouse:postgres/shop.public.orders"})
	if p := storetest.ExplainSQLite(t, st, q, args...); !strings.Contains(p, "INDEX check_runs_by_asset (asset=?") {
		t.Errorf("two assets' runs are listed with %q, want searches of check_runs_by_asset", p)
	}
}
