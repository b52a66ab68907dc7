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

// TestSeriesBatchMatchesSeries: the batched baseline read answers every series exactly as the
// per-series read does — the same eligible points, newest first, the same depth — including a
// series without points, points inside an open incident, a failed point whose incident was judged
// a false positive, and a series longer than the depth.
func TestSeriesBatchMatchesSeries(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	h := NewHistory(st)
	const asset = "warehouse:sqlite/main.events"
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ts := func(hours int) string { return store.Timestamp(t0.Add(time.Duration(hours) * time.Hour)) }
	err := st.Write(ctx, func(tx *sql.Tx) error {
		var runID, openInc, falsePos int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO check_runs (asset, started_at, finished_at, status) VALUES (?, ?, ?, 'pass') RETURNING id`,
			asset, ts(0), ts(0)).Scan(&runID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO incidents (asset, failure_mode, status, severity, opened_at, updated_at) VALUES (?, 'volume', 'open', 'sev2', ?, ?) RETURNING id`,
			asset, ts(20), ts(20)).Scan(&openInc); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO incidents (asset, failure_mode, status, severity, opened_at, updated_at, resolved_at) VALUES (?, 'null_rate', 'false_positive', 'sev2', ?, ?, ?) RETURNING id`,
			asset, ts(5), ts(5), ts(6)).Scan(&falsePos); err != nil {
			return err
		}
		add := func(metric, subject string, hour int, v float64, status Status, inc any) {
			if _, err := tx.ExecContext(ctx, `INSERT INTO metric_points (run_id, asset, metric, subject, at, value, status, incident_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				runID, asset, metric, subject, ts(hour), v, string(status), inc); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 30 { // longer than the depth below; hours 20 and later fall in the open incident
			add("rows_per_hour", "", i, float64(100+i), Pass, nil)
		}
		add("null_rate", "amount", 1, 0.1, Pass, nil)
		add("null_rate", "amount", 5, 0.9, Fail, falsePos) // a false positive trains the baseline
		add("null_rate", "amount", 7, 0.8, Warn, nil)      // a warning without a judged incident does not
		add("null_rate", "user_id", 2, 0.2, Pass, nil)
		add("null_rate", "amount", 40, 0.3, Pass, nil)  // after `before`
		add("null_rate", "amount_x", 3, 0.4, Pass, nil) // a subject that only shares a prefix
		add("rows_per_hour", "", 3, 5, Pass, nil)       // another asset's point must not appear
		_, err := tx.ExecContext(ctx, `UPDATE metric_points SET asset = 'warehouse:sqlite/main.other' WHERE id = (SELECT max(id) FROM metric_points)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := []seriesKey{{"rows_per_hour", ""}, {"null_rate", "amount"}, {"null_rate", "user_id"}, {"null_rate", "absent"}, {"freshness_lag_seconds", "ts"}}
	before := t0.Add(35 * time.Hour)
	const depth = 12
	got, err := h.SeriesBatch(ctx, asset, keys, before, depth)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(keys) {
		t.Fatalf("batch answered %d series, want every one of the %d asked for", len(got), len(keys))
	}
	for _, k := range keys {
		want, err := h.Series(ctx, asset, k.metric, k.subject, before, depth)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got[k]) != fmt.Sprint(want) {
			t.Errorf("%v: batch %v, one by one %v", k, got[k], want)
		}
	}
	// The figures themselves: rows_per_hour keeps its 12 newest eligible points (hours 19 back to
	// 8: the open incident from hour 20 hides the rest); amount keeps the pass and the false positive.
	if r := got[seriesKey{"rows_per_hour", ""}]; len(r) != depth || r[0].Value != 119 || r[depth-1].Value != 108 {
		t.Errorf("rows_per_hour = %v, want hours 19 … 8", r)
	}
	if a := got[seriesKey{"null_rate", "amount"}]; len(a) != 2 || a[0].Value != 0.9 || a[1].Value != 0.1 {
		t.Errorf("null_rate amount = %v, want [0.9 0.1]", a)
	}
	if n := got[seriesKey{"null_rate", "absent"}]; len(n) != 0 {
		t.Errorf("absent series = %v, want none", n)
	}
}

// TestSeriesBatchManyKeys: more series than one statement asks for are read in several, none lost.
func TestSeriesBatchManyKeys(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	h := NewHistory(st)
	const asset = "warehouse:sqlite/main.wide"
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	n := seriesBatchSize*2 + 7
	var keys []seriesKey
	var points []metricRow
	for i := range n {
		k := seriesKey{"null_rate", fmt.Sprintf("c%04d", i)}
		keys = append(keys, k)
		points = append(points, metricRow{metric: k.metric, subject: k.subject, value: float64(i), status: Pass})
	}
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
	got, err := h.SeriesBatch(ctx, asset, keys, at.Add(time.Hour), 5)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if p := got[k]; len(p) != 1 || p[0].Value != float64(i) || !p[0].At.Equal(at) {
			t.Fatalf("%v = %v, want one point of %d at %s", k, p, i, at)
		}
	}
}

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
