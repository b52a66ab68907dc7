package quality_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// BenchmarkQualityCheck measures run_quality_check (through quality.Checker: catalog resolution,
// the planned queries, baselines and the history write) beside every hand-written formulation of
// the same metrics tried on each engine and beside the engine's bare scan of the window
// (count(*)), on the table of docs/reference/testing.md (performance anchors), as docs/benchmarks.md reports it:
//
//	usage_hourly(usage_id TEXT NOT NULL UNIQUE, account_id INT, hour TIMESTAMP, egress_bytes BIGINT)
//	usage_id='u-'||i, account_id=i%5000, hour=2025-12-01+(i/1000)h, egress NULL when (i*2654435761)%1000<180
//	first without an index on hour (the whole table), then with one (the whole table and today)
//
// Metrics: rows, rows per hour, null count of every nullable column, distinct usage_id (from the
// UNIQUE constraint), newest hour. Two windows: the whole table, and "today" (the last calendar
// day with data, which must touch only that day's rows). DW_BENCH_ROWS sets the size (default
// 100000):
//
//	DW_BENCH_ROWS=10000000 go test ./pkg/quality -run '^$' -bench QualityCheck -benchtime 3x -timeout 90m
func BenchmarkQualityCheck(b *testing.B) {
	n := benchRows(b)
	first, until, today := benchSpan(n)
	for _, eng := range []string{"sqlite", "postgres"} {
		b.Run(eng, func(b *testing.B) {
			wh, raw, exec := benchTable(b, eng, n)
			// First without an index on the timestamp (only the whole table: without an index
			// every formulation of "today" scans it all), then with one.
			b.Run("whole_noindex", func(b *testing.B) { benchQualityWindow(b, eng, wh, raw, first, until, false) })
			exec("CREATE INDEX usage_hourly_hour ON usage_hourly (hour)", benchAnalyze(eng))
			b.Run("whole", func(b *testing.B) { benchQualityWindow(b, eng, wh, raw, first, until, true) })
			b.Run("today", func(b *testing.B) { benchQualityWindow(b, eng, wh, raw, today, until, true) })
		})
	}
}

// benchSpan is the time span of the n-row benchmark table: its first hour, the end of its last
// hour, and the start of "today" (the last calendar day with data).
func benchSpan(n int) (first, until, today time.Time) {
	first = time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	until = first.Add(time.Duration(n/1000+1) * time.Hour)
	return first, until, until.Truncate(24 * time.Hour)
}

// benchAnalyze refreshes the engine's statistics (and on PostgreSQL the visibility map).
func benchAnalyze(eng string) string {
	if eng == "postgres" {
		return "VACUUM ANALYZE usage_hourly"
	}
	return "ANALYZE"
}

// formulation is one hand-written way to compute the check's numbers: its statements, each run
// with the window bounds bound.
type formulation struct {
	name  string
	stmts []string
}

