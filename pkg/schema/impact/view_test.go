package impact_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

func mustParse(t *testing.T, f schema.Format, text string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse(f, text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func field(t *testing.T, s *schema.Schema, path string) *schema.Field {
	t.Helper()
	f, ok := s.Field(path)
	if !ok {
		t.Fatalf("no field %s", path)
	}
	return &f
}

const adClicksV4 = `syntax = "proto3";
package ads;
import "google/protobuf/wrappers.proto";
message AdClick {
  string click_id = 1;
  string campaign = 2;
  int64 cost_micros = 3;
  optional int64 bid_micros = 4;
  google.protobuf.Int64Value budget_micros = 5;
  bool billable = 6;
  Channel channel = 7;
  repeated string tags = 8;
}
enum Channel { CHANNEL_UNSPECIFIED = 0; SEARCH = 1; DISPLAY = 2; }`

const adClicksV5 = `syntax = "proto3";
package ads;
message AdClick {
  reserved 3, 4, 5, 6, 7, 8;
  reserved "cost_micros";
  string click_id = 1;
  string campaign = 2;
  double cost_usd = 9;
}`

func TestProto3RemovedScalarsReadAsZeroValuesNotNull(t *testing.T) {
	v4, v5 := mustParse(t, schema.Protobuf, adClicksV4), mustParse(t, schema.Protobuf, adClicksV5)
	cases := map[string]struct {
		sym  impact.Symptom
		sees string
	}{
		"cost_micros":   {impact.SymptomZeros, "0"},
		"billable":      {impact.SymptomZeros, "false"},
		"channel":       {impact.SymptomZeros, "CHANNEL_UNSPECIFIED (the enum's first value)"},
		"tags":          {impact.SymptomZeros, "an empty list"},
		"bid_micros":    {impact.SymptomNulls, "NULL"}, // proto3 optional has presence
		"budget_micros": {impact.SymptomNulls, "NULL"}, // a wrapper type
	}
	for path, want := range cases {
		v := impact.ReaderView(schema.Protobuf, field(t, v4, path), nil, "")
		if v.Symptom != want.sym || v.Sees != want.sees {
			t.Errorf("%s: got %s / %q (%s), want %s / %q", path, v.Symptom, v.Sees, v.Why, want.sym, want.sees)
		}
	}
	v := impact.ReaderView(schema.Protobuf, field(t, v4, "cost_micros"), nil, "")
	if !strings.Contains(v.Why, "not null") || strings.Contains(strings.Join(v.Checks, ","), "null_rate") {
		t.Errorf("a zero is not a null: %+v", v)
	}
	_ = v5
}

func TestProto2RequiredAndDefaults(t *testing.T) {
	old := mustParse(t, schema.Protobuf, `syntax = "proto2";
package wh;
message Pick { required string sku = 1; optional int32 qty = 2 [default = 1]; optional int32 bin = 3; }`)
	if v := impact.ReaderView(schema.Protobuf, field(t, old, "sku"), nil, ""); v.Symptom != impact.SymptomStatementFailed {
		t.Errorf("required: %+v", v)
	}
	// Under error-handling.mode log or ignore the record that fails to parse is skipped.
	if v := impact.ReaderView(schema.Protobuf, field(t, old, "sku"), nil, "log"); v.Symptom != impact.SymptomRowsMissing || !strings.Contains(v.Why, "skipped") {
		t.Errorf("required under log: %+v", v)
	}
	if v := impact.ReaderView(schema.Protobuf, field(t, old, "qty"), nil, ""); v.Symptom != impact.SymptomDefault || !strings.Contains(v.Sees, "1") {
		t.Errorf("default: %+v", v)
	}
	if v := impact.ReaderView(schema.Protobuf, field(t, old, "bin"), nil, ""); v.Symptom != impact.SymptomNulls {
		t.Errorf("proto2 optional has presence: %+v", v)
	}
}

func TestAvroResolutionDefaultsFailuresAndPromotions(t *testing.T) {
	old := mustParse(t, schema.Avro, `{"type":"record","name":"Scan","namespace":"depot","fields":[
  {"name":"parcel_id","type":"string"},
  {"name":"weight_grams","type":"long"},
  {"name":"dock","type":["null","string"],"default":null},
  {"name":"pieces","type":"int","default":0},
  {"name":"zone","type":"string","default":"A"},
  {"name":"volume_cm3","type":"double"},
  {"name":"seq","type":"long"}]}`)
	cases := []struct {
		path    string
		newType string // "" removed
		mode    string
		sym     impact.Symptom
	}{
		{"weight_grams", "", "", impact.SymptomStatementFailed},
		{"weight_grams", "", "log", impact.SymptomRowsMissing},
		{"weight_grams", "", "IGNORE", impact.SymptomRowsMissing},
		{"dock", "", "", impact.SymptomNulls},
		{"pieces", "", "", impact.SymptomZeros},
		{"zone", "", "", impact.SymptomDefault},
		{"volume_cm3", "float", "", impact.SymptomConverted}, // writer float promotes to reader double
		{"seq", "int", "", impact.SymptomConverted},
		{"seq", "double", "", impact.SymptomStatementFailed}, // narrowing: no promotion double → long
	}
	for _, c := range cases {
		var nf *schema.Field
		if c.newType != "" {
			f := *field(t, old, c.path)
			f.Type = c.newType
			nf = &f
		}
		v := impact.ReaderView(schema.Avro, field(t, old, c.path), nf, c.mode)
		if v.Symptom != c.sym {
			t.Errorf("%s→%q (%s): got %s (%s), want %s", c.path, c.newType, c.mode, v.Symptom, v.Why, c.sym)
		}
	}
	v := impact.ReaderView(schema.Avro, field(t, old, "weight_grams"), nil, "log")
	if !strings.Contains(v.Why, "no default") || !strings.Contains(v.Why, "rows vanish") || !slicesHas(v.Checks, "volume") {
		t.Errorf("skip: %+v", v)
	}
}

func TestJSONSchemaMissingPropertyIsNull(t *testing.T) {
	old := mustParse(t, schema.JSON, `{"type":"object","properties":{"ride_id":{"type":"string"},"distance_km":{"type":"number"}},"required":["ride_id"]}`)
	v := impact.ReaderView(schema.JSON, field(t, old, "distance_km"), nil, "")
	if v.Symptom != impact.SymptomNulls || v.Sees != "NULL" {
		t.Errorf("%+v", v)
	}
}

func slicesHas(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tables resolves the Flink tables of a test's statements by name.
type tables map[string]flinksql.Table

func (ts tables) ResolveTable(_ context.Context, ref flinksql.TableRef, _ time.Time) (flinksql.Table, error) {
	if t, ok := ts[ref.Table]; ok {
		return t, nil
	}
	return flinksql.Table{}, flinksql.ErrTableNotFound
}

// importStatement records a Flink statement in g, with extra attributes on its asset.
func importStatement(t *testing.T, g *graph.Graph, name, sql string, ts tables, attrs map[string]string) {
	t.Helper()
	ctx := context.Background()
	b, err := flinksql.Import(ctx, flinksql.Statement{Name: name, SQL: sql}, ts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.Assets {
		if b.Assets[i].URN == graph.FlinkStatementURN(name) {
			for k, v := range attrs {
				b.Assets[i].Attrs[k] = v
			}
		}
	}
	if _, err := g.Import(ctx, b); err != nil {
		t.Fatal(err)
	}
}

func cols(names ...string) []flinksql.Column {
	out := make([]flinksql.Column, 0, len(names))
	for _, n := range names {
		out = append(out, flinksql.Column{Name: n, Type: "STRING"})
	}
	return out
}

const finishedTripsSQL = "INSERT INTO `finished-trips` SELECT city, COUNT(*) AS trips, SUM(fare_cents) AS fare_cents FROM `trips` WHERE trip_state = 'ENDED' GROUP BY city"

var (
	adTables = tables{
		"ad-clicks":      {Topic: "ad-clicks", ValueSubject: "ad-clicks-value", SchemaVersion: 4, Columns: cols("click_id", "campaign", "cost_micros")},
		"campaign-spend": {Topic: "campaign-spend", Columns: cols("campaign", "spend_micros")},
	}
	depotTables = tables{
		"parcel-scans": {Topic: "parcel-scans", ValueSubject: "parcel-scans-value", SchemaVersion: 7, Columns: cols("parcel_id", "depot", "weight_grams")},
		"depot-load":   {Topic: "depot-load", Columns: cols("depot", "total_grams")},
	}
	tripTables = tables{
		"trips":          {Topic: "trips", ValueSubject: "trips-value", SchemaVersion: 2, Columns: cols("trip_id", "city", "trip_state", "fare_cents")},
		"finished-trips": {Topic: "finished-trips", Columns: cols("city", "trips", "fare_cents")},
	}
)

func TestAssessProto3RemovalPredictsZerosForThePinnedStatement(t *testing.T) {
	g := seeded(t, 0)
	ctx := context.Background()
	importStatement(t, g, "campaign-spend-rollup",
		"INSERT INTO `campaign-spend` SELECT campaign, SUM(cost_micros) AS spend_micros FROM `ad-clicks` GROUP BY campaign", adTables, nil)
	v4, v5 := mustParse(t, schema.Protobuf, adClicksV4), mustParse(t, schema.Protobuf, adClicksV5)
	a, err := impact.New(g, func() time.Time { return now }).Assess(ctx, impact.Request{Subject: "ad-clicks-value", OldVersion: 4, NewVersion: 5, Old: v4, New: v5})
	if err != nil {
		t.Fatal(err)
	}
	var pred *impact.View
	for i, p := range a.Predicted {
		if p.Field == "cost_micros" {
			pred = &a.Predicted[i]
		}
	}
	if pred == nil || pred.Symptom != impact.SymptomZeros {
		t.Fatalf("predicted %+v", a.Predicted)
	}
	for _, r := range a.Readers {
		if r.URN == graph.FlinkStatementURN("campaign-spend-rollup") && r.Field == "cost_micros" {
			if r.Symptom != impact.SymptomUnderstated || r.Sees != "0" || !r.Breaks || len(r.Reads) != 1 ||
				r.Reads[0].Sentence != "`SUM(cost_micros)` adds zeros: sums drop toward zero and no null check sees it (into spend_micros)" ||
				!strings.Contains(r.Effect, "0 for v5 records, not NULL") || !strings.Contains(r.Effect, "SUM(cost_micros) shrinks") {
				t.Fatalf("statement %+v", r)
			}
			return
		}
	}
	t.Fatalf("statement not among %+v", a.Readers)
}

func TestAssessAvroRemovalWithoutDefaultSkipsRowsUnderErrorHandlingLog(t *testing.T) {
	g := seeded(t, 0)
	ctx := context.Background()
	importStatement(t, g, "depot-load-rollup",
		"INSERT INTO `depot-load` SELECT depot, SUM(weight_grams) AS total_grams FROM `parcel-scans` GROUP BY depot", depotTables,
		map[string]string{impact.ErrorHandlingAttr: "log"})
	v7 := mustParse(t, schema.Avro, `{"type":"record","name":"Scan","fields":[{"name":"parcel_id","type":"string"},{"name":"depot","type":"string"},{"name":"weight_grams","type":"long"}]}`)
	v8 := mustParse(t, schema.Avro, `{"type":"record","name":"Scan","fields":[{"name":"parcel_id","type":"string"},{"name":"depot","type":"string"},{"name":"weight_kg","type":"double","default":0}]}`)
	a, err := impact.New(g, func() time.Time { return now }).Assess(ctx, impact.Request{Subject: "parcel-scans-value", OldVersion: 7, NewVersion: 8, Old: v7, New: v8})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Predicted) != 1 || a.Predicted[0].Symptom != impact.SymptomStatementFailed {
		t.Fatalf("predicted under the default handling: %+v", a.Predicted)
	}
	found := false
	for _, r := range a.Readers {
		t.Logf("%s: %s", r.URN, r.Effect)
		switch r.URN {
		case graph.FlinkStatementURN("depot-load-rollup"):
			found = true
			if r.Symptom != impact.SymptomRowsMissing || !strings.Contains(r.Effect, "are skipped") || !strings.Contains(r.Effect, "SUM(weight_grams) shrinks") {
				t.Errorf("statement %+v", r)
			}
		default:
			if r.Symptom != impact.SymptomRowsMissing || !strings.Contains(r.Effect, "undecodable") {
				t.Errorf("downstream %+v", r)
			}
		}
	}
	if !found {
		t.Fatalf("statement not among %+v", a.Readers)
	}
}

func TestAssessNewEnumValueMeetsAFilterThatDropsIt(t *testing.T) {
	g := seeded(t, 0)
	ctx := context.Background()
	importStatement(t, g, "finished-trips-by-city", finishedTripsSQL, tripTables, nil)
	v2 := mustParse(t, schema.JSON, `{"type":"object","properties":{"trip_id":{"type":"string"},"city":{"type":"string"},
"trip_state":{"enum":["REQUESTED","ONGOING","ENDED","CANCELLED"]},"fare_cents":{"type":"integer"}},"required":["trip_id"]}`)
	v3 := mustParse(t, schema.JSON, `{"type":"object","properties":{"trip_id":{"type":"string"},"city":{"type":"string"},
"trip_state":{"enum":["REQUESTED","ONGOING","ENDED","ENDED_BY_DRIVER","CANCELLED"]},"fare_cents":{"type":"integer"}},"required":["trip_id"]}`)
	a, err := impact.New(g, func() time.Time { return now }).Assess(ctx, impact.Request{Subject: "trips-value", OldVersion: 2, NewVersion: 3, Old: v2, New: v3})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.ValueChanges) != 1 || a.ValueChanges[0].NewValues[0] != "ENDED_BY_DRIVER" {
		t.Fatalf("value changes %+v", a.ValueChanges)
	}
	vr := impact.ValueReaders(a)
	if len(vr) != 1 || vr[0].URN != graph.FlinkStatementURN("finished-trips-by-city") || vr[0].Symptom != impact.SymptomRowsMissing ||
		vr[0].Effect != "the new value ENDED_BY_DRIVER is filtered out by `WHERE trip_state = 'ENDED'`: those rows vanish from this reader" {
		t.Fatalf("value readers %+v (all: %+v)", vr, a.Readers)
	}
	if a.Broken != 1 || a.Verdict != "compatible but breaks 1 readers" {
		t.Errorf("verdict %s, broken %d", a.Verdict, a.Broken)
	}
	// The same filter, given a code seen in the topic instead of a schema symbol.
	a, err = impact.New(g, func() time.Time { return now }).Assess(ctx, impact.Request{Subject: "trips-value", OldVersion: 2, NewVersion: 2, Old: v2, New: v2,
		NewValues: []impact.ValueChange{{Field: "trip_state", NewValues: []string{"ended"}, Source: "topic sample"}}})
	if err != nil {
		t.Fatal(err)
	}
	if vr := impact.ValueReaders(a); len(vr) != 1 || !strings.Contains(vr[0].Effect, "the new value ended is filtered out") {
		t.Fatalf("observed value %+v", a.Readers)
	}
}

// An Avro enum symbol added: a statement pinned to the old version cannot resolve it without an
// enum default (it fails, or skips those records under error-handling log), and reads the default
// when there is one.
func TestAvroEnumSymbolAddedFailsAPinnedReaderWithoutAnEnumDefault(t *testing.T) {
	old := `{"type":"record","name":"Shipment","fields":[{"name":"id","type":"string"},
{"name":"mode","type":{"type":"enum","name":"Mode","symbols":["ROAD","RAIL"]}}]}`
	withDefault := `{"type":"record","name":"Shipment","fields":[{"name":"id","type":"string"},
{"name":"mode","type":{"type":"enum","name":"Mode","symbols":["ROAD","RAIL","OTHER"],"default":"OTHER"}}]}`
	newer := `{"type":"record","name":"Shipment","fields":[{"name":"id","type":"string"},
{"name":"mode","type":{"type":"enum","name":"Mode","symbols":["ROAD","RAIL","SEA"]}}]}`
	p := impact.Predict(mustParse(t, schema.Avro, old), mustParse(t, schema.Avro, newer), "")
	if len(p) != 1 || p[0].Symptom != impact.SymptomStatementFailed || !strings.Contains(p[0].Why, "lacks SEA and declares no default") {
		t.Fatalf("no default: %+v", p)
	}
	p = impact.Predict(mustParse(t, schema.Avro, old), mustParse(t, schema.Avro, newer), "ignore")
	if len(p) != 1 || p[0].Symptom != impact.SymptomRowsMissing {
		t.Fatalf("ignore: %+v", p)
	}
	newer2 := strings.Replace(withDefault, `"OTHER"],"default"`, `"OTHER","SEA"],"default"`, 1)
	p = impact.Predict(mustParse(t, schema.Avro, withDefault), mustParse(t, schema.Avro, newer2), "")
	if len(p) != 1 || p[0].Symptom != impact.SymptomDefault || p[0].Sees != "the enum default OTHER" {
		t.Fatalf("default: %+v", p)
	}
}

func TestAssessAvroEnumSymbolAddedStopsThePinnedStatementBeforeItsFilter(t *testing.T) {
	g := seeded(t, 0)
	ctx := context.Background()
	importStatement(t, g, "finished-trips-by-city", finishedTripsSQL, tripTables, nil)
	rec := func(symbols string) *schema.Schema {
		return mustParse(t, schema.Avro, `{"type":"record","name":"Trip","fields":[{"name":"trip_id","type":"string"},{"name":"city","type":"string"},
{"name":"trip_state","type":{"type":"enum","name":"TripState","symbols":[`+symbols+`]}},{"name":"fare_cents","type":"long"}]}`)
	}
	a, err := impact.New(g, func() time.Time { return now }).Assess(ctx, impact.Request{Subject: "trips-value", OldVersion: 2, NewVersion: 3,
		Old: rec(`"REQUESTED","ENDED"`), New: rec(`"REQUESTED","ENDED","ENDED_BY_DRIVER"`)})
	if err != nil {
		t.Fatal(err)
	}
	vr := impact.ValueReaders(a)
	if len(vr) != 1 || vr[0].Symptom != impact.SymptomStatementFailed || vr[0].PinnedVersion != 2 || len(vr[0].Reads) != 2 ||
		!strings.Contains(vr[0].Effect, "decodes trip_state with the schema it was created against: Avro resolution: the reader's enum TripState lacks ENDED_BY_DRIVER") {
		t.Fatalf("%+v", vr)
	}
}

func FuzzPredict(f *testing.F) {
	f.Add(`{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"e","type":{"type":"enum","name":"E","symbols":["X"]}}]}`,
		`{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}}]}`, "log")
	f.Add(`syntax = "proto3"; message M { int64 a = 1; optional string b = 2; }`, `syntax = "proto3"; message M { reserved 1; string a = 3; }`, "")
	f.Add(`{"type":"object","properties":{"a":{"type":"number"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`, "ignore")
	f.Fuzz(func(t *testing.T, old, new, mode string) {
		for _, fm := range []schema.Format{schema.Avro, schema.Protobuf, schema.JSON} {
			o, err1 := schema.Parse(fm, old)
			n, err2 := schema.Parse(fm, new)
			if err1 != nil || err2 != nil {
				continue
			}
			for _, v := range impact.Predict(o, n, mode) {
				if v.Symptom == "" || v.Why == "" || v.Field == "" {
					t.Fatalf("incomplete prediction %+v", v)
				}
			}
		}
	})
}
