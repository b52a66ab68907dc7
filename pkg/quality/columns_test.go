package quality_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// The column scenario: 15 days (2025-12-01 … 12-15) of 16 hours × 125 rows of api_costs.
//   - cost_micros: a handful of zeros a day before (2 … 6 of 2,000, at most 0.3 %); on the last
//     day the field was removed upstream for 41 % of rows, and proto3 reads a missing int as 0 —
//     no null anywhere.
//   - price: on the last day a unit change divides it by 1,000.
//   - region: text, one value in ten empty; billable: boolean, three in four true; adjustment:
//     integers with nulls and negatives.
//
// billing_lines holds one row per account per slot; on the last day a filter drops account 7.
type colEngine struct {
	ts    func(i string) string // the timestamp of row i
	types [2]string             // price's type, billable's type
	truth func(expr string) string
}

var colEngines = map[string]colEngine{
	"sqlite": {
		ts: func(i string) string {
			return "strftime('%Y-%m-%d %H:00:00', '2025-12-01', '+' || (" + i + " / 2000) || ' days', '+' || ((" + i + " % 2000) / 125) || ' hours')"
		},
		types: [2]string{"REAL", "BOOLEAN"},
		truth: func(e string) string { return "CASE WHEN " + e + " THEN 1 ELSE 0 END" },
	},
	"postgres": {
		ts: func(i string) string {
			return "timestamp '2025-12-01' + (" + i + " / 2000) * interval '1 day' + ((" + i + " % 2000) / 125) * interval '1 hour'"
		},
		types: [2]string{"double precision", "boolean"},
		truth: func(e string) string { return "(" + e + ")" },
	},
}

func columnScenario(engine string) []string {
	e := colEngines[engine]
	seq := "WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < 29999) "
	from := " FROM seq"
	if engine == "postgres" {
		seq, from = "", " FROM generate_series(0, 29999) i"
	}
	return append([]string{
		`CREATE TABLE api_costs (line_id INTEGER NOT NULL, account_id INTEGER NOT NULL, at TIMESTAMP NOT NULL, cost_micros BIGINT NOT NULL, price ` + e.types[0] + `, region TEXT, billable ` + e.types[1] + `, adjustment INTEGER)`,
		`INSERT INTO api_costs ` + seq + `SELECT i, i % 20, ` + e.ts("i") + `,
  CASE WHEN i / 2000 = 14 AND i % 100 < 41 THEN 0 WHEN i / 2000 < 14 AND i % 2000 < 2 + (i / 2000) % 5 THEN 0 ELSE 2000 - (i % 100) * 10 END,
  CASE WHEN i / 2000 = 14 THEN (5000 + i % 100) / 1000.0 ELSE 5000 + i % 100 END,
  CASE WHEN i % 10 = 0 THEN '' ELSE 'eu-' || (i % 3) END, ` + e.truth("i % 4 <> 0") + `,
  CASE WHEN i % 9 = 0 THEN NULL WHEN i % 8 = 0 THEN -(i % 5) - 1 ELSE i % 3 END` + from,
		`CREATE TABLE billing_lines (account_id INTEGER NOT NULL, at TIMESTAMP NOT NULL, amount BIGINT NOT NULL)`,
		`INSERT INTO billing_lines ` + seq + `SELECT i % 20, ` + e.ts("i") + `, 100 + i % 7` + from + ` WHERE NOT (i / 2000 = 14 AND i % 20 = 7)`,
		// raw_usage swings between 1,000 and 2,000 rows a day; usage_model is built from it and, on
		// the last day, loses 28 % of its rows.
		`CREATE TABLE raw_usage (at TIMESTAMP NOT NULL, amount BIGINT NOT NULL)`,
		`INSERT INTO raw_usage ` + seq + `SELECT ` + e.ts("i") + `, 10 + i % 7` + from + ` WHERE i % 4 < 2 + (i / 2000) % 3`,
		`CREATE TABLE usage_model (at TIMESTAMP NOT NULL, amount BIGINT NOT NULL)`,
		`INSERT INTO usage_model ` + seq + `SELECT ` + e.ts("i") + `, 10 + i % 7` + from + ` WHERE i % 4 < 2 + (i / 2000) % 3 AND NOT (i / 2000 = 14 AND i % 100 < 28)`,
	}, arrivalsScenario(engine)...)
}

