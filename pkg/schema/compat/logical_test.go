package compat_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// logicalRow is one change under compatibilityPolicy LOGICAL: the rule each mode reports ("" =
// allowed in that mode). Level is BACKWARD unless given.
type logicalRow struct {
	name           string
	format         schema.Format
	level          compat.Level
	old, new       string
	flink, iceberg string
}

func fld(name, typ string) string { return `{"name":"` + name + `","type":` + typ + `}` }

const (
	optStr  = `["null","string"],"default":null`
	dec10_2 = `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`
)

// The registry's LOGICAL rules for Avro, per mode (docs/reference/schema-rules.md): Flink allows
// drops, reorders, renames and lossless widenings but not reinterpretation or invention; Iceberg v2
// compares by name and allows only its promotions.
var logicalAvroRows = []logicalRow{
	{name: "add nullable field", old: avroRec(fA), new: avroRec(fA + "," + fld("n", optStr))},
	{name: "add NOT NULL field without default", old: avroRec(fA), new: avroRec(fA + "," + fB), flink: "REQUIRED_FIELD_ADDED", iceberg: "REQUIRED_FIELD_ADDED"},
	{name: "add NOT NULL field with default", old: avroRec(fA), new: avroRec(fA + "," + fBd), iceberg: "REQUIRED_FIELD_ADDED"},
	{name: "drop optional field", old: avroRec(fA + "," + fld("n", optStr)), new: avroRec(fA), iceberg: "FIELD_DELETED"},
	{name: "reorder fields", old: avroRec(fA + "," + fBd), new: avroRec(fBd + "," + fA), iceberg: "FIELD_REORDERED"},
	{name: "insert a field before a surviving one", old: avroRec(fA + "," + fBd), new: avroRec(fA + "," + fld("n", optStr) + "," + fBd), iceberg: "FIELD_REORDERED"},
	{name: "rename with alias", old: avroRec(fA + `,{"name":"old","type":"int"}`), new: avroRec(fA + `,{"name":"renamed","type":"int","aliases":["old"]}`), iceberg: "FIELD_DELETED"},
	{name: "rename with alias keeps comparing the type in Flink", old: avroRec(fA + `,{"name":"old","type":["null","int"],"default":null}`), new: avroRec(fA + `,{"name":"renamed","type":"int","aliases":["old"]}`), flink: "NULLABLE_TO_NON_NULLABLE", iceberg: "FIELD_DELETED"},
	{name: "nullable to NOT NULL", old: avroRec(fld("a", optStr)), new: avroRec(fA), flink: "NULLABLE_TO_NON_NULLABLE", iceberg: "NULLABLE_TO_NON_NULLABLE"},
	{name: "NOT NULL to nullable", old: avroRec(fA), new: avroRec(fld("a", optStr))},
	{name: "NOT NULL default removed", old: avroRec(fA + "," + fBd), new: avroRec(fA + "," + fB), flink: "NON_NULLABLE_DEFAULT_REMOVED", iceberg: "NON_NULLABLE_DEFAULT_REMOVED"},
	{name: "int to long (a widening both modes read)", old: avroRec(fld("n", `"int"`)), new: avroRec(fld("n", `"long"`))},
	{name: "float to double", old: avroRec(fld("n", `"float"`)), new: avroRec(fld("n", `"double"`))},
	{name: "long to int", old: avroRec(fld("n", `"long"`)), new: avroRec(fld("n", `"int"`)), flink: "UNSUPPORTED_TYPE_CHANGE", iceberg: "UNSUPPORTED_TYPE_CHANGE"},
	{name: "decimal precision widened", old: avroRec(fld("m", dec10_2)), new: avroRec(fld("m", `{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}`))},
	{name: "decimal precision narrowed", old: avroRec(fld("m", dec10_2)), new: avroRec(fld("m", `{"type":"bytes","logicalType":"decimal","precision":8,"scale":2}`)), flink: "UNSUPPORTED_TYPE_CHANGE", iceberg: "UNSUPPORTED_TYPE_CHANGE"},
	{name: "decimal scale changed", old: avroRec(fld("m", dec10_2)), new: avroRec(fld("m", `{"type":"bytes","logicalType":"decimal","precision":10,"scale":3}`)), flink: "UNSUPPORTED_TYPE_CHANGE", iceberg: "UNSUPPORTED_TYPE_CHANGE"},
	{name: "timestamp precision millis to micros", old: avroRec(fld("t", `{"type":"long","logicalType":"timestamp-millis"}`)), new: avroRec(fld("t", `{"type":"long","logicalType":"timestamp-micros"}`)), flink: "UNSUPPORTED_TYPE_CHANGE", iceberg: "UNSUPPORTED_TYPE_CHANGE"},
	{name: "binary length changed", old: avroRec(fld("f", `{"type":"fixed","name":"F","size":4}`)), new: avroRec(fld("f", `{"type":"fixed","name":"F","size":8}`)), flink: "UNSUPPORTED_TYPE_CHANGE", iceberg: "UNSUPPORTED_TYPE_CHANGE"},
	{name: "string to int", old: avroRec(fld("s", `"string"`)), new: avroRec(fld("s", `"int"`)), flink: "TYPE_MISMATCH", iceberg: "TYPE_MISMATCH"},
	{name: "long to timestamp-millis", old: avroRec(fld("t", `"long"`)), new: avroRec(fld("t", `{"type":"long","logicalType":"timestamp-millis"}`)), flink: "TYPE_MISMATCH", iceberg: "TYPE_MISMATCH"},
	{name: "record to string", old: avroRec(fld("r", `{"type":"record","name":"N","fields":[`+fA+`]}`)), new: avroRec(fld("r", `"string"`)), flink: "TYPE_MISMATCH", iceberg: "TYPE_MISMATCH"},
	{name: "enum to string (both STRING)", old: avroRec(enm), new: avroRec(fld("e", `"string"`))},
	{name: "nested field dropped", old: avroRec(fld("r", `{"type":"record","name":"N","fields":[`+fA+`,`+fBd+`]}`)), new: avroRec(fld("r", `{"type":"record","name":"N","fields":[`+fA+`]}`)), iceberg: "FIELD_DELETED"},
	{name: "array items nullable to NOT NULL", old: avroRec(fld("xs", `{"type":"array","items":["null","int"]}`)), new: avroRec(fld("xs", `{"type":"array","items":"int"}`)), flink: "NULLABLE_TO_NON_NULLABLE", iceberg: "NULLABLE_TO_NON_NULLABLE"},
	{name: "map values int to long", old: avroRec(fld("m", `{"type":"map","values":"int"}`)), new: avroRec(fld("m", `{"type":"map","values":"long"}`))},
	// Iceberg v2 has no defaults, but an added list or map reads as empty for existing rows.
	{name: "add NOT NULL array with a default", old: avroRec(fA), new: avroRec(fA + "," + fld("xs", `{"type":"array","items":"int"},"default":[]`))},
	// FORWARD judges new→old: an added field is a deleted one, a dropped one an added one.
	{name: "FORWARD: add nullable field", level: compat.Forward, old: avroRec(fA), new: avroRec(fA + "," + fld("n", optStr)), iceberg: "FIELD_DELETED"},
	{name: "FORWARD: drop NOT NULL field", level: compat.Forward, old: avroRec(fA + "," + fB), new: avroRec(fA), flink: "REQUIRED_FIELD_ADDED", iceberg: "REQUIRED_FIELD_ADDED"},
	{name: "FORWARD: NOT NULL to nullable", level: compat.Forward, old: avroRec(fA), new: avroRec(fld("a", optStr)), flink: "NULLABLE_TO_NON_NULLABLE", iceberg: "NULLABLE_TO_NON_NULLABLE"},
}

