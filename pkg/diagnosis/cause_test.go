package diagnosis

import (
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

func predict(t *testing.T, f schema.Format, old, new string) []impact.View {
	t.Helper()
	o, err := schema.Parse(f, old)
	if err != nil {
		t.Fatal(err)
	}
	n, err := schema.Parse(f, new)
	if err != nil {
		t.Fatal(err)
	}
	return impact.Predict(o, n, "")
}

// A sensor statement pinned to v3 fails to deserialize v4, which dropped a field without a
// default; the warehouse table it feeds goes stale. The change is the cause, the failed statement
// its evidence.
func TestAStatementThatFailedToDeserializeIsEvidenceForTheChange(t *testing.T) {
	v3 := `{"type":"record","name":"Reading","namespace":"sensor","fields":[{"name":"device","type":"string"},{"name":"humidity_pct","type":"double"}]}`
	v4 := `{"type":"record","name":"Reading","namespace":"sensor","fields":[{"name":"device","type":"string"},{"name":"humidity_permille","type":["null","int"],"default":null}]}`
	sc := SchemaChange{Subject: "sensor-readings-value", Version: 4, FirstSeen: t0.Add(-40 * time.Minute), Distance: 3,
		Changes: []FieldChange{{Path: "humidity_pct", Change: "removed"}, {Path: "humidity_permille", Change: "added"}},
		OnPath:  []string{}, SubjectUpstream: true,
		Readers:   []Reader{{URN: "flink:statement/sensor-hourly", PinnedVersion: 3, ReadsFields: []string{"humidity_pct"}, Expression: "AVG(humidity_pct)"}},
		Predicted: predict(t, schema.Avro, v3, v4), NewVersionShare: -1, FieldNullRate: -1, OlderNullRate: -1}
	stmt := ComponentState{URN: "flink:statement/sensor-hourly", Kind: ComponentStatement, State: "FAILED", Streaming: true, Distance: 2,
		Since:  t0.Add(-38 * time.Minute),
		Detail: "Failed to deserialize Avro record: org.apache.avro.AvroTypeException: Found sensor.Reading, expecting sensor.Reading, missing required field humidity_pct"}
	res := Rank(Input{FailureMode: ModeFreshness, Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{sc}, Components: []ComponentState{stmt}})
	if len(res.Candidates) != 2 {
		t.Fatalf("%+v", res.Candidates)
	}
	top, second := res.Candidates[0], res.Candidates[1]
	if top.Kind != "schema_change" || second.Kind != "component_failure" || second.EffectOf != top.Source {
		t.Fatalf("the change must rank first and the failure be its effect: %+v", res.Candidates)
	}
	ev := strings.Join(top.Evidence, " | ")
	for _, want := range []string{"its error names humidity_pct, which v4 changed", "2m0s after v4 appeared", "not a rival cause",
		"predicted: Avro resolution: the reader's humidity_pct has no default"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q: %s", want, ev)
		}
	}
	if !has(top.Supports, KindMode) || !strings.Contains(top.SymptomCheck, "matches the prediction for humidity_pct") ||
		len(top.Predicted) != 1 || top.Predicted[0].Symptom != impact.SymptomStatementFailed {
		t.Errorf("the freshness failure should match the predicted failure: %+v", top)
	}
	if !strings.Contains(second.Cause, "the effect of sensor-readings-value v4 removed humidity_pct") {
		t.Errorf("cause %q", second.Cause)
	}
	if !strings.Contains(res.Conclusion, "sensor-readings-value v4") {
		t.Errorf("conclusion %q", res.Conclusion)
	}
}

// A statement that failed before the version appeared, or with an error that is not about
// decoding, stays a rival cause.
func TestAnUnrelatedStatementFailureIsNotTiedToTheChange(t *testing.T) {
	sc := SchemaChange{Subject: "sensor-readings-value", Version: 4, FirstSeen: t0.Add(-40 * time.Minute), Distance: 3,
		Changes: []FieldChange{{Path: "humidity_pct", Change: "removed"}}, SubjectUpstream: true, NewVersionShare: -1, FieldNullRate: -1, OlderNullRate: -1}
	for _, cs := range []ComponentState{
		{URN: "flink:statement/sensor-hourly", Kind: ComponentStatement, State: "FAILED", Since: t0.Add(-50 * time.Minute), Distance: 2,
			Detail: "missing required field humidity_pct"},
		{URN: "flink:statement/sensor-hourly", Kind: ComponentStatement, State: "FAILED", Since: t0.Add(-30 * time.Minute), Distance: 2,
			Detail: "compute pool lfcp-01 ran out of CFUs"},
	} {
		res := Rank(Input{FailureMode: ModeFreshness, Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{sc}, Components: []ComponentState{cs}})
		for _, c := range res.Candidates {
			if c.EffectOf != "" {
				t.Errorf("%q tied: %+v", cs.Detail, c)
			}
		}
	}
}

