package flinksql_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	"github.com/dataworkers/dw/pkg/lineage/scenario"
)

var scenarioDir = filepath.Join("..", "testdata", "scenario")

func edges(b graph.Batch) map[string]graph.Edge {
	out := map[string]graph.Edge{}
	for _, e := range b.Edges {
		out[e.From.String()+" -> "+e.To.String()] = e
	}
	return out
}

func TestScenarioStatementFromTheConfluentCloudObject(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(scenarioDir, "usage-hourly-rollup.statement.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := flinksql.ParseAPIStatement(raw)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "usage-hourly-rollup" || st.Phase != "RUNNING" || !st.CreatedAt.Equal(time.Date(2026, 3, 2, 9, 14, 7, 412000000, time.UTC)) ||
		st.Properties["sql.current-database"] != "usage-cluster" {
		t.Fatalf("statement %+v", st)
	}
	res, err := scenario.Resolver(scenarioDir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := flinksql.Import(context.Background(), st, res)
	if err != nil {
		t.Fatal(err)
	}
	if b.Source != "flink:statement/usage-hourly-rollup" {
		t.Errorf("source %s", b.Source)
	}
	got := edges(b)
	want := map[string]string{
		"kafka:topic/api-usage#response_bytes -> flink:statement/usage-hourly-rollup#egress_bytes":  "aggregation",
		"kafka:topic/api-usage#account_id -> flink:statement/usage-hourly-rollup#account_id":        "identity",
		"kafka:topic/api-usage#event_time -> flink:statement/usage-hourly-rollup#hour":              "transformation",
		"flink:statement/usage-hourly-rollup#egress_bytes -> kafka:topic/usage-hourly#egress_bytes": "identity",
		"kafka:topic/api-usage#account_id -> flink:statement/usage-hourly-rollup":                   "group_by",
		"kafka:topic/api-usage -> flink:statement/usage-hourly-rollup":                              "reads",
		"flink:statement/usage-hourly-rollup -> kafka:topic/usage-hourly":                           "writes",
		"schema:api-usage-value -> kafka:topic/api-usage":                                           "schema_of",
	}
	for k, kind := range want {
		e, ok := got[k]
		if !ok || string(e.Kind) != kind {
			t.Errorf("edge %s: got %+v, want kind %s", k, e, kind)
		}
	}
	if e := got["kafka:topic/api-usage#response_bytes -> flink:statement/usage-hourly-rollup#egress_bytes"]; e.Transformation != "SUM(response_bytes)" {
		t.Errorf("evidence %q", e.Transformation)
	}
	for k := range got {
		if strings.Contains(k, "status_code") || strings.Contains(k, "endpoint") {
			t.Errorf("unread column in lineage: %s", k)
		}
	}
	var stmt graph.Asset
	for _, a := range b.Assets {
		if a.URN == "flink:statement/usage-hourly-rollup" {
			stmt = a
		}
	}
	if stmt.Attrs["schema_pins"] != "api-usage-value v11" || stmt.Attrs["sql_kind"] != "INSERT_INTO" || stmt.Attrs["created_at"] != "2026-03-02T09:14:07Z" {
		t.Errorf("statement attrs %v", stmt.Attrs)
	}
}

func TestInsertColumnListMapsByPosition(t *testing.T) {
	b, err := flinksql.Import(context.Background(), flinksql.Statement{Name: "s", SQL: "INSERT INTO sink (total, acct) SELECT SUM(response_bytes), account_id FROM `api-usage` GROUP BY account_id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := edges(b)
	if _, ok := got["flink:statement/s#total -> kafka:topic/sink#total"]; !ok {
		t.Errorf("total not mapped: %v", got)
	}
	if e := got["kafka:topic/api-usage#response_bytes -> flink:statement/s#total"]; e.Kind != graph.EdgeAggregation {
		t.Errorf("response_bytes → total: %+v", e)
	}
	if len(b.Warnings) == 0 || !strings.Contains(strings.Join(b.Warnings, " "), "unknown to the schema resolver") {
		t.Errorf("a nil resolver must be reported: %v", b.Warnings)
	}
}

type failing struct{}

func (failing) ResolveTable(context.Context, flinksql.TableRef, time.Time) (flinksql.Table, error) {
	return flinksql.Table{}, errors.New("registry unreachable")
}

func TestImportRefusesWhatItCannotReadTruthfully(t *testing.T) {
	ctx := context.Background()
	if _, err := flinksql.Import(ctx, flinksql.Statement{Name: "s", SQL: "SELECT a FROM t"}, failing{}); err == nil || !strings.Contains(err.Error(), "registry unreachable") {
		t.Errorf("resolver failure: %v", err)
	}
	for _, st := range []flinksql.Statement{{Name: "", SQL: "SELECT 1"}, {Name: "s", SQL: " "}, {Name: "s", SQL: "INSERT INTO"}, {Name: "s", SQL: "SET 'a' = 'b'"}} {
		if _, err := flinksql.Import(ctx, st, nil); err == nil {
			t.Errorf("Import(%+v) accepted", st)
		}
	}
	for _, raw := range []string{`{}`, `[]`, `{"name":"x"}`, `{"name":"x","spec":{"statement":""}}`, `nope`} {
		if _, err := flinksql.ParseAPIStatement([]byte(raw)); err == nil {
			t.Errorf("ParseAPIStatement(%s) accepted", raw)
		}
	}
}

func TestColumnsFromAvro(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(scenarioDir, "api-usage-value.v11.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	cols, err := flinksql.ColumnsFromAvro(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	last := cols[len(cols)-1]
	if len(cols) != 6 || last.Name != "response_bytes" || !last.Nullable || last.Type != "long" {
		t.Errorf("columns %+v", cols)
	}
	if _, err := flinksql.ColumnsFromAvro(`"string"`); err == nil {
		t.Error("a non-record schema accepted")
	}
}