// Protobuf converts the same way (proto3 implicit scalars are NOT NULL with a zero default,
// presence makes a field nullable); map keys are where MAP_KEY_TYPE_MISMATCH shows.
var logicalProtoRows = []logicalRow{
	{name: "map key int32 to int64", old: proto(`message M { map<int32,string> m = 1; }`), new: proto(`message M { map<int64,string> m = 1; }`), flink: "MAP_KEY_TYPE_MISMATCH", iceberg: "MAP_KEY_TYPE_MISMATCH"},
	// The registry reads int32→int64 as a lossless widening in both modes.
	{name: "int32 to int64", old: proto(`message M { int32 n = 1; }`), new: proto(`message M { int64 n = 1; }`)},
	{name: "int64 to int32 narrows", old: proto(`message M { int64 n = 1; }`), new: proto(`message M { int32 n = 1; }`), flink: "UNSUPPORTED_TYPE_CHANGE", iceberg: "UNSUPPORTED_TYPE_CHANGE"},
	// An added repeated or map field is an empty list or map for old data: not a required field.
	{name: "add repeated field", old: proto(`message M { string a = 1; }`), new: proto(`message M { string a = 1; repeated int64 b = 2; }`)},
	{name: "add map field", old: proto(`message M { string a = 1; }`), new: proto(`message M { string a = 1; map<string,int64> b = 2; }`)},
	{name: "int32 to string", old: proto(`message M { int32 n = 1; }`), new: proto(`message M { string n = 1; }`), flink: "TYPE_MISMATCH", iceberg: "TYPE_MISMATCH"},
	{name: "remove field", old: proto(`message M { string a = 1; int64 b = 2; }`), new: proto(`message M { string a = 1; }`), iceberg: "FIELD_DELETED"},
	{name: "add implicit scalar (NOT NULL, zero default)", old: proto(`message M { string a = 1; }`), new: proto(`message M { string a = 1; int64 b = 2; }`), iceberg: "REQUIRED_FIELD_ADDED"},
	{name: "add optional scalar", old: proto(`message M { string a = 1; }`), new: proto(`message M { string a = 1; optional int64 b = 2; }`)},
	{name: "presence removed", old: proto(`message M { optional int32 n = 1; }`), new: proto(`message M { int32 n = 1; }`), flink: "NULLABLE_TO_NON_NULLABLE", iceberg: "NULLABLE_TO_NON_NULLABLE"},
	{name: "rename field (same tag)", old: proto(`message M { string a = 1; }`), new: proto(`message M { string b = 1; }`), iceberg: "FIELD_DELETED"},
	{name: "nested message field dropped", old: proto(`message M { N n = 1; } message N { string x = 1; string y = 2; }`), new: proto(`message M { N n = 1; } message N { string x = 1; }`), iceberg: "FIELD_DELETED"},
}