// handWritten lists the formulations tried per engine, with and without an index on the
// timestamp. Each computes every number the check does: rows, rows per hour, the nullable
// columns' counts and the newest hour (from the pass without an index; with one, from one seek,
// as the product does).
func handWritten(eng string, since, until time.Time, indexed bool) []formulation {
	const counts = "count(*), count(account_id), count(hour), count(egress_bytes)"
	where, bucket := "hour >= ? AND hour < ?", "substr(hour, 1, 13)"
	if eng == "postgres" {
		where, bucket = "hour >= $1::timestamp AND hour < $2::timestamp", "date_trunc('hour', hour)"
	}
	grouped := "SELECT " + bucket + ", " + counts + " FROM usage_hourly WHERE " + where + " GROUP BY 1"
	hourly := "SELECT " + bucket + ", count(*) FROM usage_hourly WHERE " + where + " GROUP BY 1"
	if !indexed {
		withMax := "SELECT " + bucket + ", " + counts + ", max(hour) FROM usage_hourly WHERE " + where + " GROUP BY 1"
		agg := "SELECT " + counts + ", max(hour) FROM usage_hourly WHERE " + where
		name := map[bool]string{false: "substr", true: "date_trunc"}[eng == "postgres"]
		return []formulation{
			{"grouped_" + name, []string{withMax}},
			{"agg_plus_grouped_" + name, []string{agg, hourly}},
		}
	}
	newest := "SELECT max(hour) FROM usage_hourly WHERE " + where
	agg := "SELECT " + counts + " FROM usage_hourly WHERE " + where
	var fs []formulation
	if eng == "postgres" {
		fs = []formulation{
			{"grouped_date_trunc", []string{grouped, newest}},
			// The hourly counts read only the index (an index-only scan: the table is vacuumed,
			// so the visibility map is set).
			{"agg_plus_grouped_index_only", []string{agg, hourly, newest}},
			{"agg_plus_range_counts_series", []string{agg, "SELECT h, (SELECT count(*) FROM usage_hourly WHERE hour >= h AND hour < h + interval '1 hour') FROM generate_series(date_trunc('hour', $1::timestamp), $2::timestamp - interval '1 microsecond', interval '1 hour') h", newest}},
			{"agg_plus_range_counts_skip", []string{agg, `WITH RECURSIVE h(s) AS (
  SELECT date_trunc('hour', min(hour)) FROM usage_hourly WHERE ` + where + `
  UNION ALL
  SELECT (SELECT date_trunc('hour', min(hour)) FROM usage_hourly WHERE hour >= h.s + interval '1 hour' AND hour < $2::timestamp) FROM h WHERE h.s IS NOT NULL)
SELECT s, (SELECT count(*) FROM usage_hourly WHERE hour >= s AND hour < s + interval '1 hour') FROM h WHERE s IS NOT NULL`, newest}},
		}
	} else {
		fs = []formulation{
			{"grouped_substr", []string{grouped, newest}},
			{"agg_plus_grouped_substr", []string{agg, hourly, newest}},
			{"agg_plus_range_counts_list", []string{agg, `WITH RECURSIVE h(s) AS (
  SELECT strftime('%Y-%m-%d %H:00:00', ?1)
  UNION ALL
  SELECT strftime('%Y-%m-%d %H:00:00', s, '+1 hour') FROM h WHERE strftime('%Y-%m-%d %H:00:00', s, '+1 hour') < ?2)
SELECT s, (SELECT count(*) FROM usage_hourly WHERE hour >= s AND hour < strftime('%Y-%m-%d %H:00:00', s, '+1 hour')) FROM h`, newest}},
			{"agg_plus_range_counts_skip", []string{agg, `WITH RECURSIVE h(s) AS (
  SELECT (SELECT substr(min(hour), 1, 13) || ':00:00' FROM usage_hourly WHERE hour >= ?1 AND hour < ?2)
  UNION ALL
  SELECT (SELECT substr(min(hour), 1, 13) || ':00:00' FROM usage_hourly WHERE hour >= strftime('%Y-%m-%d %H:00:00', s, '+1 hour') AND hour < ?2) FROM h WHERE s IS NOT NULL)
SELECT s, (SELECT count(*) FROM usage_hourly WHERE hour >= s AND hour < strftime('%Y-%m-%d %H:00:00', s, '+1 hour')) FROM h WHERE s IS NOT NULL`, newest}},
		}
	}
	if until.Sub(since) <= 48*time.Hour {
		fs = append(fs, formulation{"one_pass_conditional", []string{conditionalPass(eng, since, until, counts, where), newest}})
	}
	return fs
}

// benchClock starts at `at` and moves on a microsecond at each reading.
func benchClock(at time.Time) func() time.Time {
	var ticks atomic.Int64
	return func() time.Time { return at.Add(time.Duration(ticks.Add(1)) * time.Microsecond) }
}

// conditionalPass is one ungrouped pass with a conditional count per hour of a short window.
func conditionalPass(eng string, since, until time.Time, cols, where string) string {
	var terms []string
	for h := since.Truncate(time.Hour); h.Before(until); h = h.Add(time.Hour) {
		lo, hi := "'"+h.Format("2006-01-02 15:04:05")+"'", "'"+h.Add(time.Hour).Format("2006-01-02 15:04:05")+"'"
		if eng == "postgres" {
			terms = append(terms, "count(*) FILTER (WHERE hour >= timestamp "+lo+" AND hour < timestamp "+hi+")")
		} else {
			terms = append(terms, "sum(hour >= "+lo+" AND hour < "+hi+")")
		}
	}
	return "SELECT " + cols + ", " + strings.Join(terms, ", ") + " FROM usage_hourly WHERE " + where
}

