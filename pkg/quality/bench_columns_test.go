package quality_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// BenchmarkColumnMetrics measures the column check on a 10-column table (every column metric its
// type allows, distinct excepted: 7 numeric columns, 2 text, 1 boolean, beside the timestamp)
// against the best hand-written SQL for the same numbers: one ungrouped aggregate, written with
// the engine's own aggregates and again in doubles, the faster of the two being the bar. All run
// interleaved in a random order each round, so load from other
// processes falls on both alike. DW_BENCH_ROWS sets the size (default 100000); each engine's table
// is built once per run:
//
//	DW_BENCH_ROWS=10000000 go test ./pkg/quality -run '^$' -bench ColumnMetrics -benchtime 3x -timeout 90m
func BenchmarkColumnMetrics(b *testing.B) {
	n := benchRows(b)
	since := time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	until := since.Add(time.Duration(n/1000+1) * time.Hour)
	numeric := []string{"id", "account_id", "cost_micros", "qty", "price", "discount", "latency_ms"}
	text := []string{"region", "sku"}
	parent := b
	for _, eng := range []string{"sqlite", "postgres"} {
		// A sub-benchmark's function runs again for each b.N Go tries, and building 10 M rows
		// takes minutes: the table is built on the first call, owned by the parent (which Go
		// runs once), and skipped entirely when -bench filters the engine out.
		var wh *warehouse.DB
		var raw *sql.DB
		b.Run(eng, func(b *testing.B) {
			if wh == nil {
				wh, raw = columnBenchTable(parent, eng, n)
			}
			lo, hi, where := any(warehouse.BindTime(warehouse.TimeTextSpace, since)), any(warehouse.BindTime(warehouse.TimeTextSpace, until)), "at >= ? AND at < ?"
			if eng == "postgres" {
				lo, hi, where = since, until, "at >= $1 AND at < $2"
			}
			// Two hand-written formulations, and the faster one is the bar: the engine's own
			// aggregates (exact: SQLite's avg and PostgreSQL's numeric sums of integers), and the
			// same numbers in doubles (SQLite total(), PostgreSQL float8 casts).
			hand := func(float bool) []string {
				num := func(c string) string { return c }
				if float && eng == "postgres" {
					num = func(c string) string { return "CAST(" + c + " AS float8)" }
				}
				sum := func(e string) string {
					if float && eng == "sqlite" {
						return "total(" + e + ")"
					}
					return "sum(" + e + ")"
				}
				avg := func(e string) string {
					if float && eng == "sqlite" {
						return "total(" + e + ") / count(" + e + ")"
					}
					return "avg(" + e + ")"
				}
				stddev := func(c string) string { return "stddev_samp(" + num(c) + ")" }
				if eng == "sqlite" { // no stddev: the sum of squares, as the check reads it
					stddev = func(c string) string { return "total(" + c + " * " + c + ")" }
				}
				var terms []string
				for _, c := range numeric {
					terms = append(terms, "count("+c+")", "count(CASE WHEN "+c+" = 0 THEN 1 END)", "count(CASE WHEN "+c+" < 0 THEN 1 END)",
						"min("+c+")", "max("+c+")", avg(num(c)), sum(num(c)), stddev(c))
				}
				for _, c := range text {
					terms = append(terms, "count("+c+")", "count(CASE WHEN "+c+" = '' THEN 1 END)", "min(length("+c+"))", "max(length("+c+"))", avg("length("+c+")"))
				}
				terms = append(terms, "count(billable)", "count(CASE WHEN billable THEN 1 END)")
				return []string{"SELECT count(*), " + strings.Join(terms, ", ") + " FROM bench_costs WHERE " + where}
			}
			native, doubles := hand(false), hand(true)
			st := openStoreB(b)
			w := quality.Window{Since: since, Until: until, Label: "in the window", TimeZone: "UTC"}
			c := quality.NewChecker(wh, quality.NewHistory(st), func() time.Time { return until })
			results := 0
			rqc := func() {
				rep, err := c.Run(context.Background(), quality.Request{Table: "bench_costs", TimestampColumn: "at", Window: w, Checks: []quality.Check{quality.Column}})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Queries != 1 {
					b.Fatalf("the column check sent %d queries, want 1", rep.Queries)
				}
				results = len(rep.Results)
			}
			secs := interleave(b, []func(){rqc, func() { runSQL(b, raw, native, lo, hi) }, func() { runSQL(b, raw, doubles, lo, hi) }})
			sec := func(j int) float64 { return secs[j] }
			b.ReportMetric(sec(0), "column_check_s")
			b.ReportMetric(sec(1), "handwritten_native_s")
			b.ReportMetric(sec(2), "handwritten_doubles_s")
			b.ReportMetric(sec(0)/min(sec(1), sec(2)), "check/best")
			b.ReportMetric(float64(results), "metrics")
		})
	}
}

