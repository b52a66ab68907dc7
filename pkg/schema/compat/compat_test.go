package compat_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// verdict: 1 compatible, 0 incompatible, -1 not established in docs/reference/schema-rules.md ("?").
type row struct {
	name              string
	format            schema.Format
	policy            compat.Policy
	old, new          string
	backward, forward int
	// wantType is an error type expected in the failing direction(s).
	wantType string
}

func avroRec(fields string) string {
	return `{"type":"record","name":"R","namespace":"acme","fields":[` + fields + `]}`
}

const (
	fA   = `{"name":"a","type":"string"}`
	fBd  = `{"name":"b","type":"int","default":0}`
	fB   = `{"name":"b","type":"int"}`
	enm  = `{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}}`
	enm3 = `{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y","Z"]}}`
)

// The Avro table of docs/reference/schema-rules.md, row by row.
var avroRows = []row{
	{name: "add field with default", old: avroRec(fA), new: avroRec(fA + "," + fBd), backward: 1, forward: 1},
	{name: "add field without default", old: avroRec(fA), new: avroRec(fA + "," + fB), backward: 0, forward: 1, wantType: "READER_FIELD_MISSING_DEFAULT_VALUE"},
	{name: "remove field that had a default", old: avroRec(fA + "," + fBd), new: avroRec(fA), backward: 1, forward: 1},
	{name: "remove field without default", old: avroRec(fA + "," + fB), new: avroRec(fA), backward: 1, forward: 0, wantType: "READER_FIELD_MISSING_DEFAULT_VALUE"},
	{name: "make nullable", old: avroRec(`{"name":"a","type":"string"}`), new: avroRec(`{"name":"a","type":["null","string"],"default":null}`), backward: 1, forward: 0, wantType: "MISSING_UNION_BRANCH"},
	{name: "int to long promotion", old: avroRec(`{"name":"n","type":"int"}`), new: avroRec(`{"name":"n","type":"long"}`), backward: 1, forward: 0, wantType: "TYPE_MISMATCH"},
	{name: "string to bytes", old: avroRec(`{"name":"s","type":"string"}`), new: avroRec(`{"name":"s","type":"bytes"}`), backward: 1, forward: 1},
	{name: "bytes to string", old: avroRec(`{"name":"s","type":"bytes"}`), new: avroRec(`{"name":"s","type":"string"}`), backward: 1, forward: 1},
	{name: "add enum symbol", old: avroRec(enm), new: avroRec(enm3), backward: 1, forward: 0, wantType: "MISSING_ENUM_SYMBOLS"},
	{name: "add enum symbol, old reader enum has default", old: avroRec(`{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"],"default":"X"}}`),
		new: avroRec(`{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y","Z"],"default":"X"}}`), backward: 1, forward: 1},
	{name: "remove enum symbol", old: avroRec(enm3), new: avroRec(enm), backward: 0, forward: 1, wantType: "MISSING_ENUM_SYMBOLS"},
	{name: "remove enum symbol, new enum has default", old: avroRec(`{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y","Z"],"default":"X"}}`),
		new: avroRec(`{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"],"default":"X"}}`), backward: 1, forward: 1},
	{name: "rename field without alias", old: avroRec(fA + `,{"name":"old","type":"int"}`), new: avroRec(fA + `,{"name":"renamed","type":"int"}`), backward: 0, forward: 0, wantType: "READER_FIELD_MISSING_DEFAULT_VALUE"},
	{name: "rename field with alias", old: avroRec(fA + `,{"name":"old","type":"int"}`), new: avroRec(fA + `,{"name":"renamed","type":"int","aliases":["old"]}`), backward: 1, forward: 0},
	{name: "rename record", old: avroRec(fA), new: `{"type":"record","name":"Other","namespace":"acme","fields":[` + fA + `]}`, backward: 0, forward: 0, wantType: "NAME_MISMATCH"},
	{name: "rename record with alias", old: avroRec(fA), new: `{"type":"record","name":"Other","namespace":"acme","aliases":["acme.R"],"fields":[` + fA + `]}`, backward: 1, forward: 0},
	{name: "change fixed size", old: avroRec(`{"name":"f","type":{"type":"fixed","name":"F","size":4}}`), new: avroRec(`{"name":"f","type":{"type":"fixed","name":"F","size":8}}`), backward: 0, forward: 0, wantType: "FIXED_SIZE_MISMATCH"},
	{name: "string to int", old: avroRec(`{"name":"s","type":"string"}`), new: avroRec(`{"name":"s","type":"int"}`), backward: 0, forward: 0, wantType: "TYPE_MISMATCH"},
	{name: "long to timestamp-millis (logical type ignored)", old: avroRec(`{"name":"t","type":"long"}`), new: avroRec(`{"name":"t","type":{"type":"long","logicalType":"timestamp-millis"}}`), backward: 1, forward: 1},
	{name: "nested record adds required field", old: avroRec(`{"name":"n","type":{"type":"record","name":"N","fields":[` + fA + `]}}`),
		new: avroRec(`{"name":"n","type":{"type":"record","name":"N","fields":[` + fA + "," + fB + `]}}`), backward: 0, forward: 1, wantType: "READER_FIELD_MISSING_DEFAULT_VALUE"},
	{name: "array items int to long", old: avroRec(`{"name":"xs","type":{"type":"array","items":"int"}}`), new: avroRec(`{"name":"xs","type":{"type":"array","items":"long"}}`), backward: 1, forward: 0, wantType: "TYPE_MISMATCH"},
}

