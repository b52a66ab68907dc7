package quality

import (
	"context"
	"database/sql"
	"fmt"
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