func columnBenchTable(b *testing.B, eng string, n int) (*warehouse.DB, *sql.DB) {
	b.Helper()
	start := time.Now()
	ddl := `CREATE TABLE bench_costs (id BIGINT NOT NULL, at TIMESTAMP NOT NULL, account_id INTEGER, cost_micros BIGINT, qty INTEGER,
  price DOUBLE PRECISION, discount DOUBLE PRECISION, latency_ms INTEGER, region TEXT, sku TEXT, billable BOOLEAN)`
	cols := `i, {ts}, i % 5000, CASE WHEN i % 97 = 0 THEN 0 ELSE ({i} * 7919) % 1000000 END, 1 + i % 9,
  (i % 10000) / 100.0, CASE WHEN i % 11 = 0 THEN -0.5 ELSE 0 END, NULLIF(i % 250, 7),
  CASE WHEN i % 13 = 0 THEN '' ELSE 'eu-' || (i % 5) END, 'sku-' || (i % 1234), i % 4 <> 0`
	var dsn, driver, fill string
	last := strconv.Itoa(n - 1)
	switch eng {
	case "sqlite":
		dsn, driver = filepath.Join(b.TempDir(), "bench.db"), "sqlite3"
		fill = "INSERT INTO bench_costs WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < " + last + ") SELECT " +
			strings.NewReplacer("{ts}", "strftime('%Y-%m-%d %H:%M:%S', '2025-12-01', '+' || (i / 1000) || ' hours')", "{i}", "i").Replace(cols) + " FROM seq"
	case "postgres":
		dsn, driver = pgtest.Shared(b).NewDatabase(b), "pgx"
		fill = "INSERT INTO bench_costs SELECT " + strings.NewReplacer("{ts}", "timestamp '2025-12-01' + (i / 1000) * interval '1 hour'", "{i}", "i::bigint").Replace(cols) +
			" FROM generate_series(0, " + last + ") i"
	}
	rw, err := sql.Open(driver, dsn+map[string]string{"sqlite": "?_journal_mode=OFF&_synchronous=OFF", "postgres": ""}[eng])
	if err != nil {
		b.Fatal(err)
	}
	analyze := map[string]string{"sqlite": "ANALYZE", "postgres": "VACUUM ANALYZE bench_costs"}[eng]
	for _, s := range []string{ddl, fill, analyze} {
		if _, err := rw.Exec(s); err != nil {
			b.Fatalf("%v\n%s", err, s)
		}
	}
	rw.Close()
	wh, err := warehouse.Connect(&config.Warehouse{Engine: eng, DSN: dsn, StatementTimeout: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	rawDSN := dsn
	if eng == "sqlite" {
		rawDSN = "file:" + dsn + "?mode=ro"
	}
	raw, err := sql.Open(driver, rawDSN)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { wh.Close(); raw.Close() })
	b.Logf("%s: loaded %d rows × 11 columns in %s", eng, n, time.Since(start).Round(time.Millisecond))
	return wh, raw
}