func logicalFindings(t *testing.T, format schema.Format, level compat.Level, oldText, newText string) []compat.Incompatibility {
	t.Helper()
	oldLT, err := compat.ToLogical(mustParse(t, format, oldText))
	if err != nil {
		t.Fatal(err)
	}
	newLT, err := compat.ToLogical(mustParse(t, format, newText))
	if err != nil {
		t.Fatal(err)
	}
	var out []compat.Incompatibility
	if level == "" {
		level = compat.Backward
	}
	if strings.HasPrefix(string(level), "BACKWARD") || strings.HasPrefix(string(level), "FULL") {
		out = append(out, compat.LogicalPair(oldLT, newLT, "version 1", compat.NewReadsOld)...)
	}
	if strings.HasPrefix(string(level), "FORWARD") || strings.HasPrefix(string(level), "FULL") {
		out = append(out, compat.LogicalPair(oldLT, newLT, "version 1", compat.OldReadsNew)...)
	}
	return out
}

func TestLogicalRulesPerModeAndFormat(t *testing.T) {
	for _, set := range []struct {
		format schema.Format
		rows   []logicalRow
	}{{schema.Avro, logicalAvroRows}, {schema.Protobuf, logicalProtoRows}} {
		for _, r := range set.rows {
			t.Run(string(set.format)+"/"+r.name, func(t *testing.T) {
				found := logicalFindings(t, set.format, r.level, r.old, r.new)
				for mode, want := range map[compat.LogicalMode]string{compat.Flink: r.flink, compat.IcebergV2: r.iceberg} {
					var got []string
					for _, in := range found {
						if in.LogicalMode == mode {
							got = append(got, in.Type)
							if !strings.HasPrefix(in.Message, in.Type+" ("+string(mode)+")") {
								t.Errorf("message does not name its rule and mode: %q", in.Message)
							}
						}
					}
					switch {
					case want == "" && len(got) > 0:
						t.Errorf("%s: want allowed, got %v: %+v", mode, got, found)
					case want != "" && !slices.Contains(got, want):
						t.Errorf("%s: want %s, got %v: %+v", mode, want, got, found)
					}
				}
			})
		}
	}
}

