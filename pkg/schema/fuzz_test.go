package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
)

// The parsers take schemas from pull requests and registries: any input must give a schema or an
// error, never a panic, and a parsed schema must diff against itself as unchanged.
func fuzzParser(f *testing.F, format schema.Format, seeds []string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := schema.Parse(format, text)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if d := schema.Diff(s, s); len(d) != 0 {
			t.Fatalf("self-diff not empty: %+v", d)
		}
		_ = s.Fingerprint()
	})
}

func FuzzParseAvro(f *testing.F) {
	fuzzParser(f, schema.Avro, []string{
		`{"type":"record","name":"R","fields":[{"name":"a","type":["null","long"],"default":null}]}`,
		`{"type":"record","name":"R","fields":[{"name":"n","type":["null","R"],"default":null}]}`,
		`{"type":"enum","name":"E","symbols":["A"]}`,
		`{"type":"array","items":{"type":"map","values":"int"}}`,
		`"string"`, `{"type":"fixed","name":"F","size":4}`, `{`, `[]`, ``,
	})
}

func FuzzParseProtobuf(f *testing.F) {
	fuzzParser(f, schema.Protobuf, []string{
		`syntax = "proto3"; package a; message M { optional int64 x = 1; map<string,M> m = 2; oneof o { string s = 3; } }`,
		`syntax = "proto2"; message M { required int32 a = 1; optional group G = 2 { optional int32 b = 3; } }`,
		`syntax = "proto3"; import "google/protobuf/any.proto"; message M { google.protobuf.Any a = 1; }`,
		`message`, `syntax = "proto3"; message M { string a = 1 [default = "x"]; }`, ``,
	})
}

func FuzzParseJSONSchema(f *testing.F) {
	fuzzParser(f, schema.JSON, []string{
		`{"type":"object","properties":{"a":{"type":["integer","null"]},"b":{"$ref":"#/definitions/B"}},"definitions":{"B":{"$ref":"#/definitions/B"}}}`,
		`{"type":"array","items":[{"type":"string"}],"additionalItems":false}`,
		`{"oneOf":[{"type":"string"},{"type":"null"}]}`,
		`true`, `false`, `{"$ref":"#"}`, `{"properties":{"a":{"$ref":"#/properties/a"}}}`, `{"type":"object",`, ``,
	})
}

// Sniff reads any text a caller pastes: it never panics, and what it calls JSON Schema or Avro is
// JSON.
func FuzzSniff(f *testing.F) {
	for _, s := range []string{"syntax = \"proto3\";", `{"type":"object"}`, `{"type":"record","fields":[]}`, `["null"]`, "", "{", "message"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := schema.Sniff(text)
		if ok && (got == schema.JSON || got == schema.Avro) && !json.Valid([]byte(strings.TrimSpace(text))) {
			t.Fatalf("%q sniffed as %s but is not JSON", text, got)
		}
		if !ok && got != "" {
			t.Fatalf("no verdict but a format: %q", got)
		}
	})
}
