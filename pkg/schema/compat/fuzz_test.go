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
			res := compat.Check(l, compat.Strict, nw, []compat.Version{{Version: 1, Schema: old}})
			if !res.Compatible && len(res.Incompatibilities) == 0 {
				t.Fatal("incompatible without a reason")
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
	})
}

func FuzzCompatAvro(f *testing.F) {
	fuzzPair(f, schema.Avro, [][2]string{
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, `{"type":"record","name":"R","fields":[{"name":"a","type":["null","long"],"default":null}]}`},
		{`{"type":"record","name":"L","fields":[{"name":"n","type":["null","L"],"default":null}]}`, `{"type":"record","name":"L","fields":[{"name":"n","type":["null","L"],"default":null},{"name":"v","type":"int","default":0}]}`},
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A"],"default":"A"}`},
	})
}

func FuzzCompatProtobuf(f *testing.F) {
	fuzzPair(f, schema.Protobuf, [][2]string{
		{`syntax="proto3"; message M { int32 a = 1; oneof o { string s = 2; } }`, `syntax="proto3"; message M { int64 a = 1; oneof o { string s = 2; bytes b = 3; } message N { M m = 1; } }`},
		{`syntax="proto3"; message M { map<string,M> m = 1; }`, `syntax="proto3"; message M { map<string,int32> m = 1; }`},
	})
}