func openColumnScenario(t testing.TB, engine string) *warehouse.DB {
	t.Helper()
	dsn, rw := openWritable(t, engine)
	defer rw.Close()
	for _, s := range columnScenario(engine) {
		if _, err := rw.Exec(s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
	wh, err := warehouse.Connect(&config.Warehouse{Engine: engine, DSN: dsn, StatementTimeout: 10 * time.Second, MaxSampleRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close() })
	return wh
}

// openWritable creates an empty warehouse database on the engine and opens it for writing.
func openWritable(t testing.TB, engine string) (string, *sql.DB) {
	t.Helper()
	var dsn, driver string
	switch engine {
	case "sqlite":
		dsn, driver = filepath.Join(t.TempDir(), "wh.db"), "sqlite3"
	case "postgres":
		dsn, driver = pgtest.Shared(t).NewDatabase(t), "pgx"
	}
	rw, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return dsn, rw
}

// runHistory runs req at 15:05 on each of the first 14 days, requiring each to pass, then on the
// 15th and returns that report.
func runHistory(t *testing.T, wh *warehouse.DB, hist *quality.History, req quality.Request) *quality.Report {
	t.Helper()
	for day := 0; day < 14; day++ {
		if rep := runAt(t, wh, hist, at15(day), req); rep.Status != quality.Pass {
			t.Fatalf("day %d: %s", day, rep.Summary)
		}
	}
	return runAt(t, wh, hist, at15(14), req)
}

func TestProto3RemovedFieldFailsOnZerosAndSumWithNoNull(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wh := openColumnScenario(t, engine)
			hist := quality.NewHistory(openStore(t))
			req := quality.Request{Table: "api_costs", TimestampColumn: "at", Checks: []quality.Check{quality.NullRate, quality.Column},
				Columns: []string{"cost_micros"}}
			rep := runHistory(t, wh, hist, req)
			if r := result(t, rep, "null_rate", "cost_micros"); r.Value != 0 || r.Status != quality.Pass {
				t.Errorf("null rate = %+v", r)
			}
			zeros := result(t, rep, "zero_rate", "cost_micros")
			if zeros.Status != quality.Fail || zeros.Value != 0.41 || zeros.Why != "41% zeros today against at most 0.3% in the last 14 days" {
				t.Errorf("zeros: %s %v %q", zeros.Status, zeros.Value, zeros.Why)
			}
			sum := result(t, rep, "sum_per_hour", "cost_micros")
			if sum.Status != quality.Fail || !regexp.MustCompile(`^the hourly sum is \d+(\.\d+)?% below its baseline: `).MatchString(sum.Why) {
				t.Errorf("sum: %s %q", sum.Status, sum.Why)
			}
			// One sentence about the column in the summary, zeros first.
			if !strings.Contains(rep.Summary, "fail cost_micros: 41% zeros today against at most 0.3% in the last 14 days; the hourly sum is ") {
				t.Errorf("summary = %q", rep.Summary)
			}
			if rep.Queries != 1 {
				t.Errorf("queries = %d, want the one pass", rep.Queries)
			}
			if strings.Contains(sum.SQL, `count("cost_micros")`) {
				t.Errorf("a NOT NULL column's null count should come from its constraint: %s", sum.SQL)
			}
		})
	}
}

func TestUnitChangeFailsOnMeanAndSum(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wh := openColumnScenario(t, engine)
			hist := quality.NewHistory(openStore(t))
			req := quality.Request{Table: "api_costs", TimestampColumn: "at", Checks: []quality.Check{quality.Column},
				Columns: []string{"price", "region", "billable"}}
			rep := runHistory(t, wh, hist, req)
			for _, m := range []string{"mean", "sum_per_hour", "min", "max"} {
				r := result(t, rep, m, "price")
				if r.Status != quality.Fail || !strings.Contains(r.Why, "99.9% below its baseline") {
					t.Errorf("%s: %s %q", m, r.Status, r.Why)
				}
			}
			if r := result(t, rep, "mean", "price"); r.Value != 5.0495 {
				t.Errorf("mean = %v, want 5.0495", r.Value)
			}
			// Text and boolean columns are measured by their own metrics and are steady.
			for _, m := range []struct{ metric, subject string }{{"empty_rate", "region"}, {"min_length", "region"}, {"max_length", "region"}, {"mean_length", "region"}, {"true_rate", "billable"}, {"zero_rate", "price"}, {"stddev", "price"}} {
				r := result(t, rep, m.metric, m.subject)
				if m.metric != "stddev" && r.Status != quality.Pass {
					t.Errorf("%s %s: %s %q", m.metric, m.subject, r.Status, r.Why)
				}
			}
			if r := result(t, rep, "empty_rate", "region"); r.Value != 0.1 || r.Why != "10% empty strings today against 10% in every earlier check" {
				t.Errorf("empty: %v %q", r.Value, r.Why)
			}
			if r := result(t, rep, "true_rate", "billable"); r.Value != 0.75 || !strings.HasPrefix(r.Why, "75% true (1,500 true, 500 false) today") {
				t.Errorf("true: %v %q", r.Value, r.Why)
			}
			if r := result(t, rep, "max_length", "region"); r.Value != 4 {
				t.Errorf("max length = %v", r.Value)
			}
		})
	}
}

