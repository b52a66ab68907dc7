package schema_test

import (
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
)

func kinds(cs []schema.Change) string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Kind)+":"+c.Path)
	}
	return strings.Join(out, " ")
}

func TestDiffScenarioV11ToV12RemovesResponseBytesAndAddsResponseKib(t *testing.T) {
	v11 := mustParse(t, schema.Avro, read(t, "api-usage-value.v11.avsc"))
	v12 := mustParse(t, schema.Avro, read(t, "api-usage-value.v12.avsc"))
	got := kinds(schema.Diff(v11, v12))
	if got != "removed:response_bytes added:response_kib" {
		t.Fatalf("diff = %s", got)
	}
}

func TestDiffReportsEachKindOfFieldChange(t *testing.T) {
	cases := []struct {
		name     string
		format   schema.Format
		old, new string
		want     string
	}{
		{"avro type and nullability", schema.Avro,
			`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`,
			`{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":["null","string"],"default":null}]}`,
			"type_changed:a nullability_changed:b optionality_changed:b default_changed:b"},
		{"avro rename via alias", schema.Avro,
			`{"type":"record","name":"R","fields":[{"name":"bytes","type":"long"}]}`,
			`{"type":"record","name":"R","fields":[{"name":"size_bytes","type":"long","aliases":["bytes"]}]}`,
			"renamed:size_bytes"},
		{"avro enum symbols", schema.Avro,
			`{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]}`,
			`{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","C"]}}]}`,
			"enum_symbols_added:e enum_symbols_removed:e"},
		{"avro nested removal", schema.Avro,
			`{"type":"record","name":"R","fields":[{"name":"n","type":{"type":"record","name":"N","fields":[{"name":"x","type":"int"},{"name":"y","type":"int"}]}}]}`,
			`{"type":"record","name":"R","fields":[{"name":"n","type":{"type":"record","name":"N","fields":[{"name":"x","type":"int"}]}}]}`,
			"removed:n.y"},
		{"protobuf rename on the same tag keeps children", schema.Protobuf,
			`syntax="proto3"; message M { N old = 1; } message N { int32 x = 1; }`,
			`syntax="proto3"; message M { N renamed = 1; } message N { int32 x = 1; }`,
			"renamed:renamed"},
		{"protobuf retype and remove", schema.Protobuf,
			`syntax="proto3"; message M { int32 a = 1; string b = 2; }`,
			`syntax="proto3"; message M { int64 a = 1; }`,
			"type_changed:a removed:b"},
		{"json required and added", schema.JSON,
			`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`,
			"optionality_changed:a added:b"},
	}
	for _, c := range cases {
		got := kinds(schema.Diff(mustParse(t, c.format, c.old), mustParse(t, c.format, c.new)))
		if got != c.want {
			t.Errorf("%s: diff = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestAffectsReaders(t *testing.T) {
	for k, want := range map[schema.ChangeKind]bool{schema.FieldRemoved: true, schema.FieldRenamed: true, schema.TypeChanged: true,
		schema.NullabilityChanged: true, schema.FieldAdded: false, schema.DefaultChanged: false} {
		if k.AffectsReaders() != want {
			t.Errorf("%s: %v", k, !want)
		}
	}
}

// Each change carries the old and new name and type as fields, so no consumer reads its Detail.
func TestDiffCarriesOldAndNewNameAndType(t *testing.T) {
	old := mustParse(t, schema.Avro, `{"type":"record","name":"R","fields":[{"name":"bytes","type":"int"},{"name":"gone","type":"string"}]}`)
	new := mustParse(t, schema.Avro, `{"type":"record","name":"R","fields":[{"name":"size_bytes","type":"long","aliases":["bytes"]},{"name":"fresh","type":"boolean"}]}`)
	type named struct{ kind, oldName, newName, oldType, newType string }
	var got []named
	for _, c := range schema.Diff(old, new) {
		got = append(got, named{string(c.Kind), c.OldName, c.NewName, c.OldType, c.NewType})
	}
	want := []named{
		{"renamed", "bytes", "size_bytes", "int", "long"},
		{"type_changed", "bytes", "size_bytes", "int", "long"},
		{"removed", "gone", "", "string", ""},
		{"added", "", "fresh", "", "boolean"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// An enum change names its symbols, in every format, so a new value is known before any record
// carries it.
func TestDiffNamesTheEnumSymbolsAddedAndRemoved(t *testing.T) {
	cases := []struct {
		name          string
		format        schema.Format
		old, new      string
		added, remove string
	}{
		{"avro nullable enum", schema.Avro,
			`{"type":"record","name":"R","fields":[{"name":"s","type":["null",{"type":"enum","name":"S","symbols":["NEW","DONE"]}],"default":null}]}`,
			`{"type":"record","name":"R","fields":[{"name":"s","type":["null",{"type":"enum","name":"S","symbols":["NEW","DONE","DONE_AT_LOCKER"]}],"default":null}]}`,
			"DONE_AT_LOCKER", ""},
		{"protobuf enum values", schema.Protobuf,
			`syntax="proto3"; message M { Channel c = 1; } enum Channel { UNSPECIFIED = 0; SEARCH = 1; DISPLAY = 2; }`,
			`syntax="proto3"; message M { Channel c = 1; } enum Channel { UNSPECIFIED = 0; SEARCH = 1; AFFILIATE = 3; PARTNER = 4; }`,
			"AFFILIATE,PARTNER", "DISPLAY"},
		{"json enum", schema.JSON,
			`{"type":"object","properties":{"tier":{"enum":["gold","silver"]}}}`,
			`{"type":"object","properties":{"tier":{"enum":["gold","silver","bronze"]}}}`,
			"bronze", ""},
		{"json const widened to an enum", schema.JSON,
			`{"type":"object","properties":{"kind":{"const":"parcel"}}}`,
			`{"type":"object","properties":{"kind":{"enum":["parcel","pallet"]}}}`,
			"pallet", ""},
		{"json const replaced", schema.JSON,
			`{"type":"object","properties":{"kind":{"const":"parcel"}}}`,
			`{"type":"object","properties":{"kind":{"const":"box"}}}`,
			"box", "parcel"},
	}
	for _, c := range cases {
		var added, removed []string
		for _, ch := range schema.Diff(mustParse(t, c.format, c.old), mustParse(t, c.format, c.new)) {
			switch ch.Kind {
			case schema.EnumSymbolsAdded:
				added = ch.SymbolsAdded
			case schema.EnumSymbolsRemoved:
				removed = ch.SymbolsRemoved
			}
		}
		if strings.Join(added, ",") != c.added || strings.Join(removed, ",") != c.remove {
			t.Errorf("%s: added %v removed %v, want %s / %s", c.name, added, removed, c.added, c.remove)
		}
	}
}
