package flinksql_test

import (
	"context"
	"errors"
	"fmt"
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

// versioned is a VersionResolver over fixed column lists per version of each table's value
// subject; the pin is unknown, so Import must infer it.
type versioned map[string]map[int][]string

func (v versioned) table(ref flinksql.TableRef, n int) (flinksql.Table, error) {
	cols, ok := v[ref.Table][n]
	if !ok {
		return flinksql.Table{}, flinksql.ErrTableNotFound
	}
	t := flinksql.Table{Topic: ref.Table, ValueSubject: ref.Table + "-value", SchemaVersion: n}
	for _, c := range cols {
		t.Columns = append(t.Columns, flinksql.Column{Name: c, Type: "long"})
	}
	return t, nil
}

func (v versioned) ResolveTable(_ context.Context, ref flinksql.TableRef, _ time.Time) (flinksql.Table, error) {
	var order []int
	for n := range v[ref.Table] {
		order = append(order, n)
	}
	if len(order) == 0 {
		return flinksql.Table{}, flinksql.ErrTableNotFound
	}
	order = flinksql.InferenceOrder(order, flinksql.Pin{})
	t, err := v.table(ref, order[0])
	t.Candidates = order
	return t, err
}

func (v versioned) ResolveTableVersion(_ context.Context, ref flinksql.TableRef, n int) (flinksql.Table, error) {
	return v.table(ref, n)
}

func TestUnknownPinIsInferredFromTheSQL(t *testing.T) {
	reg := versioned{
		"api-usage": {10: {"account_id", "bytes"}, 11: {"account_id", "response_bytes", "endpoint"}, 12: {"account_id", "response_kib", "endpoint"}},
		"accounts":  {1: {"account_id", "name"}, 2: {"account_id", "name", "plan"}},
	}
	cases := []struct {
		name, sql string
		pins      string // want schema_pins ("" = none)
		edge      string // an edge that must be there
		warn      string
	}{
		{"a dropped column pins the version before", "INSERT INTO out SELECT account_id, SUM(response_bytes) AS b FROM `api-usage` GROUP BY account_id",
			"api-usage-value v11", "kafka:topic/api-usage#response_bytes -> flink:statement/s#b", "v12 lacks response_bytes"},
		{"every version resolves: the newest", "SELECT account_id FROM `api-usage`", "api-usage-value v12", "kafka:topic/api-usage#account_id -> flink:statement/s#account_id", "pinned to v12"},
		{"qualified columns of a join", "SELECT u.response_bytes, a.plan FROM `api-usage` u JOIN accounts a ON u.account_id = a.account_id",
			"api-usage-value v11,accounts-value v2", "kafka:topic/accounts#plan -> flink:statement/s#plan", "pinned to v11"},
		{"unqualified columns of a join", "SELECT response_bytes, name FROM `api-usage` u JOIN accounts a ON u.account_id = a.account_id",
			"api-usage-value v11,accounts-value v2", "kafka:topic/api-usage#response_bytes -> flink:statement/s#response_bytes", "v12 lacks response_bytes"},
		{"no version resolves: unpinned, by name", "SELECT account_id, nope FROM `api-usage`", "", "kafka:topic/api-usage#nope -> flink:statement/s#nope", "left unpinned"},
		{"system columns always resolve", "SELECT account_id, $rowtime AS ts FROM `api-usage`", "api-usage-value v12", "kafka:topic/api-usage#account_id -> flink:statement/s#account_id", "pinned to v12"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := flinksql.Import(context.Background(), flinksql.Statement{Name: "s", SQL: c.sql}, reg)
			if err != nil {
				t.Fatal(err)
			}
			attrs := b.Assets[0].Attrs
			if attrs["schema_pins"] != c.pins {
				t.Errorf("schema_pins %q, want %q (warnings %v)", attrs["schema_pins"], c.pins, b.Warnings)
			}
			if c.pins != "" && strings.Count(attrs["schema_pin_source"], "inferred_from_sql") != strings.Count(c.pins, ",")+1 {
				t.Errorf("schema_pin_source %q", attrs["schema_pin_source"])
			}
			if _, ok := edges(b)[c.edge]; !ok {
				t.Errorf("missing %s in %v", c.edge, edges(b))
			}
			if !strings.Contains(strings.Join(b.Warnings, "\n"), c.warn) {
				t.Errorf("warnings %v lack %q", b.Warnings, c.warn)
			}
		})
	}
}

func TestParsePinsKeepsOnlyPinsWithASource(t *testing.T) {
	got := flinksql.ParsePins(map[string]string{"schema_pins": "usage-hourly-value v1, api-usage-value v11,garbage,x vY,accounts-value v3",
		"schema_pin_source": "inferred_from_sql,first_seen,given,given,guess"})
	want := map[string]flinksql.Pin{"usage-hourly-value": {Version: 1, Source: "inferred_from_sql"}, "api-usage-value": {Version: 11, Source: "first_seen"}}
	if len(got) != len(want) || got["usage-hourly-value"] != want["usage-hourly-value"] || got["api-usage-value"] != want["api-usage-value"] {
		t.Errorf("ParsePins = %v, want %v", got, want)
	}
	if legacy := flinksql.ParsePins(map[string]string{"schema_pins": "api-usage-value v12"}); len(legacy) != 0 {
		t.Errorf("a pin without a source (a guess of an older release) was kept: %v", legacy)
	}
	if !got["api-usage-value"].Real() || got["usage-hourly-value"].Real() {
		t.Error("Real: first_seen is a fact, an inference is not")
	}
}

func TestFirstSeenPinAndInferenceOrder(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	vs := []flinksql.SeenVersion{{Version: 10, FirstSeen: day(1)}, {Version: 11, FirstSeen: day(3), Deleted: true}, {Version: 12, FirstSeen: day(9)}}
	for at, want := range map[int]int{0: 0, 2: 10, 5: 10, 9: 12} {
		var created time.Time
		if at > 0 {
			created = day(at)
		}
		if got, ok := flinksql.FirstSeenPin(vs, created); got != want || ok != (want > 0) {
			t.Errorf("FirstSeenPin at day %d = %d %v, want %d", at, got, ok, want)
		}
	}
	if got := flinksql.InferenceOrder([]int{3, 1, 2}, flinksql.Pin{Version: 2, Source: flinksql.PinInferred}); fmt.Sprint(got) != "[2 3 1]" {
		t.Errorf("InferenceOrder = %v", got)
	}
	if got := flinksql.InferenceOrder([]int{1, 2}, flinksql.Pin{Version: 7}); fmt.Sprint(got) != "[2 1]" {
		t.Errorf("InferenceOrder with a vanished prior = %v", got)
	}
}