func TestColumnMetricsMatchHandWrittenSQL(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wh := openColumnScenario(t, engine)
			now := at15(3)
			req := quality.Request{Table: "api_costs", TimestampColumn: "at", Checks: []quality.Check{quality.Column},
				Columns: []string{"cost_micros", "region", "adjustment"}, ColumnMetrics: []quality.ColumnMetric{quality.ZeroRate, quality.StdDev, quality.Distinct, quality.MinValue,
					quality.MeanLength, quality.NegativeRate, quality.MaxValue, quality.SumPerHour, quality.Mean}}
			rep := runAt(t, wh, nil, now, req)
			lo, hi := "'2025-12-04 00:00:00'", "'2025-12-04 15:05:00'"
			cast := ""
			if engine == "postgres" {
				cast = "::timestamp"
			}
			var zeros, distinct, distinctRegion int64
			var n, sd, meanLen float64
			var minCost int64
			q := fmt.Sprintf(`SELECT count(CASE WHEN cost_micros = 0 THEN 1 END), count(cost_micros), count(DISTINCT cost_micros), count(DISTINCT region), min(cost_micros), avg(length(region)) FROM api_costs WHERE at >= %s%s AND at < %s%s`, lo, cast, hi, cast)
			if err := wh.QueryRow(context.Background(), q, nil, &zeros, &n, &distinct, &distinctRegion, &minCost, &meanLen); err != nil {
				t.Fatal(err)
			}
			// Sample standard deviation, computed in Go from the rows.
			rows, err := wh.QueryAll(context.Background(), fmt.Sprintf(`SELECT cost_micros FROM api_costs WHERE at >= %s%s AND at < %s%s`, lo, cast, hi, cast), nil, 3000)
			if err != nil {
				t.Fatal(err)
			}
			var sum, sq float64
			for _, r := range rows.Rows {
				v := float64(warehouse.Int(r[0]))
				sum += v
				sq += v * v
			}
			sd = sqrtVar(sum, sq, n)
			check := func(metric, subject string, want float64) {
				t.Helper()
				if got := result(t, rep, metric, subject).Value; fmt.Sprintf("%.4f", got) != fmt.Sprintf("%.4f", want) {
					t.Errorf("%s %s = %v, want %v", metric, subject, got, want)
				}
			}
			check("zero_rate", "cost_micros", float64(zeros)/n)
			check("stddev", "cost_micros", sd)
			check("distinct", "cost_micros", float64(distinct))
			check("distinct", "region", float64(distinctRegion))
			check("min", "cost_micros", float64(minCost))
			check("mean_length", "region", meanLen)
			// adjustment: nulls, negatives and a sum, against the engine's own aggregates.
			var negs, nonNull, maxAdj int64
			var sumAdj, meanAdj float64
			q = fmt.Sprintf(`SELECT count(CASE WHEN adjustment < 0 THEN 1 END), count(adjustment), max(adjustment), sum(adjustment), avg(adjustment) FROM api_costs WHERE at >= %s%s AND at < %s%s`, lo, cast, hi, cast)
			if err := wh.QueryRow(context.Background(), q, nil, &negs, &nonNull, &maxAdj, &sumAdj, &meanAdj); err != nil {
				t.Fatal(err)
			}
			if negs == 0 || nonNull == 2000 {
				t.Fatalf("the scenario lost its negatives or nulls: %d, %d", negs, nonNull)
			}
			check("negative_rate", "adjustment", float64(negs)/float64(nonNull))
			check("max", "adjustment", float64(maxAdj))
			check("sum_per_hour", "adjustment", sumAdj/(15+5.0/60))
			check("mean", "adjustment", meanAdj)
			if rep.Queries != 2 {
				t.Errorf("queries = %d, want the pass and one distinct query", rep.Queries)
			}
		})
	}
}