func proto(body string) string { return "syntax = \"proto3\";\npackage acme;\n" + body }

// The Protobuf table of docs/reference/schema-rules.md
var protoRows = []row{
	{name: "add field", old: proto(`message M { string a = 1; }`), new: proto(`message M { string a = 1; int64 b = 2; }`), backward: 1, forward: 1},
	{name: "remove field", old: proto(`message M { string a = 1; int64 b = 2; }`), new: proto(`message M { string a = 1; }`), backward: 1, forward: 1},
	{name: "add message type", old: proto(`message M { string a = 1; }`), new: proto(`message M { string a = 1; } message N { string x = 1; }`), backward: 1, forward: 0, wantType: "MESSAGE_REMOVED"},
	{name: "remove message type", old: proto(`message M { string a = 1; } message N { string x = 1; }`), new: proto(`message M { string a = 1; }`), backward: 0, forward: 1, wantType: "MESSAGE_REMOVED"},
	{name: "add enum", old: proto(`message M { string a = 1; }`), new: proto(`message M { string a = 1; } enum E { E_UNSPECIFIED = 0; }`), backward: 1, forward: 1},
	{name: "remove enum", old: proto(`message M { string a = 1; } enum E { E_UNSPECIFIED = 0; }`), new: proto(`message M { string a = 1; }`), backward: 1, forward: 1},
	{name: "add enum value", old: proto(`message M { E e = 1; } enum E { A = 0; }`), new: proto(`message M { E e = 1; } enum E { A = 0; B = 1; }`), backward: 1, forward: 1},
	{name: "remove enum value", old: proto(`message M { E e = 1; } enum E { A = 0; B = 1; }`), new: proto(`message M { E e = 1; } enum E { A = 0; }`), backward: 1, forward: 1},
	{name: "rename field same tag", old: proto(`message M { string a = 1; }`), new: proto(`message M { string b = 1; }`), backward: 1, forward: 1},
	{name: "scalar change within group int32 to int64", old: proto(`message M { int32 n = 1; }`), new: proto(`message M { int64 n = 1; }`), backward: 1, forward: 1},
	{name: "scalar change across groups int32 to string", old: proto(`message M { int32 n = 1; }`), new: proto(`message M { string n = 1; }`), backward: 0, forward: 0, wantType: "FIELD_SCALAR_KIND_CHANGED"},
	{name: "scalar to message", old: proto(`message M { int32 n = 1; } message N { int32 x = 1; }`), new: proto(`message M { N n = 1; } message N { int32 x = 1; }`), backward: 0, forward: 0, wantType: "FIELD_KIND_CHANGED"},
	{name: "scalar to map", old: proto(`message M { int32 n = 1; }`), new: proto(`message M { map<string,int32> n = 1; }`), backward: 0, forward: 0, wantType: "FIELD_KIND_CHANGED"},
	{name: "different message type", old: proto(`message M { A f = 1; } message A { int32 x = 1; } message B { int32 x = 1; }`), new: proto(`message M { B f = 1; } message A { int32 x = 1; } message B { int32 x = 1; }`), backward: 0, forward: 0, wantType: "FIELD_NAMED_TYPE_CHANGED"},
	{name: "singular to repeated numeric", old: proto(`message M { int64 n = 1; }`), new: proto(`message M { repeated int64 n = 1; }`), backward: 0, forward: 0, wantType: "FIELD_NUMERIC_LABEL_CHANGED"},
	{name: "singular to repeated string", old: proto(`message M { string s = 1; }`), new: proto(`message M { repeated string s = 1; }`), backward: 1, forward: 1},
	{name: "proto2 required field added", old: "syntax = \"proto2\";\npackage acme;\nmessage M { optional string a = 1; }", new: "syntax = \"proto2\";\npackage acme;\nmessage M { optional string a = 1; required int64 b = 2; }", backward: 0, forward: 0, wantType: "REQUIRED_FIELD"},
	{name: "add field into an existing oneof", old: proto(`message M { oneof o { string a = 1; } }`), new: proto(`message M { oneof o { string a = 1; int64 b = 2; } }`), backward: 1, forward: 0, wantType: "ONEOF_FIELD_REMOVED"},
	{name: "remove a oneof member, oneof survives", old: proto(`message M { oneof o { string a = 1; int64 b = 2; } }`), new: proto(`message M { oneof o { string a = 1; } }`), backward: 0, forward: 1, wantType: "ONEOF_FIELD_REMOVED"},
	{name: "move two top-level fields into one oneof", old: proto(`message M { string a = 1; int64 b = 2; }`), new: proto(`message M { oneof o { string a = 1; int64 b = 2; } }`), backward: 0, forward: -1, wantType: "MULTIPLE_FIELDS_MOVED_TO_ONEOF"},
	// The registry's current compatible set holds PACKAGE_CHANGED: serialised data names message
	// indexes, not packages.
	{name: "package change", old: proto(`message M { string a = 1; }`), new: "syntax = \"proto3\";\npackage other;\nmessage M { string a = 1; }", backward: 1, forward: 1},
	{name: "reorder messages", old: proto(`message M { string a = 1; } message N { string x = 1; }`), new: proto(`message N { string x = 1; } message M { string a = 1; }`), backward: 1, forward: 1},
}