// The story's v12 drops the optional response_bytes and adds response_kib at the end: BACKWARD
// natively, allowed by Flink (a drop), rejected by Iceberg v2 as FIELD_DELETED.
func TestScenarioV12UnderLogicalIsFieldDeletedForIcebergOnly(t *testing.T) {
	v11 := mustParse(t, schema.Avro, readScenario(t, 11))
	v12 := mustParse(t, schema.Avro, readScenario(t, 12))
	res := compat.Check(compat.Backward, compat.Logical, v12, []compat.Version{{Version: 11, Schema: v11}})
	if res.Compatible || res.Policy != compat.Logical || len(res.Incompatibilities) != 1 {
		t.Fatalf("%+v", res)
	}
	in := res.Incompatibilities[0]
	if in.Type != "FIELD_DELETED" || in.LogicalMode != compat.IcebergV2 || in.Field != "response_bytes" || in.OldVersion != 11 ||
		!strings.Contains(in.Message, "version 11") {
		t.Fatalf("%+v", in)
	}
	if strict := compat.Check(compat.Backward, compat.Strict, v12, []compat.Version{{Version: 11, Schema: v11}}); !strict.Compatible {
		t.Fatalf("STRICT: %+v", strict)
	}
}

// LOGICAL is additive: when the native check fails, its findings stand alone and LOGICAL adds none.
func TestLogicalRunsOnlyAfterTheNativeCheckPasses(t *testing.T) {
	old := mustParse(t, schema.Avro, avroRec(fA))
	nw := mustParse(t, schema.Avro, avroRec(fA+","+fB))
	res := compat.Check(compat.Backward, compat.Logical, nw, []compat.Version{{Version: 1, Schema: old}})
	if res.Compatible || len(res.Incompatibilities) != 1 || res.Incompatibilities[0].Type != "READER_FIELD_MISSING_DEFAULT_VALUE" || res.Incompatibilities[0].LogicalMode != "" {
		t.Fatalf("%+v", res)
	}
}

// A proposed schema without a logical type is rejected, even as a first version or under NONE;
// an earlier version without one is skipped by LOGICAL (its native check still runs).
func TestLogicalRejectsUnconvertibleProposalAndSkipsUnconvertibleVersions(t *testing.T) {
	for name, text := range map[string]string{
		"union of two types": avroRec(fld("u", `["string","int"]`)),
		"recursive record":   `{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"],"default":null}]}`,
		"top-level string":   `"string"`,
	} {
		p := mustParse(t, schema.Avro, text)
		if _, err := compat.ToLogical(p); err == nil {
			t.Errorf("%s converted", name)
		}
		for _, level := range []compat.Level{compat.None, compat.Backward} {
			res := compat.Check(level, compat.Logical, p, nil)
			if res.Compatible || res.Incompatibilities[0].Type != compat.LogicalUnconvertible {
				t.Errorf("%s under %s: %+v", name, level, res)
			}
		}
	}
	recursive := mustParse(t, schema.Protobuf, proto(`message M { M child = 1; }`))
	if _, err := compat.ToLogical(recursive); err == nil {
		t.Error("recursive message converted")
	}
	old := mustParse(t, schema.Avro, avroRec(fA+","+fld("u", `["string","int"]`)))
	nw := mustParse(t, schema.Avro, avroRec(fA))
	res := compat.Check(compat.Backward, compat.Logical, nw, []compat.Version{{Version: 4, Schema: old}})
	if !res.Compatible || len(res.LogicalSkipped) != 1 || res.LogicalSkipped[0].Version != 4 || !slices.Equal(res.Compared, []int{4}) {
		t.Fatalf("%+v", res)
	}
}

// Transitivity follows the level: newest first, stopping at the first failing version.
func TestLogicalFollowsTransitivity(t *testing.T) {
	v1 := mustParse(t, schema.Avro, avroRec(fA))
	v2 := mustParse(t, schema.Avro, avroRec(fA+","+fld("n", optStr)))
	v3 := mustParse(t, schema.Avro, avroRec(fA+","+fld("n", optStr)+","+fld("m", optStr)))
	prev := []compat.Version{{Version: 1, Schema: v1}, {Version: 2, Schema: v2}}
	// v3 adds a nullable field: fine backward in both modes, but FULL also judges new→old, where
	// Iceberg v2 sees m deleted.
	if res := compat.Check(compat.BackwardTransitive, compat.Logical, v3, prev); !res.Compatible || !slices.Equal(res.Compared, []int{2, 1}) {
		t.Fatalf("BACKWARD_TRANSITIVE: %+v", res)
	}
	res := compat.Check(compat.FullTransitive, compat.Logical, v3, prev)
	if res.Compatible || !slices.Equal(res.Compared, []int{2}) || res.Incompatibilities[0].Type != "FIELD_DELETED" || res.Incompatibilities[0].Direction != compat.OldReadsNew {
		t.Fatalf("FULL_TRANSITIVE: %+v", res)
	}
}