func TestColumnCheckRefusesWhatItCannotMeasure(t *testing.T) {
	wh := openColumnScenario(t, "sqlite")
	c := quality.NewChecker(wh, nil, func() time.Time { return at15(3) })
	w, _ := quality.ParseWindow(quality.WindowSpec{Window: "today"}, at15(3))
	for _, tc := range []struct {
		req  quality.Request
		want string
	}{
		{quality.Request{Table: "api_costs", Columns: []string{"region", "billable"}, ColumnMetrics: []quality.ColumnMetric{quality.EmptyRate}}, "column billable is BOOLEAN (boolean): none of the column metrics (empty_rate) applies"},
		{quality.Request{Table: "api_costs", Columns: []string{"price", "region"}, ColumnMetrics: []quality.ColumnMetric{quality.TrueRate}}, "applies to none of the measured columns"},
		{quality.Request{Table: "api_costs", Thresholds: []quality.Threshold{{Metric: "zeros"}}}, `"zeros" is unknown`},
		{quality.Request{Table: "api_costs", Thresholds: []quality.Threshold{{Metric: "zero_rate"}}}, "give min, max or both"},
	} {
		tc.req.Checks, tc.req.Window, tc.req.TimestampColumn = []quality.Check{quality.Column}, w, "at"
		if _, err := c.Run(context.Background(), tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.req, err, tc.want)
		}
	}
	if _, err := quality.ParseColumnMetrics([]string{"mean", "median"}); err == nil || !strings.Contains(err.Error(), `"median" is unknown`) {
		t.Errorf("err = %v", err)
	}
}

func TestThresholdJudgesWithoutHistory(t *testing.T) {
	wh := openColumnScenario(t, "sqlite")
	limit := 0.01
	req := quality.Request{Table: "api_costs", TimestampColumn: "at", Checks: []quality.Check{quality.Column}, Columns: []string{"cost_micros"},
		ColumnMetrics: []quality.ColumnMetric{quality.ZeroRate}, Thresholds: []quality.Threshold{{Metric: "zero_rate", Column: "cost_micros", Max: &limit}}}
	if r := result(t, runAt(t, wh, nil, at15(3), req), "zero_rate", "cost_micros"); r.Status != quality.Pass || r.Why != "0.25% zeros today within its limit" {
		t.Errorf("day 3: %s %q", r.Status, r.Why)
	}
	if r := result(t, runAt(t, wh, nil, at15(14), req), "zero_rate", "cost_micros"); r.Status != quality.Fail || r.Why != "41% zeros today against a limit of at most 1%" {
		t.Errorf("day 14: %s %q", r.Status, r.Why)
	}
}

func sqrtVar(sum, sq, n float64) float64 {
	return math.Sqrt((sq - sum*sum/n) / (n - 1))
}

func TestOneAccountDroppingFailsTheDimensionCheckNamingIt(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wh := openColumnScenario(t, engine)
			hist := quality.NewHistory(openStore(t))
			for _, tc := range []struct {
				spec    quality.DimensionSpec
				subject string
				why     string
			}{
				{quality.DimensionSpec{Column: "account_id"}, "account_id",
					"1 account_id value's rows fell to zero (account_id 7: 0 per hour against a median of 6.63); 19 unchanged today"},
				{quality.DimensionSpec{Column: "account_id", Measure: "amount", Top: 3}, "amount by account_id",
					"1 account_id value's sums of amount fell to zero (account_id 7: 0 per hour against a median of 682.9); 19 unchanged today"},
			} {
				req := quality.Request{Table: "billing_lines", TimestampColumn: "at", Checks: []quality.Check{quality.Volume, quality.Dimension}, Dimension: &tc.spec}
				rep := runHistory(t, wh, hist, req)
				if r := result(t, rep, "rows_per_hour", ""); r.Status != quality.Pass {
					t.Errorf("a 5%% drop of the table should pass volume: %s", r.Why)
				}
				r := result(t, rep, "keys_moved", tc.subject)
				if r.Status != quality.Fail || r.Value != 1 || r.Why != tc.why {
					t.Errorf("%s: %s %v %q", tc.subject, r.Status, r.Value, r.Why)
				}
				if len(r.Keys) != 1 || r.Keys[0].Key != "7" || r.Keys[0].Change != -1 || r.Keys[0].Value != 0 {
					t.Errorf("keys = %+v", r.Keys)
				}
			}
			// Every key's point is in the history, the vanished key's as a failing zero.
			runs, err := hist.Runs(context.Background(), quality.HistoryQuery{Metric: "dimension_rows_per_hour", Subject: "account_id=7", Limit: 1})
			if err != nil || len(runs) != 1 || len(runs[0].Metrics) != 1 || runs[0].Metrics[0].Value != 0 || runs[0].Metrics[0].Status != "fail" {
				t.Fatalf("history of account 7: %+v %v", runs, err)
			}
		})
	}
}