// Proto3 zeros: a null-rate check downstream of the pinned statement is not what the change
// predicts, and the diagnosis says so; a custom zero-rate rule is, and counts as mode evidence.
func TestTheObservedSymptomIsCheckedAgainstTheProto3Prediction(t *testing.T) {
	v1 := `syntax = "proto3"; package shop; message Order { string id = 1; int64 discount_micros = 2; }`
	v2 := `syntax = "proto3"; package shop; message Order { reserved 2; string id = 1; }`
	sc := SchemaChange{Subject: "orders-value", Version: 2, FirstSeen: t0.Add(-30 * time.Minute), Distance: 3,
		Changes: []FieldChange{{Path: "discount_micros", Change: "removed"}}, OnPath: []string{"discount_micros"},
		Readers:   []Reader{{URN: "flink:statement/order-discounts", PinnedVersion: 1, ReadsFields: []string{"discount_micros"}}},
		Predicted: predict(t, schema.Protobuf, v1, v2), NewVersionShare: -1, FieldNullRate: -1, OlderNullRate: -1}
	res := Rank(Input{FailureMode: ModeNullRate, Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{sc}})
	if c := res.Candidates[0]; !strings.Contains(c.SymptomCheck, "discount_micros → zeros") || !strings.Contains(c.SymptomCheck, "which a null_rate check would not see first") {
		t.Errorf("null rate against predicted zeros: %+v", c)
	}
	res = Rank(Input{FailureMode: ModeCustom, Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{sc}})
	if c := res.Candidates[0]; !has(c.Supports, KindMode) || !strings.Contains(c.SymptomCheck, "sees 0") {
		t.Errorf("custom rule against predicted zeros: %+v", c)
	}
}

// A volume drop after an enum symbol was added: the sample shows the new value only in new
// records, and the change explains missing rows.
func TestANewValueSeenInTheSampleExplainsAVolumeDrop(t *testing.T) {
	sc := SchemaChange{Subject: "deliveries-value", Version: 6, FirstSeen: t0.Add(-3 * time.Hour), Distance: 4,
		Changes: []FieldChange{{Path: "outcome", Change: "enum_symbols_added", Detail: "outcome gains symbols LEFT_AT_LOCKER"}},
		OnPath:  []string{"outcome"}, NewVersionShare: -1, FieldNullRate: -1, OlderNullRate: -1}
	sample := kafka.Sample{Decoded: 30,
		Versions: []kafka.VersionStat{{Label: "deliveries-value v5", Subject: "deliveries-value", Version: 5, Records: 20},
			{Label: "deliveries-value v6", Subject: "deliveries-value", Version: 6, Records: 10}},
		Fields: []kafka.FieldStat{{Field: "outcome", Values: []kafka.ValueCount{
			{Value: "DELIVERED", Count: 24, ByVersion: map[string]int{"deliveries-value v5": 18, "deliveries-value v6": 6}},
			{Value: "LEFT_AT_LOCKER", Count: 4, ByVersion: map[string]int{"deliveries-value v6": 4}},
			{Value: "RETURNED", Count: 2, ByVersion: map[string]int{"deliveries-value v5": 2}}}}}}
	measure(&sc, []kafka.Sample{sample})
	if len(sc.NewValues) != 1 || sc.NewValues[0].Values[0] != "LEFT_AT_LOCKER" {
		t.Fatalf("new values %+v", sc.NewValues)
	}
	res := Rank(Input{FailureMode: ModeVolume, Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{sc}})
	top := res.Candidates[0]
	if !has(top.Supports, KindMode) || !has(top.Supports, KindData) ||
		!strings.Contains(strings.Join(top.Evidence, " "), "outcome taking LEFT_AT_LOCKER only in v6-or-later records") {
		t.Fatalf("%+v", top)
	}
}

