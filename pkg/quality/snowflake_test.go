package quality_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/sftest"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// snowflakeAnswers plays ANALYTICS.USAGE.USAGE_HOURLY: two hours today of 100 rows each, 18 of
// them with a null EGRESS_BYTES.
func snowflakeAnswers(q sftest.Query) sftest.Result {
	bound := func(v string) bool {
		for _, b := range q.Bindings {
			if s, ok := b.Value.(string); ok && strings.EqualFold(s, v) {
				return true
			}
		}
		return false
	}
	today := time.Date(2025, 12, 15, 0, 0, 0, 0, time.UTC)
	switch {
	case strings.Contains(q.SQL, "INFORMATION_SCHEMA.TABLES"):
		res := sftest.Result{Columns: []sftest.Column{{Name: "TABLE_CATALOG", Type: "text"}, {Name: "TABLE_SCHEMA", Type: "text"},
			{Name: "TABLE_NAME", Type: "text"}, {Name: "TABLE_TYPE", Type: "text"}, {Name: "ROW_COUNT", Type: "fixed"}}}
		if bound("usage_hourly") || !strings.Contains(q.SQL, "TABLE_NAME") {
			res.Rows = [][]any{{"ANALYTICS", "USAGE", "USAGE_HOURLY", "BASE TABLE", 24000}}
		}
		return res
	case strings.Contains(q.SQL, "INFORMATION_SCHEMA.COLUMNS"):
		return sftest.Result{Columns: []sftest.Column{{Name: "COLUMN_NAME", Type: "text"}, {Name: "DATA_TYPE", Type: "text"},
			{Name: "IS_NULLABLE", Type: "text"}, {Name: "ORDINAL_POSITION", Type: "fixed"}},
			Rows: [][]any{{"USAGE_ID", "TEXT", "NO", 1}, {"ACCOUNT_ID", "NUMBER", "YES", 2}, {"HOUR", "TIMESTAMP_NTZ", "NO", 3}, {"EGRESS_BYTES", "NUMBER", "YES", 4}}}
	case strings.HasPrefix(q.SQL, "SELECT DATE_TRUNC('HOUR', \"HOUR\")"):
		ts := sftest.Column{Type: "timestamp_ntz", Scale: 9}
		n := sftest.Column{Type: "fixed"}
		return sftest.Result{Columns: []sftest.Column{ts, n, n, n}, Rows: [][]any{
			{today.Add(13 * time.Hour), 100, 100, 82},
			{today.Add(14 * time.Hour), 100, 100, 82},
		}}
	case strings.HasPrefix(q.SQL, "SELECT MAX(\"HOUR\")"):
		return sftest.Result{Columns: []sftest.Column{{Type: "timestamp_ntz", Scale: 9}}, Rows: [][]any{{today.Add(14 * time.Hour)}}}
	case strings.Contains(q.SQL, "count(DISTINCT \"USAGE_ID\")"):
		return sftest.Result{Columns: []sftest.Column{{Type: "fixed"}}, Rows: [][]any{{0}}}
	case strings.Contains(q.SQL, "MISSING_TABLE"):
		return sftest.Result{ErrCode: "002003", ErrMsg: "SQL compilation error:\nObject 'MISSING_TABLE' does not exist or not authorized."}
	}
	return sftest.Result{ErrCode: "001003", ErrMsg: "SQL compilation error: unexpected query in the stand-in: " + q.SQL}
}