func TestDimensionCapAndBadSpecs(t *testing.T) {
	wh := openColumnScenario(t, "sqlite")
	hist := quality.NewHistory(openStore(t))
	req := quality.Request{Table: "billing_lines", TimestampColumn: "at", Checks: []quality.Check{quality.Dimension}, Dimension: &quality.DimensionSpec{Column: "account_id", MaxKeys: 5}}
	rep := runHistory(t, wh, hist, req)
	r := result(t, rep, "keys_moved", "account_id")
	// Account 7 is not among the 5 largest today and, the answer being capped, its absence proves nothing.
	if r.Status != quality.Pass || !strings.Contains(r.Why, "only the 5 largest account_id values were compared (dimension.max_keys)") {
		t.Errorf("capped: %s %q", r.Status, r.Why)
	}
	c := quality.NewChecker(wh, nil, func() time.Time { return at15(3) })
	w, _ := quality.ParseWindow(quality.WindowSpec{Window: "today"}, at15(3))
	for _, tc := range []struct {
		spec *quality.DimensionSpec
		want string
	}{
		{nil, "needs dimension.column"},
		{&quality.DimensionSpec{Column: "nope"}, "dimension.column"},
		{&quality.DimensionSpec{Column: "account_id", Measure: "at"}, "not numeric"},
		{&quality.DimensionSpec{Column: "account_id", MaxKeys: 20000}, "outside 1 … 10000"},
	} {
		_, err := c.Run(context.Background(), quality.Request{Table: "billing_lines", TimestampColumn: "at", Window: w, Checks: []quality.Check{quality.Dimension}, Dimension: tc.spec})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.spec, err, tc.want)
		}
	}
}

func TestCustomRuleAloneWithTimestampColumn(t *testing.T) {
	wh := openColumnScenario(t, "sqlite")
	req := quality.Request{Table: "api_costs", TimestampColumn: "at", Checks: []quality.Check{quality.Custom},
		Assertions: []quality.Assertion{{Name: "price_positive", SQL: "SELECT * FROM api_costs WHERE price <= 0 AND at >= {{window_start}} AND at < {{window_end}}"}}}
	rep := runAt(t, wh, nil, at15(14), req)
	if r := result(t, rep, "violating_rows", "price_positive"); r.Status != quality.Pass || rep.Queries != 1 || rep.TimestampColumn != "at" {
		t.Errorf("custom alone: %+v (%d queries)", r, rep.Queries)
	}
	// Without timestamp_column the rule still finds the table's only timestamp column.
	req.TimestampColumn = ""
	if r := result(t, runAt(t, wh, nil, at15(14), req), "violating_rows", "price_positive"); r.Status != quality.Pass {
		t.Errorf("custom alone, inferred column: %+v", r)
	}
}

// arrivals: one event an hour (00:00–15:00) for 15 days, each loaded two minutes later. On the last
// day events stop after 11:00 while the source keeps re-sending its 11:00 event every hour.
func arrivalsScenario(engine string) []string {
	ts := func(d, h, extra string) string {
		return "strftime('%Y-%m-%d %H:%M:%S', '2025-12-01', '+' || (" + d + ") || ' days', '+' || (" + h + ") || ' hours', '" + extra + "')"
	}
	seq, from := "WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < 239) ", " FROM seq"
	if engine == "postgres" {
		ts = func(d, h, extra string) string {
			return "timestamp '2025-12-01' + (" + d + ") * interval '1 day' + (" + h + ") * interval '1 hour' + interval '" + extra + "'"
		}
		seq, from = "", " FROM generate_series(0, 239) i"
	}
	return []string{
		`CREATE TABLE arrivals (event_at TIMESTAMP NOT NULL, loaded_at TIMESTAMP NOT NULL)`,
		`INSERT INTO arrivals ` + seq + `SELECT ` + ts("i / 16", "i % 16", "+0 minutes") + `, ` + ts("i / 16", "i % 16", "+2 minutes") + from + ` WHERE NOT (i / 16 = 14 AND i % 16 >= 12)`,
		`INSERT INTO arrivals ` + seq + `SELECT ` + ts("14", "11", "+0 minutes") + `, ` + ts("14", "i", "+2 minutes") + from + ` WHERE i BETWEEN 12 AND 15`,
	}
}