// A volume incident has no failing column, so only table-level lineage links the subject: the
// new values of its changed fields are read all the same.
func TestANewValueIsReadWhenOnlyTableLevelLineageLinksTheSubject(t *testing.T) {
	sc := SchemaChange{Subject: "deliveries-value", Version: 6, FirstSeen: t0.Add(-3 * time.Hour), Distance: 5, SubjectUpstream: true,
		Changes: []FieldChange{{Path: "outcome", Change: "enum_symbols_added"}}, NewVersionShare: -1, FieldNullRate: -1, OlderNullRate: -1}
	sample := kafka.Sample{Decoded: 10,
		Versions: []kafka.VersionStat{{Label: "deliveries-value v5", Subject: "deliveries-value", Version: 5, Records: 6},
			{Label: "deliveries-value v6", Subject: "deliveries-value", Version: 6, Records: 4}},
		Fields: []kafka.FieldStat{{Field: "outcome", Values: []kafka.ValueCount{
			{Value: "DELIVERED", Count: 8, ByVersion: map[string]int{"deliveries-value v5": 6, "deliveries-value v6": 2}},
			{Value: "LEFT_AT_LOCKER", Count: 2, ByVersion: map[string]int{"deliveries-value v6": 2}}}}}}
	measure(&sc, []kafka.Sample{sample})
	if len(sc.NewValues) != 1 || sc.NewValues[0].Field != "outcome" || sc.NewValues[0].Values[0] != "LEFT_AT_LOCKER" {
		t.Fatalf("new values %+v", sc.NewValues)
	}
	sc.SubjectUpstream = false
	sc.NewValues = nil
	if measure(&sc, []kafka.Sample{sample}); len(sc.NewValues) != 0 {
		t.Errorf("a subject not upstream read new values: %+v", sc.NewValues)
	}
}

// The reader's own SQL, read with what the format predicts it sees: a proto3 removal reads 0, so
// the statement's filter drops every new row; a new code meets its IN list.
func TestReaderSQLIsReadWithThePredictedSymptomAndNewValues(t *testing.T) {
	v1 := `syntax = "proto3"; package fleet; message Trip { string id = 1; int64 distance_m = 2; string state = 3; }`
	v2 := `syntax = "proto3"; package fleet; message Trip { reserved 2; string id = 1; string state = 3; double distance_km = 4; }`
	sql := "INSERT INTO `long-trips` SELECT id, distance_m FROM `trips` WHERE distance_m > 5000 AND state IN ('DONE', 'PAID')"
	r := Reader{URN: "flink:statement/long-trips", PinnedVersion: 1, ReadsFields: []string{"distance_m", "state"}, table: "trips"}
	changes := []FieldChange{{Path: "distance_m", Change: "removed"}, {Path: "distance_km", Change: "added"}}
	readSQL(&r, sql, predict(t, schema.Protobuf, v1, v2), changes)
	if len(r.Reads) != 2 || r.Reads[0].Sentence != "passes distance_m on as distance_m: 0 for new records" ||
		r.Reads[1].Sentence != "`WHERE distance_m > 5000` filters every new row out (0 does not pass it)" {
		t.Fatalf("reads %+v", r.Reads)
	}
	sc := SchemaChange{Subject: "trips-value", Version: 2, OnPath: []string{"state"}, Readers: []Reader{r}, NewVersionShare: -1, FieldNullRate: -1, OlderNullRate: -1}
	sample := kafka.Sample{Decoded: 4,
		Versions: []kafka.VersionStat{{Label: "trips-value v1", Subject: "trips-value", Version: 1, Records: 2}, {Label: "trips-value v2", Subject: "trips-value", Version: 2, Records: 2}},
		Fields: []kafka.FieldStat{{Field: "state", Values: []kafka.ValueCount{
			{Value: "DONE", Count: 3, ByVersion: map[string]int{"trips-value v1": 2, "trips-value v2": 1}},
			{Value: "DONE_OFFLINE", Count: 1, ByVersion: map[string]int{"trips-value v2": 1}}}}}}
	measure(&sc, []kafka.Sample{sample})
	got := sc.Readers[0].Reads
	if len(got) != 3 || got[2].Sentence != "the new value DONE_OFFLINE is filtered out by `WHERE state IN ('DONE', 'PAID')`: those rows vanish from this reader" {
		t.Fatalf("reads %+v", got)
	}
}
