package quality

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// planQueries lists every statement a plan sends to the warehouse.
func (p *plan) planQueries() []*query {
	qs := []*query{p.profile, p.hourly, p.distinct, p.loadQ}
	switch {
	case p.has(Freshness) && p.probe != nil:
		qs = append(qs, &query{sql: p.probe.sql, args: p.probe.args}) // the layout read, which answers freshness
	case p.has(Freshness) && !p.freshFromProfile:
		qs = append(qs, p.fresh)
	}
	if p.dup != nil {
		qs = append(qs, p.dup.count, p.dup.sample)
	}
	if p.dim != nil {
		qs = append(qs, p.dim.grouped)
	}
	for _, c := range p.custom {
		qs = append(qs, c.count, c.sample)
	}
	var out []*query
	for _, q := range qs {
		if q != nil {
			out = append(out, q)
		}
	}
	return out
}

// todayTable: 4,000 hours of 50 rows (200,000) with an index on the timestamp; "today" holds
// 16 hours of them (800 rows, 0.4 %).
const (
	todaySQLite = `INSERT INTO events WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < 199999)
SELECT 'e-' || i, i % 300, strftime('%Y-%m-%d %H:%M:%S', '2025-06-01', '+' || (i * 72) || ' seconds'), CASE WHEN i % 7 = 0 THEN NULL ELSE i END FROM seq`
	todayPostgres = `INSERT INTO events SELECT 'e-' || i, i % 300, timestamp '2025-06-01' + i * interval '72 seconds', CASE WHEN i % 7 = 0 THEN NULL ELSE i END FROM generate_series(0, 199999) i`
)

// todayRequest asks every check that reads the window, over today.
func todayRequest(t *testing.T, now time.Time) Request {
	w, err := ParseWindow(WindowSpec{Window: "today", TimeZone: "UTC"}, now)
	if err != nil {
		t.Fatal(err)
	}
	return Request{Table: "events", TimestampColumn: "at", Window: w, KeyColumns: []string{"account"},
		Dimension:  &DimensionSpec{Column: "account"},
		Checks:     []Check{Volume, VolumeByHour, Freshness, NullRate, Uniqueness, Column, Dimension, Custom},
		Assertions: []Assertion{{Name: "no_negative", SQL: "SELECT * FROM events WHERE bytes < 0 AND at >= {{window_start}} AND at < {{window_end}}"}}}
}