func TestEventFreshnessApartFromLoadLagAndVolumePerHourOfDay(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wh := openColumnScenario(t, engine)
			hist := quality.NewHistory(openStore(t))
			req := quality.Request{Table: "arrivals", TimestampColumn: "event_at", LoadTimestampColumn: "loaded_at", Checks: []quality.Check{quality.Volume, quality.VolumeByHour, quality.Freshness}}
			for day := 0; day < 14; day++ {
				rep := runAt(t, wh, hist, at15(day), req)
				if rep.Status != quality.Pass {
					t.Fatalf("day %d: %s", day, rep.Summary)
				}
				if day == 0 && rep.Queries != 2 {
					t.Errorf("queries = %d, want the pass (its max answers event freshness) and the load max", rep.Queries)
				}
			}
			rep := runAt(t, wh, hist, at15(14), req)
			fresh := result(t, rep, "freshness_lag_seconds", "event_at")
			if fresh.Status != quality.Fail || fresh.Why != "newest event_at is 4h5m old against a lag of 5m in every earlier check; rows are still loading (newest loaded_at 3m old), so the events themselves arrive late" {
				t.Errorf("freshness: %s %q", fresh.Status, fresh.Why)
			}
			if load := result(t, rep, "load_lag_seconds", "loaded_at"); load.Status != quality.Pass || load.Value != 180 {
				t.Errorf("load: %s %v %q", load.Status, load.Value, load.Why)
			}
			hour := result(t, rep, "rows_in_hour", "14:00")
			if hour.Status != quality.Fail || hour.Why != "0 rows in the 14:00 hour against 1 in every earlier check of that hour" {
				t.Errorf("hour of day: %s %q", hour.Status, hour.Why)
			}
			// A day's check at 03:30 compares its 02:00 hour with earlier 02:00 hours only.
			early := runAt(t, wh, hist, time.Date(2025, 12, 15, 3, 30, 0, 0, time.UTC), req)
			if r := result(t, early, "rows_in_hour", "02:00"); r.Status != quality.Pass || !strings.Contains(r.Why, "0 earlier checks") {
				t.Errorf("02:00: %s %q", r.Status, r.Why)
			}
		})
	}
}

func TestModelReconciledWithItsUpstream(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wh := openColumnScenario(t, engine)
			hist := quality.NewHistory(openStore(t))
			for _, tc := range []struct {
				spec          quality.ReconcileSpec
				subject, head string
			}{
				{quality.ReconcileSpec{Upstream: "raw_usage"}, ".raw_usage", "usage_model holds 72% of "},
				{quality.ReconcileSpec{Upstream: "raw_usage", Column: "amount"}, ".raw_usage.amount", "the sum of amount in "},
			} {
				req := quality.Request{Table: "usage_model", TimestampColumn: "at", Checks: []quality.Check{quality.Volume, quality.Reconcile}, Reconcile: &tc.spec}
				rep := runHistory(t, wh, hist, req)
				r := rep.Results[len(rep.Results)-1]
				subject := r.Subject
				if r.Metric != "reconcile_ratio" || !strings.HasSuffix(subject, tc.subject) || r.Status != quality.Fail || !strings.Contains(r.Why, tc.head) ||
					!strings.HasSuffix(r.Why, " against 100% in every earlier check") {
					t.Errorf("%s: %s %q", subject, r.Status, r.Why)
				}
				// The model's own volume swings with its source, so its band is too wide to notice.
				if v := result(t, rep, "rows_per_hour", ""); v.Status == quality.Fail {
					t.Errorf("volume: %s %q", v.Status, v.Why)
				}
				if rep.Queries != 2 {
					t.Errorf("queries = %d, want the pass and the upstream's count", rep.Queries)
				}
			}
		})
	}
}