func benchQualityWindow(b *testing.B, eng string, wh *warehouse.DB, raw *sql.DB, since, until time.Time, indexed bool) {
	lo, hi := any(warehouse.BindTime(warehouse.TimeTextSpace, since)), any(warehouse.BindTime(warehouse.TimeTextSpace, until))
	bare := "SELECT count(*) FROM usage_hourly WHERE hour >= ? AND hour < ?"
	if eng == "postgres" {
		lo, hi, bare = since, until, "SELECT count(*) FROM usage_hourly WHERE hour >= $1::timestamp AND hour < $2::timestamp"
	}
	w := quality.Window{Since: since, Until: until, Label: "in the window", TimeZone: "UTC"}
	// The clock moves on a microsecond at each reading, as a monitor's does between runs: with a
	// fixed clock every earlier point ties with the run's instant, so no baseline has points and
	// the cache can serve none of them (every run read its series from the store).
	// The History writes behind, as the agent's does: a run that opens no incident answers before
	// its record is written. Each round waits (untimed) for the records its runs queued, so no
	// write runs beside another variant; run_quality_check_recorded times a run and its write.
	toolStore := openStoreB(b)
	c := quality.NewChecker(wh, quality.NewHistory(toolStore).WriteBehind(), benchClock(until))
	req := quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Window: w,
		KeyColumns: []string{"usage_id"}, Checks: []quality.Check{quality.Volume, quality.Freshness, quality.NullRate, quality.Uniqueness}}
	// The plan's own statements, sent through the same connection as the hand-written ones: their
	// time against the best formulation is the plan's quality; run_quality_check adds the run's
	// fixed costs (catalog reads, the time layout, baselines and the history write).
	stmts, stmtArgs, err := c.PlannedStatements(context.Background(), req, until)
	if err != nil {
		b.Fatal(err)
	}
	planned := func() {
		for i, q := range stmts {
			runSQLArgs(b, raw, q, stmtArgs[i])
		}
	}
	queries, passSQL := 0, ""
	rqc := func() {
		rep, err := c.Run(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		queries = rep.Queries
		for _, r := range rep.Results {
			if r.Check == string(quality.NullRate) {
				passSQL = r.SQL // the pass, with the window's two bounds
			}
		}
	}
	// The same run reading each baseline when its result asks instead of prefetching them while
	// the statements run (and without the series cache), on a history of its own: a write to the
	// tool's history by another checker would move its version and empty its cache, which no
	// monitor running alone meets.
	askedStore := openStoreB(b)
	asked := quality.WithoutPrefetch(quality.NewChecker(wh, quality.NewHistory(askedStore).WriteBehind(), benchClock(until)))
	rqcAsked := func() {
		if _, err := asked.Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	recordedStore := openStoreB(b)
	recorded := quality.NewChecker(wh, quality.NewHistory(recordedStore).WriteBehind(), benchClock(until))
	rqcRecorded := func() {
		if _, err := recorded.Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		if err := recordedStore.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	written := func() {
		for _, st := range []*store.Store{toolStore, askedStore} {
			if err := st.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	type variant struct {
		name string
		run  func()
	}
	variants := []variant{{"run_quality_check", rqc}, {"bare_count", func() { runSQL(b, raw, []string{bare}, lo, hi) }}, {"planned_statements", planned},
		{"run_quality_check_asked", rqcAsked}, {"run_quality_check_recorded", rqcRecorded}}
	const ownVariants = 5 // the hand-written formulations follow
	for _, f := range handWritten(eng, since, until, indexed) {
		variants = append(variants, variant{f.name, func() { runSQL(b, raw, f.stmts, lo, hi) }})
	}
	// A window of a day takes milliseconds: each iteration runs 50 rounds, each round every variant
	// once in a new random order, so that a moment of load from other processes averages out.
	rounds := 1
	if until.Sub(since) <= 48*time.Hour {
		rounds = 50
	}
	runs := make([]func(), len(variants))
	for j := range runs {
		runs[j] = variants[j].run
	}
	// Each variant's figure is the median of its timings: on a shared machine a run that another
	// process stalls for a time slice moves a mean by more than the differences measured here.
	// The means are reported beside the ratios (…_mean) for comparison.
	samples := interleaveSamples(b, runs, rounds, written)
	sec := func(j int) float64 { return quality.Median(samples[j]) }
	mean := func(j int) float64 {
		total := 0.0
		for _, v := range samples[j] {
			total += v
		}
		return total / float64(len(samples[j]))
	}
	// paired is the median over rounds of a variant's time over the best formulation's in the same
	// round: this machine's speed moves between two levels for seconds at a time (the timings of
	// one variant are bimodal), and a ratio of medians taken across both levels moves with where
	// each median falls; a round takes tens of milliseconds, inside one level.
	best, bestJ, bestMean := math.Inf(1), 0, math.Inf(1)
	for j, v := range variants {
		b.ReportMetric(sec(j), v.name+"_s")
		if j >= ownVariants && sec(j) < best {
			best, bestJ = sec(j), j
		}
		if j >= ownVariants {
			bestMean = min(bestMean, mean(j))
		}
	}
	paired := func(j int) float64 {
		ratios := make([]float64, len(samples[j]))
		for k := range ratios {
			ratios[k] = samples[j][k] / samples[bestJ][k]
		}
		return quality.Median(ratios)
	}
	b.ReportMetric(paired(0), "rqc/best_paired")
	b.ReportMetric(paired(4), "recorded/best_paired")
	b.ReportMetric(paired(2), "planned/best_paired")
	b.ReportMetric(mean(0)/bestMean, "rqc/best_mean")
	b.ReportMetric(mean(3)/bestMean, "asked/best_mean")
	b.ReportMetric(sec(0)/best, "rqc/best")
	b.ReportMetric(sec(0)/sec(1), "rqc/bare")
	b.ReportMetric(sec(2)/best, "planned/best")
	b.ReportMetric(sec(3)/best, "asked/best")
	b.ReportMetric(sec(0)/sec(3), "rqc/asked")
	b.ReportMetric(sec(4)/best, "recorded/best")
	b.ReportMetric(float64(queries), "rqc_queries")
	b.Logf("best hand-written: %s", variants[bestJ].name)
	// The engine's plan of the product's pass shows which rows it reads (for today: the index's
	// range, not the table).
	explain := "EXPLAIN QUERY PLAN "
	if eng == "postgres" {
		explain = "EXPLAIN "
	}
	rows, err := raw.Query(explain+passSQL, lo, hi)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			b.Fatal(err)
		}
		plan = append(plan, fmt.Sprint(vals[len(vals)-1]))
	}
	b.Logf("plan of the pass: %s", strings.Join(plan, " | "))
}

// interleave runs every variant b.N times, interleaved in a random order, so load from other
// processes on a shared machine falls on all of them alike, and returns each one's mean seconds per
// run.
func interleave(b *testing.B, variants []func()) []float64 {
	samples := interleaveSamples(b, variants, 1, nil)
	secs := make([]float64, len(variants))
	for j, s := range samples {
		for _, v := range s {
			secs[j] += v
		}
		secs[j] /= float64(len(s))
	}
	return secs
}

// interleaveSamples is interleave's timings, each run's seconds, per variant: b.N iterations of
// `rounds` rounds, each round every variant once in a new random order (seeded, so a run is
// repeatable), so the k-th timings of two variants come from the same round. A fixed rotation
// would keep every variant behind the same neighbour, and a variant that runs right after the same
// statements (the plan's statements before the tool) finds the engine's caches warmer. after, when
// set, runs untimed after each variant (waiting for the writes a run left behind its answer).
func interleaveSamples(b *testing.B, variants []func(), rounds int, after func()) [][]float64 {
	samples := make([][]float64, len(variants))
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, len(variants))
	for j := range order {
		order[j] = j
	}
	b.ResetTimer()
	for i := 0; i < b.N*rounds; i++ {
		rng.Shuffle(len(order), func(x, y int) { order[x], order[y] = order[y], order[x] })
		for _, j := range order {
			t0 := time.Now()
			variants[j]()
			samples[j] = append(samples[j], time.Since(t0).Seconds())
			if after != nil {
				after()
			}
		}
	}
	b.StopTimer()
	return samples
}

// benchRows is the table size: DW_BENCH_ROWS, default 100,000.
func benchRows(b *testing.B) int {
	s := os.Getenv("DW_BENCH_ROWS")
	if s == "" {
		return 100000
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1000 {
		b.Fatalf("DW_BENCH_ROWS=%q: want an integer ≥ 1000", s)
	}
	return v
}

// runSQLArgs runs one statement with its values and reads every row.
func runSQLArgs(b *testing.B, db *sql.DB, q string, args []any) {
	rows, err := db.QueryContext(context.Background(), q, args...)
	if err != nil {
		b.Fatalf("%s: %v", q, err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	rows.Close()
}

func runSQL(b *testing.B, db *sql.DB, queries []string, lo, hi any) {
	for _, q := range queries {
		var args []any
		if strings.Contains(q, "?") || strings.Contains(q, "$1") {
			args = []any{lo, hi}
		}
		runSQLArgs(b, db, q, args)
	}
}

// benchTable builds usage_hourly with n rows on eng, analyzed. exec runs more statements on a
// read-write connection (the warehouse and raw connections read only on SQLite).
func benchTable(b *testing.B, eng string, n int) (wh *warehouse.DB, raw *sql.DB, exec func(stmts ...string)) {
	b.Helper()
	start := time.Now()
	var driver, dsn, roDSN string
	var load []string
	switch eng {
	case "sqlite":
		path := filepath.Join(b.TempDir(), "bench.db")
		// The hand-written formulations' connection keeps its statements compiled, as the
		// warehouse handle's does (warehouse.Open).
		driver, dsn, roDSN = "sqlite3", path+"?_journal_mode=OFF&_synchronous=OFF", "file:"+path+"?mode=ro&_stmt_cache_size=64"
		load = []string{
			`CREATE TABLE usage_hourly (usage_id TEXT NOT NULL UNIQUE, account_id INT, hour TIMESTAMP, egress_bytes BIGINT)`,
			fmt.Sprintf(`INSERT INTO usage_hourly WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < %d)
SELECT 'u-' || i, i %% 5000, strftime('%%Y-%%m-%%d %%H:%%M:%%S', '2025-12-01', '+' || (i / 1000) || ' hours'),
  CASE WHEN (i * 2654435761) %% 1000 < 180 THEN NULL ELSE i * 7 END FROM seq`, n-1),
			`ANALYZE`,
		}
	case "postgres":
		driver = "pgx"
		dsn = pgtest.Shared(b).NewDatabase(b)
		roDSN = dsn
		load = []string{
			`CREATE TABLE usage_hourly (usage_id TEXT NOT NULL UNIQUE, account_id INT, hour TIMESTAMP, egress_bytes BIGINT)`,
			fmt.Sprintf(`INSERT INTO usage_hourly SELECT 'u-' || i, i %% 5000, timestamp '2025-12-01' + (i / 1000) * interval '1 hour',
  CASE WHEN (i::bigint * 2654435761) %% 1000 < 180 THEN NULL ELSE i::bigint * 7 END FROM generate_series(0, %d) i`, n-1),
			`VACUUM ANALYZE usage_hourly`,
		}
	}
	exec = func(stmts ...string) {
		b.Helper()
		rw, err := sql.Open(driver, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer rw.Close()
		for _, s := range stmts {
			if _, err := rw.Exec(s); err != nil {
				b.Fatalf("%s: %v", s, err)
			}
		}
	}
	exec(load...)
	whDSN := dsn
	if eng == "sqlite" {
		whDSN = strings.TrimSuffix(dsn, "?_journal_mode=OFF&_synchronous=OFF")
	}
	wh, err := warehouse.Connect(&config.Warehouse{Engine: eng, DSN: whDSN, StatementTimeout: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	raw, err = sql.Open(driver, roDSN)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { wh.Close(); raw.Close() })
	b.Logf("%s: loaded %d rows in %s", eng, n, time.Since(start).Round(time.Millisecond))
	return wh, raw, exec
}