func TestSnowflakeCheckThroughGosnowflake(t *testing.T) {
	sf := sftest.Start(t, snowflakeAnswers)
	wh, err := warehouse.Connect(&config.Warehouse{Engine: "snowflake", DSN: sf.DSN(), StatementTimeout: 30 * time.Second, MaxSampleRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 12, 15, 15, 5, 0, 0, time.UTC)
	w, _ := quality.ParseWindow(quality.WindowSpec{}, now)
	rep, err := quality.NewChecker(wh, quality.NewHistory(openStore(t)), func() time.Time { return now }).Run(context.Background(), quality.Request{
		Table: "usage.usage_hourly", TimestampColumn: "hour", KeyColumns: []string{"usage_id"}, Window: w,
		Checks: []quality.Check{quality.Volume, quality.Freshness, quality.NullRate, quality.Uniqueness},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Asset != "warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY" || rep.TimestampColumn != "HOUR" {
		t.Errorf("report = %+v", rep)
	}
	if r := result(t, rep, "null_rate", "EGRESS_BYTES"); r.Value != 0.18 || !strings.HasPrefix(r.Why, "18% null today") {
		t.Errorf("null rate = %+v", r)
	}
	if r := result(t, rep, "rows_per_hour", ""); *r.Rows != 200 || len(r.Hours) != 2 || r.Hours[1].Rows != 100 {
		t.Errorf("volume = %+v", r)
	}
	if r := result(t, rep, "freshness_lag_seconds", "HOUR"); r.Value != 3900 || r.SQL != `SELECT MAX("HOUR") FROM "ANALYTICS"."USAGE"."USAGE_HOURLY"` {
		t.Errorf("freshness = %+v", r)
	}
	// Snowflake does not enforce UNIQUE, so uniqueness is counted, not inferred.
	if r := result(t, rep, "duplicate_rows", "USAGE_ID"); r.Value != 0 || !strings.Contains(r.SQL, "count(DISTINCT") {
		t.Errorf("uniqueness = %+v", r)
	}
	got := sf.Received()
	if len(got) != 5 { // tables, columns, pass, max, distinct
		t.Errorf("queries sent = %d: %+v", len(got), got)
	}
	for _, q := range got {
		if strings.Contains(q.SQL, "LAST_ALTERED") {
			t.Errorf("freshness must not read LAST_ALTERED: %s", q.SQL)
		}
	}
	if b := got[2].Bindings; len(b) != 2 || b["1"].Type != "TIMESTAMP_NTZ" {
		t.Errorf("window bound as %+v", b)
	}
	// Snowflake has no indexes: the plan is one pass grouped by DATE_TRUNC, its window a range on
	// the bare column (which prunes micro-partitions by their min/max), and the newest hour comes
	// from metadata (MAX of the whole column), not from the pass.
	if pass := got[2].SQL; !strings.HasPrefix(pass, `SELECT DATE_TRUNC('HOUR', "HOUR") AS hour_bucket, count(*), count("ACCOUNT_ID"), count("EGRESS_BYTES") FROM`) ||
		!strings.HasSuffix(pass, ` WHERE "HOUR" >= ? AND "HOUR" < ? GROUP BY 1`) {
		t.Errorf("pass = %s", pass)
	}
	params, _ := sf.Login["SESSION_PARAMETERS"].(map[string]any)
	if params["STATEMENT_TIMEOUT_IN_SECONDS"] != "30" || params["TIMEZONE"] != "UTC" || params["QUERY_TAG"] != "data-workers" {
		t.Errorf("session parameters = %v", sf.Login["SESSION_PARAMETERS"])
	}

	_, err = quality.NewChecker(wh, nil, func() time.Time { return now }).Run(context.Background(), quality.Request{
		Table: "usage_hourly", Window: w, Checks: []quality.Check{quality.Custom},
		Assertions: []quality.Assertion{{Name: "x", SQL: "SELECT * FROM MISSING_TABLE"}},
	})
	if !errors.Is(err, warehouse.ErrNoSuchTable) || !strings.Contains(err.Error(), "MISSING_TABLE") {
		t.Errorf("missing table: %v", err)
	}
	if _, err := wh.DescribeTable(context.Background(), "nope"); !errors.Is(err, warehouse.ErrNoSuchTable) {
		t.Errorf("unknown table: %v", err)
	}
	if err := wh.Close(); err != nil {
		t.Fatal(err)
	}
	if !sf.SessionDeleted {
		t.Error("closing the pool did not delete the session")
	}
}

// The column check reads Snowflake's answers through gosnowflake too (numbers arrive as text and
// doubles), with the distinct count approximated by HyperLogLog.
func TestSnowflakeColumnMetricsThroughGosnowflake(t *testing.T) {
	answers := func(q sftest.Query) sftest.Result {
		n, r := sftest.Column{Type: "fixed"}, sftest.Column{Type: "real"}
		switch {
		case strings.HasPrefix(q.SQL, `SELECT NULL AS hour_bucket, count(*), count("EGRESS_BYTES"), count(CASE WHEN "EGRESS_BYTES" = 0 THEN 1 END), SUM(CAST("EGRESS_BYTES" AS DOUBLE)) FROM`):
			return sftest.Result{Columns: []sftest.Column{{Type: "text"}, n, n, n, r}, Rows: [][]any{{nil, 200, 164, 41, 8.2e9}}}
		case strings.HasPrefix(q.SQL, `SELECT APPROX_COUNT_DISTINCT("EGRESS_BYTES") FROM`):
			return sftest.Result{Columns: []sftest.Column{n}, Rows: [][]any{{120}}}
		}
		return snowflakeAnswers(q)
	}
	sf := sftest.Start(t, answers)
	wh, err := warehouse.Connect(&config.Warehouse{Engine: "snowflake", DSN: sf.DSN(), StatementTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	now := time.Date(2025, 12, 15, 15, 5, 0, 0, time.UTC)
	w, _ := quality.ParseWindow(quality.WindowSpec{}, now)
	rep, err := quality.NewChecker(wh, nil, func() time.Time { return now }).Run(context.Background(), quality.Request{
		Table: "usage.usage_hourly", TimestampColumn: "hour", Window: w, Checks: []quality.Check{quality.Column}, Columns: []string{"egress_bytes"},
		ColumnMetrics: []quality.ColumnMetric{quality.ZeroRate, quality.SumPerHour, quality.Mean, quality.Distinct},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		metric string
		want   float64
	}{{"zero_rate", 0.25}, {"mean", 5e7}, {"distinct", 120}, {"sum_per_hour", 543646408.839779}} {
		if r := result(t, rep, c.metric, "EGRESS_BYTES"); r.Value != c.want {
			t.Errorf("%s = %v, want %v (%s)", c.metric, r.Value, c.want, r.Why)
		}
	}
	if rep.Queries != 2 {
		t.Errorf("queries = %d, want the pass and the distinct count", rep.Queries)
	}
}