func TestSchemaChangesSinceTheLastRunBecomeGraphEvents(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			dsn, rw := openWritable(t, engine)
			defer rw.Close()
			exec := func(s string) {
				t.Helper()
				if _, err := rw.Exec(s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			exec(`CREATE TABLE orders (order_id INTEGER NOT NULL, amount BIGINT NOT NULL, coupon TEXT, at TIMESTAMP)`)
			wh, err := warehouse.Connect(&config.Warehouse{Engine: engine, DSN: dsn, StatementTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer wh.Close()
			st := openStore(t)
			hist := quality.NewHistory(st)
			req := quality.Request{Table: "orders", Checks: []quality.Check{quality.SchemaChanges}}
			r := result(t, runAt(t, wh, hist, at15(0), req), "schema_changes", "")
			if r.Status != quality.Pass || !strings.HasPrefix(r.Why, "first schema snapshot of ") || !strings.HasSuffix(r.Why, ": 4 columns recorded; later runs report columns added, removed, retyped or made nullable") {
				t.Fatalf("first run: %s %q", r.Status, r.Why)
			}
			if r := result(t, runAt(t, wh, hist, at15(1), req), "schema_changes", ""); r.Status != quality.Pass || r.Why != "the 4 columns are unchanged since the last schema check" {
				t.Fatalf("second run: %s %q", r.Status, r.Why)
			}
			exec(`ALTER TABLE orders ADD COLUMN region TEXT`)
			exec(`ALTER TABLE orders DROP COLUMN coupon`)
			want := "region added (TEXT); coupon removed (was TEXT) since the last schema check"
			if engine == "postgres" {
				exec(`ALTER TABLE orders ALTER COLUMN amount TYPE numeric(18,2)`)
				exec(`ALTER TABLE orders ALTER COLUMN order_id DROP NOT NULL`)
				want = "order_id made nullable; amount retyped from bigint to numeric(18,2); region added (text); coupon removed (was text) since the last schema check"
			}
			// The catalog is read per run; a fresh connection sees the new columns.
			wh2, err := warehouse.Connect(&config.Warehouse{Engine: engine, DSN: dsn, StatementTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer wh2.Close()
			hist2 := quality.NewHistory(st)
			w, _ := quality.ParseWindow(quality.WindowSpec{Window: "today"}, at15(2))
			req.Window, req.OpenIncidents = w, func(string) bool { return true }
			rep, err := quality.NewChecker(wh2, hist2, func() time.Time { return at15(2) }).Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			r = result(t, rep, "schema_changes", "")
			if r.Status != quality.Fail || r.Why != want || r.Value != float64(len(r.Changes)) {
				t.Fatalf("after the change: %s %q %+v", r.Status, r.Why, r.Changes)
			}
			if len(rep.Incidents) != 1 || rep.Incidents[0].FailureMode != "schema_changes" {
				t.Errorf("incidents = %+v", rep.Incidents)
			}
			// The graph holds the change for diagnose_incident and the new columns as fields.
			a, err := graph.New(st, nil).Get(context.Background(), graph.URN(rep.Asset))
			if err != nil {
				t.Fatal(err)
			}
			var listed []quality.ColumnChange
			if err := json.Unmarshal([]byte(a.Attrs[quality.AttrSchemaChanges]), &listed); err != nil || len(listed) != len(r.Changes) || listed[0] != r.Changes[0] {
				t.Errorf("structured changes %q: %v", a.Attrs[quality.AttrSchemaChanges], err)
			}
			if a.Attrs[quality.AttrSchemaChange] != want || a.Attrs[quality.AttrSchemaChangedAt] != "2025-12-03T15:05:00Z" {
				t.Errorf("attrs = %v", a.Attrs)
			}
			var live, stale []string
			for _, f := range a.Fields {
				if f.Stale {
					stale = append(stale, f.Path)
				} else {
					live = append(live, f.Path)
				}
			}
			if !slices.Contains(live, "region") || !slices.Equal(stale, []string{"coupon"}) {
				t.Errorf("fields live %v stale %v", live, stale)
			}
			// The next run compares with the new snapshot; the change stays recorded on the asset.
			r = result(t, runAt(t, wh2, hist2, at15(3), quality.Request{Table: "orders", Checks: []quality.Check{quality.SchemaChanges}}), "schema_changes", "")
			if r.Status != quality.Pass {
				t.Errorf("after recording the change: %s %q", r.Status, r.Why)
			}
			if a, _ := graph.New(st, nil).Get(context.Background(), graph.URN(rep.Asset)); a.Attrs[quality.AttrSchemaChange] != want {
				t.Errorf("the last change was forgotten: %v", a.Attrs)
			}
		})
	}
}

func TestConfigListsMatchTheChecksAndMetrics(t *testing.T) {
	var checks []string
	for _, c := range quality.AllChecks {
		checks = append(checks, string(c))
	}
	var defaults []string
	for _, c := range quality.DefaultChecks {
		defaults = append(defaults, string(c))
	}
	if !slices.Equal(checks, config.MonitorChecks) || !slices.Equal(defaults, config.DefaultMonitorChecks) || !slices.Equal(quality.AllColumnMetrics(), config.MonitorColumnMetrics) {
		t.Errorf("config lists drifted:\nchecks %v / %v\ndefaults %v / %v\nmetrics %v / %v", checks, config.MonitorChecks, defaults, config.DefaultMonitorChecks, quality.AllColumnMetrics(), config.MonitorColumnMetrics)
	}
}

func TestProfileTableShowsEveryColumnMetricOnce(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wh := openColumnScenario(t, engine)
			st := openStore(t)
			w, _ := quality.ParseWindow(quality.WindowSpec{}, at15(14))
			p, err := quality.NewChecker(wh, quality.NewHistory(st), func() time.Time { return at15(14) }).ProfileTable(context.Background(),
				quality.ProfileRequest{Table: "api_costs", TimestampColumn: "at", Window: &w})
			if err != nil {
				t.Fatal(err)
			}
			if p.Rows != 2000 || strings.Count(p.SQL, "SELECT") != 1 {
				t.Fatalf("profile = %+v", p)
			}
			byName := map[string]quality.ColumnProfile{}
			for _, c := range p.Columns {
				byName[c.Name] = c
			}
			for _, tc := range []struct {
				column, metric string
				want           float64
			}{
				{"cost_micros", "zero_rate", 0.41}, {"cost_micros", "zeros", 820}, {"cost_micros", "negatives", 0},
				{"region", "empty_rate", 0.1}, {"region", "max_length", 4}, {"billable", "true", 1500}, {"billable", "false", 500},
			} {
				if got, ok := byName[tc.column].Metrics[tc.metric]; !ok || got != tc.want {
					t.Errorf("%s %s = %v, want %v (%v)", tc.column, tc.metric, got, tc.want, byName[tc.column].Metrics)
				}
			}
			if byName["at"].Metrics != nil {
				t.Errorf("a timestamp column has no column metrics: %v", byName["at"].Metrics)
			}
			// Nothing recorded: profiling is a look, not a run.
			if runs, err := quality.NewHistory(st).Runs(context.Background(), quality.HistoryQuery{}); err != nil || len(runs) != 0 {
				t.Errorf("runs = %v %v", runs, err)
			}
		})
	}
}