func obj(props string, extra string) string {
	s := `{"type":"object","properties":{` + props + `}`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// The JSON Schema table of docs/reference/schema-rules.md (STRICT unless the row says LENIENT).
var jsonRows = []row{
	{name: "add optional property, old open", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, ""), backward: 0, forward: 1, wantType: "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
	{name: "add optional property, old closed", old: obj(`"a":{"type":"string"}`, `"additionalProperties":false`), new: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, `"additionalProperties":false`), backward: 1, forward: 0, wantType: "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
	{name: "add property with empty schema to open model", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"},"b":{}`, ""), backward: 1, forward: -1},
	{name: "add required property with default, closed model", old: obj(`"a":{"type":"string"}`, `"additionalProperties":false`), new: obj(`"a":{"type":"string"},"b":{"type":"integer","default":0}`, `"additionalProperties":false,"required":["b"]`), backward: 1, forward: -1},
	{name: "add required property without default", old: obj(`"a":{"type":"string"}`, `"additionalProperties":false`), new: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, `"additionalProperties":false,"required":["b"]`), backward: 0, forward: -1, wantType: "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
	{name: "remove property, new open", old: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, ""), new: obj(`"a":{"type":"string"}`, ""), backward: 1, forward: 0, wantType: "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
	{name: "remove property, new closed", old: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, `"additionalProperties":false`), new: obj(`"a":{"type":"string"}`, `"additionalProperties":false`), backward: 0, forward: 1, wantType: "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
	{name: "remove property, new closed, LENIENT", policy: compat.Lenient, old: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, `"additionalProperties":false`), new: obj(`"a":{"type":"string"}`, `"additionalProperties":false`), backward: 1, forward: 1},
	{name: "add optional property, old open, LENIENT", policy: compat.Lenient, old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, ""), backward: 1, forward: 1},
	{name: "make a required property optional", old: obj(`"a":{"type":"string"}`, `"required":["a"]`), new: obj(`"a":{"type":"string"}`, ""), backward: 1, forward: 0, wantType: "REQUIRED_ATTRIBUTE_ADDED"},
	{name: "widen type integer to number", old: obj(`"n":{"type":"integer"}`, ""), new: obj(`"n":{"type":"number"}`, ""), backward: 1, forward: 0, wantType: "TYPE_NARROWED"},
	{name: "widen type by adding to the type list", old: obj(`"s":{"type":"string"}`, ""), new: obj(`"s":{"type":["string","null"]}`, ""), backward: 1, forward: 0, wantType: "TYPE_CHANGED"},
	{name: "narrow type number to integer", old: obj(`"n":{"type":"number"}`, ""), new: obj(`"n":{"type":"integer"}`, ""), backward: 0, forward: 1, wantType: "TYPE_NARROWED"},
	{name: "extend enum", old: obj(`"e":{"enum":["X","Y"]}`, ""), new: obj(`"e":{"enum":["X","Y","Z"]}`, ""), backward: 1, forward: 0, wantType: "ENUM_ARRAY_NARROWED"},
	{name: "maxLength increased", old: obj(`"s":{"type":"string","maxLength":5}`, ""), new: obj(`"s":{"type":"string","maxLength":10}`, ""), backward: 1, forward: 0, wantType: "MAX_LENGTH_DECREASED"},
	{name: "maxLength removed", old: obj(`"s":{"type":"string","maxLength":5}`, ""), new: obj(`"s":{"type":"string"}`, ""), backward: 1, forward: 0, wantType: "MAX_LENGTH_ADDED"},
	{name: "maximum increased", old: obj(`"n":{"type":"number","maximum":5}`, ""), new: obj(`"n":{"type":"number","maximum":10}`, ""), backward: 1, forward: 0, wantType: "MAXIMUM_DECREASED"},
	{name: "minLength decreased", old: obj(`"s":{"type":"string","minLength":5}`, ""), new: obj(`"s":{"type":"string","minLength":1}`, ""), backward: 1, forward: 0, wantType: "MIN_LENGTH_INCREASED"},
	{name: "minimum removed", old: obj(`"n":{"type":"number","minimum":0}`, ""), new: obj(`"n":{"type":"number"}`, ""), backward: 1, forward: 0, wantType: "MINIMUM_ADDED"},
	{name: "pattern removed", old: obj(`"s":{"type":"string","pattern":"^a"}`, ""), new: obj(`"s":{"type":"string"}`, ""), backward: 1, forward: 0, wantType: "PATTERN_ADDED"},
	{name: "additionalProperties added", old: obj(`"a":{"type":"string"}`, `"additionalProperties":false`), new: obj(`"a":{"type":"string"}`, ""), backward: 1, forward: -1},
	{name: "additionalProperties extended (schema removed)", old: obj(`"a":{"type":"string"}`, `"additionalProperties":{"type":"string"}`), new: obj(`"a":{"type":"string"}`, ""), backward: 1, forward: -1},
	{name: "array items: add optional property to open item model", old: `{"type":"array","items":` + obj(`"a":{"type":"string"}`, "") + `}`, new: `{"type":"array","items":` + obj(`"a":{"type":"string"}`, "") + `,"maxItems":3}`, backward: 0, forward: 1, wantType: "MAX_ITEMS_ADDED"},
	{name: "array items: widen item type", old: `{"type":"array","items":{"type":"integer"}}`, new: `{"type":"array","items":{"type":"number"}}`, backward: 1, forward: 0, wantType: "TYPE_NARROWED"},
	{name: "oneOf grows (SUM_TYPE_EXTENDED)", old: obj(`"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}`, ""), new: obj(`"v":{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`, ""), backward: 1, forward: 0, wantType: "SUM_TYPE_NARROWED"},
	{name: "allOf shrinks (PRODUCT_TYPE_NARROWED)", old: obj(`"v":{"allOf":[{"type":"string"},{"maxLength":5}]}`, ""), new: obj(`"v":{"allOf":[{"type":"string"}]}`, ""), backward: 1, forward: 0, wantType: "PRODUCT_TYPE_EXTENDED"},
}