// JSON Schema converts too: properties in document order, required ones NOT NULL. The registry
// reports integer→number as an unsupported type change (BIGINT to DOUBLE is no widening), which the
// native check calls TYPE_EXTENDED and accepts.
var logicalJSONRows = []logicalRow{
	{name: "integer to number", old: obj(`"n":{"type":"integer"}`, `"required":["n"]`), new: obj(`"n":{"type":"number"}`, `"required":["n"]`), flink: "UNSUPPORTED_TYPE_CHANGE", iceberg: "UNSUPPORTED_TYPE_CHANGE"},
	{name: "string to integer", old: obj(`"s":{"type":"string"}`, ""), new: obj(`"s":{"type":"integer"}`, ""), flink: "TYPE_MISMATCH", iceberg: "TYPE_MISMATCH"},
	{name: "optional property made required", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"}`, `"required":["a"]`), flink: "NULLABLE_TO_NON_NULLABLE", iceberg: "NULLABLE_TO_NON_NULLABLE"},
	{name: "optional property added at the end", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"},"b":{"type":"boolean"}`, "")},
	{name: "property order changed", old: obj(`"a":{"type":"string"},"b":{"type":"string"}`, ""), new: obj(`"b":{"type":"string"},"a":{"type":"string"}`, ""), iceberg: "FIELD_REORDERED"},
	{name: "property dropped", old: obj(`"a":{"type":"string"},"b":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"}`, ""), iceberg: "FIELD_DELETED"},
	{name: "required property added without default", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"},"b":{"type":"string"}`, `"required":["b"]`), flink: "REQUIRED_FIELD_ADDED", iceberg: "REQUIRED_FIELD_ADDED"},
	{name: "nullable through oneOf", old: obj(`"a":{"oneOf":[{"type":"null"},{"type":"string"}]}`, `"required":["a"]`), new: obj(`"a":{"type":["string","null"]}`, `"required":["a"]`)},
}

func TestLogicalJSONSchemaRules(t *testing.T) {
	for _, r := range logicalJSONRows {
		t.Run(r.name, func(t *testing.T) {
			got := logicalFindings(t, schema.JSON, r.level, r.old, r.new)
			for mode, want := range map[compat.LogicalMode]string{compat.Flink: r.flink, compat.IcebergV2: r.iceberg} {
				var types []string
				for _, in := range got {
					if in.LogicalMode == mode {
						types = append(types, in.Type)
					}
				}
				if (want == "") != (len(types) == 0) || (want != "" && !slices.Contains(types, want)) {
					t.Errorf("%s: got %v, want %q", mode, types, want)
				}
			}
		})
	}
	// Without a logical type (two non-null branches) the proposed schema is refused under LOGICAL.
	p := mustParse(t, schema.JSON, obj(`"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}`, ""))
	if _, err := compat.ToLogical(p); err == nil || errors.Is(err, compat.ErrLogicalNotReproduced) {
		t.Fatalf("two-branch oneOf: %v", err)
	}
	if res := compat.Check(compat.Backward, compat.Logical, p, nil); res.Compatible || res.Incompatibilities[0].Type != compat.LogicalUnconvertible {
		t.Fatalf("%+v", res)
	}
}

func TestLogicalTypesRenderAsFlinkSQL(t *testing.T) {
	lt, err := compat.ToLogical(mustParse(t, schema.Avro, avroRec(fld("m", dec10_2)+","+fld("t", `["null",{"type":"long","logicalType":"timestamp-micros"}]`)+","+
		fld("xs", `{"type":"map","values":"int"}`))))
	if err != nil {
		t.Fatal(err)
	}
	want := "ROW<m DECIMAL(10, 2) NOT NULL, t TIMESTAMP_LTZ(6), xs MAP<STRING NOT NULL, INT NOT NULL> NOT NULL> NOT NULL"
	if lt.String() != want {
		t.Fatalf("got  %s\nwant %s", lt, want)
	}
}