func TestNullRateThreshold(t *testing.T) {
	wh := openColumnScenario(t, "sqlite")
	limit := 0.05
	req := quality.Request{Table: "api_costs", TimestampColumn: "at", Checks: []quality.Check{quality.NullRate}, Columns: []string{"price"},
		Thresholds: []quality.Threshold{{Metric: "null_rate", Max: &limit}}}
	if r := result(t, runAt(t, wh, nil, at15(3), req), "null_rate", "price"); r.Status != quality.Pass || r.Why != "0% null today within its limit" || *r.ExpectedHigh != 0.05 {
		t.Errorf("%s %q", r.Status, r.Why)
	}
}

func TestAKeyGoneForAWeekStopsFailing(t *testing.T) {
	wh := openColumnScenario(t, "sqlite")
	hist := quality.NewHistory(openStore(t))
	req := quality.Request{Table: "billing_lines", TimestampColumn: "at", Checks: []quality.Check{quality.Dimension}, Dimension: &quality.DimensionSpec{Column: "account_id"}}
	runHistory(t, wh, hist, req) // day 14: account 7 vanished and failed
	// A week later (no new rows at all: every key is now older than a week) nothing is compared.
	rep := runAt(t, wh, hist, at15(22), req)
	if r := result(t, rep, "keys_moved", "account_id"); r.Status != quality.Pass || r.Value != 0 {
		t.Errorf("a week on: %s %q", r.Status, r.Why)
	}
}

func TestHourWindows(t *testing.T) {
	now := time.Date(2025, 12, 15, 15, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		spec         string
		since, until time.Time
		label        string
	}{
		{"this_hour", time.Date(2025, 12, 15, 15, 0, 0, 0, time.UTC), now, "this hour"},
		{"last_hour", time.Date(2025, 12, 15, 14, 0, 0, 0, time.UTC), time.Date(2025, 12, 15, 15, 0, 0, 0, time.UTC), "in the last complete hour"},
	} {
		w, err := quality.ParseWindow(quality.WindowSpec{Window: tc.spec}, now)
		if err != nil || !w.Since.Equal(tc.since) || !w.Until.Equal(tc.until) || w.Label != tc.label {
			t.Errorf("%s: %+v %v", tc.spec, w, err)
		}
	}
	// Kolkata's hours start at :30 UTC.
	w, _ := quality.ParseWindow(quality.WindowSpec{Window: "this_hour", TimeZone: "Asia/Kolkata"}, now)
	if !w.Since.Equal(time.Date(2025, 12, 15, 14, 30, 0, 0, time.UTC)) {
		t.Errorf("Kolkata: %v", w.Since)
	}
	// The proto3 sentence over the hour: the check says "this hour".
	wh := openColumnScenario(t, "sqlite")
	hist := quality.NewHistory(openStore(t))
	req := quality.Request{Table: "api_costs", TimestampColumn: "at", Checks: []quality.Check{quality.Column}, Columns: []string{"cost_micros"}, ColumnMetrics: []quality.ColumnMetric{quality.ZeroRate}}
	var rep *quality.Report
	for day := 0; day <= 14; day++ {
		at := at15(day)
		w, _ := quality.ParseWindow(quality.WindowSpec{Window: "this_hour"}, at)
		req.Window = w
		var err error
		if rep, err = quality.NewChecker(wh, hist, func() time.Time { return at }).Run(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if r := result(t, rep, "zero_rate", "cost_micros"); r.Status != quality.Fail || r.Why != "32.8% zeros this hour against 0% in every earlier check" {
		t.Errorf("%s %q", r.Status, r.Why)
	}
}
