package compat_test

import (
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// Compatibility runs on schemas from pull requests: any pair that parses must get a verdict in
// both directions, never a panic or an endless walk, and a schema is compatible with itself.
func fuzzPair(f *testing.F, format schema.Format, seeds [][2]string) {
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		old, err1 := schema.Parse(format, a)
		nw, err2 := schema.Parse(format, b)
		if err1 != nil || err2 != nil {
			return
		}
		for _, l := range []compat.Level{compat.Full, compat.FullTransitive} {
			for _, p := range []compat.Policy{compat.Strict, compat.Logical} {
				res := compat.Check(l, p, nw, []compat.Version{{Version: 1, Schema: old}})
				if !res.Compatible && len(res.Incompatibilities) == 0 {
					t.Fatalf("incompatible without a reason under %s", p)
				}
			}
		}
		// LOGICAL judges a convertible schema compatible with itself in both modes.
		if _, err := compat.ToLogical(old); err == nil {
			if res := compat.Check(compat.Full, compat.Logical, old, []compat.Version{{Version: 1, Schema: old}}); !res.Compatible {
				t.Fatalf("not LOGICAL-compatible with itself: %+v", res.Incompatibilities)
			}
		}
		if res := compat.Check(compat.Full, compat.Strict, old, []compat.Version{{Version: 1, Schema: old}}); !res.Compatible {
			t.Fatalf("not compatible with itself: %+v", res.Incompatibilities)
		}
	})
}

func FuzzCompatJSON(f *testing.F) {
	fuzzPair(f, schema.JSON, [][2]string{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{}},"additionalProperties":false}`},
		{`{"anyOf":[{"$ref":"#"},{"$ref":"#"},{"type":"string"}]}`, `{"anyOf":[{"$ref":"#"},{"$ref":"#"},{"type":"integer"}]}`},
		{`{"type":"array","items":[{"type":"integer"}]}`, `{"type":"array","items":[{"type":"number"},{"type":"string"}],"additionalItems":false}`},
		{`{"allOf":[{"type":"string"},{"maxLength":3}]}`, `{"not":{"type":"string"}}`},
		// Draft 2020-12 keywords: tuples, unevaluated content, contains bounds, dependencies.
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"string"},"contains":{"type":"string"},"minContains":1}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false,"unevaluatedItems":false,"maxContains":2}`},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":false,"dependentRequired":{"a":["b"]}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string"},"b":{"$ref":"#/$defs/x"}},"unevaluatedProperties":{"type":"integer"},"dependentSchemas":{"a":{"required":["b"]}},"$defs":{"x":{"$ref":"#/$defs/y"},"y":{"type":"integer"}}}`},
		// Inferred types, enums beside a type, duplicate and reordered subschemas.
		{`{"properties":{"a":{"minLength":1}},"required":["a"]}`, `{"type":"string","enum":["x","y"]}`},
		{`{"oneOf":[{"type":"string"},{"type":"string"},{"type":"integer","minimum":0}]}`, `{"oneOf":[{"type":"integer"},{"type":"string","maxLength":4}]}`},
	})
}

func FuzzCompatAvro(f *testing.F) {
	fuzzPair(f, schema.Avro, [][2]string{
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, `{"type":"record","name":"R","fields":[{"name":"a","type":["null","long"],"default":null}]}`},
		{`{"type":"record","name":"L","fields":[{"name":"n","type":["null","L"],"default":null}]}`, `{"type":"record","name":"L","fields":[{"name":"n","type":["null","L"],"default":null},{"name":"v","type":"int","default":0}]}`},
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A"],"default":"A"}`},
		// Logical types, maps, arrays, nested records and unions for the LOGICAL conversion.
		{`{"type":"record","name":"R","fields":[{"name":"m","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},{"name":"t","type":{"type":"long","logicalType":"timestamp-millis"}}]}`,
			`{"type":"record","name":"R","fields":[{"name":"t","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},{"name":"m","type":{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":12,"scale":2}}]}`},
		{`{"type":"record","name":"R","fields":[{"name":"xs","type":{"type":"map","values":{"type":"array","items":["null","int"]}}},{"name":"n","type":{"type":"record","name":"N","fields":[{"name":"a","type":"string","default":""}]}}]}`,
			`{"type":"record","name":"R","fields":[{"name":"xs","type":{"type":"map","values":{"type":"array","items":"long"}}},{"name":"n","type":{"type":"record","name":"N","fields":[{"name":"b","type":"string","aliases":["a"]}]}}]}`},
		{`{"type":"record","name":"R","fields":[{"name":"u","type":["string","int"]},{"name":"d","type":{"type":"int","logicalType":"date"}}]}`,
			`{"type":"record","name":"R","fields":[{"name":"d","type":{"type":"int","logicalType":"date"}},{"name":"id","type":{"type":"string","logicalType":"uuid"}}]}`},
	})
}

func FuzzCompatProtobuf(f *testing.F) {
	fuzzPair(f, schema.Protobuf, [][2]string{
		{`syntax="proto3"; message M { int32 a = 1; oneof o { string s = 2; } }`, `syntax="proto3"; message M { int64 a = 1; oneof o { string s = 2; bytes b = 3; } message N { M m = 1; } }`},
		{`syntax="proto3"; message M { map<string,M> m = 1; }`, `syntax="proto3"; message M { map<string,int32> m = 1; }`},
		{`syntax="proto3"; message M { map<int32,string> m = 1; optional uint64 u = 2; repeated N ns = 3; } message N { optional int32 x = 1; }`,
			`syntax="proto3"; message M { map<int64,string> m = 1; fixed64 u = 2; repeated N ns = 3; } message N { int32 x = 1; }`},
		// Oneofs renamed, merged and split; built-in imports.
		{`syntax="proto3"; message M { oneof a { string x = 1; } oneof b { int64 y = 2; int64 z = 3; } }`,
			`syntax="proto3"; import "confluent/type/decimal.proto"; message M { oneof c { string x = 1; int64 y = 2; } int64 z = 3; confluent.type.Decimal d = 4; }`},
	})
}