// JSON Schema dependencies, which docs/reference/schema-rules.md does not tabulate: the rules of SR's
// ObjectSchemaDiff.compareDependencies (property dependencies compared as sets; removed and
// narrowed are in SchemaDiff's compatible changes, added, extended, changed and schema-added not).
var jsonDependencyRows = []row{
	{name: "dependency array added", old: obj(`"a":{"type":"string"},"b":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"},"b":{"type":"string"}`, `"dependencies":{"a":["b"]}`), backward: 0, forward: 1, wantType: "DEPENDENCY_ARRAY_ADDED"},
	{name: "dependency array removed", old: obj(`"a":{"type":"string"},"b":{"type":"string"}`, `"dependencies":{"a":["b"]}`), new: obj(`"a":{"type":"string"},"b":{"type":"string"}`, ""), backward: 1, forward: 0, wantType: "DEPENDENCY_ARRAY_ADDED"},
	{name: "dependency array extended", old: obj(`"a":{"type":"string"}`, `"dependencies":{"a":["b"]}`), new: obj(`"a":{"type":"string"}`, `"dependencies":{"a":["b","c"]}`), backward: 0, forward: 1, wantType: "DEPENDENCY_ARRAY_EXTENDED"},
	{name: "dependency array narrowed", old: obj(`"a":{"type":"string"}`, `"dependencies":{"a":["b","c"]}`), new: obj(`"a":{"type":"string"}`, `"dependencies":{"a":["b"]}`), backward: 1, forward: 0, wantType: "DEPENDENCY_ARRAY_EXTENDED"},
	{name: "dependency array changed", old: obj(`"a":{"type":"string"}`, `"dependencies":{"a":["b"]}`), new: obj(`"a":{"type":"string"}`, `"dependencies":{"a":["c"]}`), backward: 0, forward: 0, wantType: "DEPENDENCY_ARRAY_CHANGED"},
	{name: "dependency array reordered", old: obj(`"a":{"type":"string"}`, `"dependencies":{"a":["b","c"]}`), new: obj(`"a":{"type":"string"}`, `"dependencies":{"a":["c","b","b"]}`), backward: 1, forward: 1},
	{name: "dependentRequired added", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"}`, `"dependentRequired":{"a":["b"]}`), backward: 0, forward: 1, wantType: "DEPENDENCY_ARRAY_ADDED"},
	{name: "schema dependency added", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"}`, `"dependencies":{"a":{"required":["b"]}}`), backward: 0, forward: 1, wantType: "DEPENDENCY_SCHEMA_ADDED"},
	{name: "dependentSchemas removed", old: obj(`"a":{"type":"string"}`, `"dependentSchemas":{"a":{"required":["b"]}}`), new: obj(`"a":{"type":"string"}`, ""), backward: 1, forward: 0, wantType: "DEPENDENCY_SCHEMA_ADDED"},
	{name: "schema dependency compared inside", old: obj(`"a":{"type":"string"}`, `"dependencies":{"a":{"properties":{"n":{"type":"integer"}}}}`), new: obj(`"a":{"type":"string"}`, `"dependencies":{"a":{"properties":{"n":{"type":"number"}}}}`), backward: 1, forward: 0, wantType: "TYPE_NARROWED"},
}

func expectVerdict(r row, level compat.Level) int {
	switch level {
	case compat.None:
		return 1
	case compat.Backward, compat.BackwardTransitive:
		return r.backward
	case compat.Forward, compat.ForwardTransitive:
		return r.forward
	}
	if r.backward == -1 || r.forward == -1 {
		if r.backward == 0 || r.forward == 0 {
			return 0
		}
		return -1
	}
	return r.backward & r.forward
}

func TestRuleTablesForEveryFormatAndLevel(t *testing.T) {
	for _, tc := range []struct {
		format schema.Format
		rows   []row
	}{{schema.Avro, avroRows}, {schema.Protobuf, protoRows}, {schema.JSON, jsonRows}, {schema.JSON, jsonDependencyRows}} {
		for _, r := range tc.rows {
			old, err := schema.Parse(tc.format, r.old)
			if err != nil {
				t.Fatalf("%s %s: old: %v", tc.format, r.name, err)
			}
			nw, err := schema.Parse(tc.format, r.new)
			if err != nil {
				t.Fatalf("%s %s: new: %v", tc.format, r.name, err)
			}
			policy := r.policy
			if policy == "" {
				policy = compat.Strict
			}
			for _, level := range compat.Levels {
				want := expectVerdict(r, level)
				if want < 0 {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%s", tc.format, r.name, level), func(t *testing.T) {
					res := compat.Check(level, policy, nw, []compat.Version{{Version: 1, Schema: old}})
					if res.Compatible != (want == 1) {
						t.Fatalf("compatible = %v, want %v; %+v", res.Compatible, want == 1, res.Incompatibilities)
					}
					if !res.Compatible {
						if len(res.Incompatibilities) == 0 {
							t.Fatal("incompatible without a message")
						}
						for _, in := range res.Incompatibilities {
							if in.Message == "" || in.Type == "" || in.OldVersion != 1 {
								t.Fatalf("incomplete incompatibility %+v", in)
							}
							// Avro messages come from our explainer, not hamba's bare error.
							if tc.format == schema.Avro && !strings.HasPrefix(in.Message, "The ") {
								t.Fatalf("unexplained Avro incompatibility %+v", in)
							}
						}
						if r.wantType != "" && !hasType(res.Incompatibilities, r.wantType) {
							t.Fatalf("want a %s among %+v", r.wantType, res.Incompatibilities)
						}
					}
				})
			}
		}
	}
}

func hasType(ins []compat.Incompatibility, typ string) bool {
	for _, in := range ins {
		if strings.HasPrefix(in.Type, typ) {
			return true
		}
	}
	return false
}

func mustParse(t testing.TB, f schema.Format, s string) *schema.Schema {
	t.Helper()
	p, err := schema.Parse(f, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTransitiveComparesEveryVersionNewestFirstAndPlainOnlyTheLatest(t *testing.T) {
	v1 := mustParse(t, schema.Avro, avroRec(fA+","+fB))
	v2 := mustParse(t, schema.Avro, avroRec(fA+","+fBd))
	v3 := mustParse(t, schema.Avro, avroRec(fA))
	// v3 drops b. Against v2 (b had a default) FORWARD holds; against v1 (b had none) it fails.
	prev := []compat.Version{{Version: 1, Schema: v1}, {Version: 2, Schema: v2}}
	plain := compat.Check(compat.Forward, compat.Strict, v3, prev)
	if !plain.Compatible || len(plain.Compared) != 1 || plain.Compared[0] != 2 {
		t.Fatalf("FORWARD: %+v", plain)
	}
	tr := compat.Check(compat.ForwardTransitive, compat.Strict, v3, prev)
	if tr.Compatible || len(tr.Compared) != 2 || tr.Compared[0] != 2 || tr.Compared[1] != 1 || tr.Incompatibilities[0].OldVersion != 1 {
		t.Fatalf("FORWARD_TRANSITIVE: %+v", tr)
	}
}

func TestDifferentSchemaTypesAreIncompatible(t *testing.T) {
	a := mustParse(t, schema.Avro, avroRec(fA))
	p := mustParse(t, schema.Protobuf, proto(`message M { string a = 1; }`))
	res := compat.Check(compat.Backward, compat.Strict, p, []compat.Version{{Version: 1, Schema: a}})
	if res.Compatible || !strings.Contains(res.Incompatibilities[0].Message, "different schema type") {
		t.Fatalf("%+v", res)
	}
	if res := compat.Check(compat.None, compat.Strict, p, []compat.Version{{Version: 1, Schema: a}}); !res.Compatible {
		t.Fatal("NONE must accept anything")
	}
}

func TestScenarioV12IsBackwardCompatibleButNotForwardSafeToIgnore(t *testing.T) {
	v11 := mustParse(t, schema.Avro, readScenario(t, 11))
	v12 := mustParse(t, schema.Avro, readScenario(t, 12))
	for _, l := range compat.Levels {
		res := compat.Check(l, compat.Strict, v12, []compat.Version{{Version: 11, Schema: v11}})
		if !res.Compatible {
			t.Fatalf("%s: v12 should pass (optional field dropped, optional field added): %+v", l, res)
		}
	}
}

// A shared hamba checker would reuse a verdict for schemas that differ only in defaults; ours
// must not (docs/reference/schema-rules.md, Avro).
func TestVerdictsDoNotLeakBetweenChecksThatDifferOnlyInDefaults(t *testing.T) {
	withDefault := mustParse(t, schema.Avro, avroRec(fA+","+fBd))
	without := mustParse(t, schema.Avro, avroRec(fA+","+fB))
	old := mustParse(t, schema.Avro, avroRec(fA))
	if r := compat.Check(compat.Backward, compat.Strict, withDefault, []compat.Version{{Version: 1, Schema: old}}); !r.Compatible {
		t.Fatal("with default must pass")
	}
	if r := compat.Check(compat.Backward, compat.Strict, without, []compat.Version{{Version: 1, Schema: old}}); r.Compatible {
		t.Fatal("without default must fail even after the with-default check")
	}
}

func TestAvroMessagesNameEveryIncompatibility(t *testing.T) {
	old := mustParse(t, schema.Avro, avroRec(fA+`,{"name":"n","type":"int"}`))
	nw := mustParse(t, schema.Avro, avroRec(`{"name":"a","type":"int"},{"name":"n","type":"int"},{"name":"x","type":"string"}`))
	res := compat.Check(compat.Backward, compat.Strict, nw, []compat.Version{{Version: 4, Schema: old}})
	if res.Compatible || len(res.Incompatibilities) != 2 {
		t.Fatalf("want two incompatibilities: %+v", res.Incompatibilities)
	}
	if res.Incompatibilities[0].Type != "TYPE_MISMATCH" || res.Incompatibilities[0].Path != "/fields/0/type" ||
		res.Incompatibilities[1].Type != "READER_FIELD_MISSING_DEFAULT_VALUE" || res.Incompatibilities[1].Field != "x" {
		t.Fatalf("%+v", res.Incompatibilities)
	}
}

func TestLevelAndPolicyParsing(t *testing.T) {
	if l, err := compat.ParseLevel("full_transitive"); err != nil || l != compat.FullTransitive {
		t.Fatal(l, err)
	}
	if l, err := compat.ParseLevel(""); err != nil || l != compat.Backward {
		t.Fatal(l, err)
	}
	if _, err := compat.ParseLevel("SIDEWAYS"); err == nil || !strings.Contains(err.Error(), "BACKWARD_TRANSITIVE") {
		t.Fatal(err)
	}
	if _, err := compat.ParsePolicy("LOOSE"); err == nil {
		t.Fatal("want error")
	}
}

// Avro's SchemaCompatibility (which SR runs) compares unqualified names, so a namespace-only change
// of the record passes; docs/reference/schema-rules.md's "rename record/namespace" row holds for the name.
func TestAvroNamespaceOnlyChangeFollowsAvroJava(t *testing.T) {
	old := mustParse(t, schema.Avro, `{"type":"record","name":"R","namespace":"a","fields":[`+fA+`]}`)
	nw := mustParse(t, schema.Avro, `{"type":"record","name":"R","namespace":"b","fields":[`+fA+`]}`)
	if res := compat.Check(compat.Full, compat.Strict, nw, []compat.Version{{Version: 1, Schema: old}}); !res.Compatible {
		t.Fatalf("%+v", res)
	}
}

// A message type from a referenced schema is compared recursively when the reference moves to
// another version (docs/reference/schema-rules.md).
func TestProtobufReferencedTypesAreComparedAcrossReferenceVersions(t *testing.T) {
	order := proto(`import "money.proto"; message Order { string id = 1; acme.Money total = 2; }`)
	parse := func(money string) *schema.Schema {
		t.Helper()
		s, err := schema.Parse(schema.Protobuf, order, schema.Reference{Name: "money.proto", Subject: "money", Version: 1, Schema: money})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := parse(proto(`message Money { int64 units = 1; }`))
	same := parse(proto(`message Money { int64 units = 1; string currency = 2; }`))
	changed := parse(proto(`message Money { string units = 1; }`))
	if res := compat.Check(compat.Full, compat.Strict, same, []compat.Version{{Version: 1, Schema: old}}); !res.Compatible {
		t.Fatalf("adding a field to the referenced type: %+v", res)
	}
	res := compat.Check(compat.Backward, compat.Strict, changed, []compat.Version{{Version: 1, Schema: old}})
	if res.Compatible || !hasType(res.Incompatibilities, "FIELD_SCALAR_KIND_CHANGED") || !hasType(res.Incompatibilities, "FIELD_NAMED_TYPE_CHANGED") {
		t.Fatalf("%+v", res)
	}
}

// JSON Schema references (the $ref URL named in the registry's references) are followed, with the
// referenced document's own local refs.
func TestJSONReferencedSchemasAreCompared(t *testing.T) {
	main := `{"type":"object","properties":{"ship_to":{"$ref":"address.json"},"bill_to":{"$ref":"address.json#/definitions/Street"}},"additionalProperties":false}`
	parse := func(addr string) *schema.Schema {
		t.Helper()
		s, err := schema.Parse(schema.JSON, main, schema.Reference{Name: "address.json", Subject: "address", Version: 1, Schema: addr})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := parse(`{"type":"object","properties":{"city":{"type":"string"},"street":{"$ref":"#/definitions/Street"}},"additionalProperties":false,"definitions":{"Street":{"type":"string","maxLength":40}}}`)
	wider := parse(`{"type":"object","properties":{"city":{"type":"string"},"street":{"$ref":"#/definitions/Street"}},"additionalProperties":false,"definitions":{"Street":{"type":"string","maxLength":80}}}`)
	if _, ok := old.Field("ship_to.city"); !ok {
		t.Fatalf("referenced fields not in the model: %+v", old.Fields)
	}
	if res := compat.Check(compat.Backward, compat.Strict, wider, []compat.Version{{Version: 1, Schema: old}}); !res.Compatible {
		t.Fatalf("maxLength widened in the reference: %+v", res)
	}
	res := compat.Check(compat.Forward, compat.Strict, wider, []compat.Version{{Version: 1, Schema: old}})
	if res.Compatible || !hasType(res.Incompatibilities, "MAX_LENGTH_DECREASED") {
		t.Fatalf("FORWARD must see the narrowing inside the reference: %+v", res)
	}
}

// As docs/reference/schema-rules.md says of Protobuf: FORWARD is old.isBackwardCompatible(new), so a message type the
// new schema adds shows up as MESSAGE_REMOVED and FORWARD/FULL refuse it; BACKWARD_TRANSITIVE is
// Confluent's advice for Protobuf.
func TestProtobufMessageAddedUnderForwardFailsAsMessageRemoved(t *testing.T) {
	old := mustParse(t, schema.Protobuf, proto(`message Usage { string id = 1; }`))
	nw := mustParse(t, schema.Protobuf, proto(`message Usage { string id = 1; } message Refund { string id = 1; }`))
	prev := []compat.Version{{Version: 1, Schema: old}}
	for _, l := range []compat.Level{compat.Forward, compat.ForwardTransitive, compat.Full, compat.FullTransitive} {
		res := compat.Check(l, compat.Strict, nw, prev)
		if res.Compatible || res.Incompatibilities[0].Type != "MESSAGE_REMOVED" || res.Incompatibilities[0].Path != "#/Refund" ||
			res.Incompatibilities[0].Direction != compat.OldReadsNew {
			t.Fatalf("%s: %+v", l, res)
		}
	}
	for _, l := range []compat.Level{compat.Backward, compat.BackwardTransitive} {
		if res := compat.Check(l, compat.Strict, nw, prev); !res.Compatible {
			t.Fatalf("%s: %+v", l, res)
		}
	}
}