// TestTodayTouchesOnlyTodaysRows: on a table with an index on the timestamp, every statement a
// check over today sends reads the index's range for today (EXPLAIN QUERY PLAN on SQLite, EXPLAIN
// on PostgreSQL): none scans the table.
func TestTodayTouchesOnlyTodaysRows(t *testing.T) {
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).Add(199999 * 72 * time.Second) // the newest row
	ddl := []string{`CREATE TABLE events (id TEXT NOT NULL, account INTEGER, at TIMESTAMP NOT NULL, bytes BIGINT)`, `CREATE INDEX events_at ON events (at)`}
	t.Run("sqlite", func(t *testing.T) {
		wh := loadedWarehouse(t, "sqlite", filepath.Join(t.TempDir(), "wh.db"), append(ddl, todaySQLite, "ANALYZE"))
		for _, q := range todayPlan(t, wh, now) {
			rows, err := wh.QueryAll(context.Background(), "EXPLAIN QUERY PLAN "+q.sql, q.args, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, r := range rows.Rows {
				lines = append(lines, fmt.Sprint(r[len(r)-1]))
			}
			plan := strings.Join(lines, "\n")
			// The layout read (which answers freshness) takes the smallest and largest value, each
			// a seek to one end of the index: a SEARCH with no range.
			seeks := slices.Contains(lines, "SEARCH main.events USING COVERING INDEX events_at")
			if !strings.Contains(plan, "USING INDEX events_at (at>? AND at<?)") && !strings.Contains(plan, "USING COVERING INDEX events_at (at>? AND at<?)") &&
				!strings.Contains(plan, "USING COVERING INDEX events_at (at<?)") && !seeks || strings.Contains(plan, "SCAN main.events") {
				t.Errorf("%s\nplan:\n%s", q.sql, plan)
			}
		}
		// Over the whole table the pass scans it (a range over the index would look every row
		// up), while the hourly counts still walk the index; the counts are the table's.
		ctx := context.Background()
		req := todayRequest(t, now)
		req.Window.Since, req.Window.Until = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), now.Add(time.Second)
		req.Checks = []Check{Volume, NullRate}
		ti, err := wh.Resolve(ctx, "events")
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewChecker(wh, nil, func() time.Time { return now }).plan(ctx, wh, ti, req, req.Checks, now)
		if err != nil {
			t.Fatal(err)
		}
		for q, want := range map[*query]string{p.profile: "SCAN main.events", p.hourly: "USING COVERING INDEX events_at (at>? AND at<?)"} {
			rows, err := wh.QueryAll(ctx, "EXPLAIN QUERY PLAN "+q.sql, q.args, 1000)
			if err != nil || !strings.Contains(fmt.Sprint(rows.Rows), want) {
				t.Errorf("%s: %v %v, want %s", q.sql, rows.Rows, err, want)
			}
		}
		rep, err := NewChecker(wh, nil, func() time.Time { return now }).Run(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var hourly int64
		for _, r := range rep.Results {
			for _, h := range r.Hours {
				hourly += h.Rows
			}
			if r.Metric == "rows_per_hour" && (*r.Rows != 200000 || hourly != 168*50 || len(r.Hours) != 168) {
				t.Errorf("whole table: %d rows, %d by hour in the last %d hours", *r.Rows, hourly, len(r.Hours))
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		wh := loadedWarehouse(t, "postgres", pgtest.Shared(t).NewDatabase(t), append(ddl, todayPostgres, "VACUUM ANALYZE events"))
		for _, q := range todayPlan(t, wh, now) {
			rows, err := wh.QueryAll(context.Background(), "EXPLAIN "+q.sql, q.args, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, r := range rows.Rows {
				lines = append(lines, fmt.Sprint(r[0]))
			}
			plan := strings.Join(lines, "\n")
			if !strings.Contains(plan, "Index") || !strings.Contains(plan, "Index Cond: ((at ") || strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s\nplan:\n%s", q.sql, plan)
			}
		}
	})
}

// loadedWarehouse runs stmts on a fresh database of engine at dsn and connects to it.
func loadedWarehouse(t *testing.T, engine, dsn string, stmts []string) *warehouse.DB {
	t.Helper()
	rw, err := sql.Open(map[string]string{"sqlite": "sqlite3", "postgres": "pgx"}[engine], dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	for _, s := range stmts {
		if _, err := rw.Exec(s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
	wh, err := warehouse.Connect(&config.Warehouse{Engine: engine, DSN: dsn, StatementTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close() })
	return wh
}

// todayPlan plans todayRequest on wh and returns its statements.
func todayPlan(t *testing.T, wh *warehouse.DB, now time.Time) []*query {
	t.Helper()
	ctx := context.Background()
	c := NewChecker(wh, nil, func() time.Time { return now })
	req := todayRequest(t, now)
	ti, err := wh.Resolve(ctx, req.Table)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.plan(ctx, c.wh, ti, req, req.Checks, now)
	if err != nil {
		t.Fatal(err)
	}
	qs := p.planQueries()
	if len(qs) < 6 {
		t.Fatalf("only %d statements planned", len(qs))
	}
	if _, err := c.Run(ctx, req); err != nil { // and the plan runs
		t.Fatal(err)
	}
	return qs
}

// TestEpochHourStartFloors: the hour of a pre-1970 or fractional epoch value is the hour below it
// (CAST alone truncates towards zero, which would put -1 in the hour starting at 0).
func TestEpochHourStartFloors(t *testing.T) {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := hourStartSQL(warehouse.TimeEpoch)
	for v, want := range map[float64]int64{-1: -3600, -0.5: -3600, -3600: -3600, -3600.5: -7200, 0: 0, 0.5: 0, 3599.9: 0, 3600: 3600, 1764554400.25: 1764554400} {
		var got int64
		if err := db.QueryRow("SELECT "+start("v")+" FROM (SELECT ? AS v)", v).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("hour of %v = %d, want %d", v, got, want)
		}
	}
}
