package schema_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
)

func read(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "scenario", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustParse(t testing.TB, f schema.Format, s string) *schema.Schema {
	t.Helper()
	p, err := schema.Parse(f, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAvroFieldsCarryTypeOptionalityDefaultAndAliases(t *testing.T) {
	s := mustParse(t, schema.Avro, `{"type":"record","name":"Order","namespace":"acme","fields":[
	  {"name":"id","type":"string"},
	  {"name":"total","type":["null","long"],"default":null,"aliases":["amount"]},
	  {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID"]},"default":"NEW"},
	  {"name":"ship_to","type":{"type":"record","name":"Address","fields":[{"name":"city","type":"string"}]}},
	  {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"sku","type":"string"}]}}},
	  {"name":"next","type":["null","Order"],"default":null}
	]}`)
	if s.Name != "acme.Order" {
		t.Fatalf("name %q", s.Name)
	}
	want := map[string]schema.Field{
		"id":           {Path: "id", Type: "string"},
		"total":        {Path: "total", Type: "long", Nullable: true, Optional: true, HasDefault: true, Default: "null", Aliases: []string{"amount"}},
		"status":       {Path: "status", Type: "enum acme.Status", Optional: true, HasDefault: true, Default: `"NEW"`, Symbols: []string{"NEW", "PAID"}},
		"ship_to.city": {Path: "ship_to.city", Type: "string"},
		"lines[].sku":  {Path: "lines[].sku", Type: "string"},
		"next":         {Path: "next", Type: "record acme.Order", Nullable: true, Optional: true, HasDefault: true, Default: "null"},
		"ship_to":      {Path: "ship_to", Type: "record acme.Address"},
		"lines":        {Path: "lines", Type: "array<record acme.Line>"},
	}
	for path, w := range want {
		got, ok := s.Field(path)
		if !ok {
			t.Fatalf("no field %s in %+v", path, s.Fields)
		}
		if got.Type != w.Type || got.Nullable != w.Nullable || got.Optional != w.Optional || got.Default != w.Default ||
			strings.Join(got.Aliases, ",") != strings.Join(w.Aliases, ",") || strings.Join(got.Symbols, ",") != strings.Join(w.Symbols, ",") {
			t.Errorf("%s = %+v, want %+v", path, got, w)
		}
	}
	if _, ok := s.Field("next.id"); ok {
		t.Error("a recursive type must not be flattened forever")
	}
}

func TestProtobufFieldsCarryTagsOneofsAndPresence(t *testing.T) {
	s := mustParse(t, schema.Protobuf, `syntax = "proto3";
package acme.v1;
import "google/protobuf/timestamp.proto";
message Usage {
  string usage_id = 1;
  optional int64 response_bytes = 2;
  google.protobuf.Timestamp ts = 3;
  map<string, int64> counters = 4;
  repeated Line lines = 5;
  oneof payer { string card = 6; string invoice = 7; }
  Status status = 8;
}
message Line { string sku = 1; }
enum Status { STATUS_UNSPECIFIED = 0; OK = 1; }`)
	if s.Name != "acme.v1.Usage" {
		t.Fatalf("name %q", s.Name)
	}
	check := func(path, typ string, tag int, nullable bool) schema.Field {
		t.Helper()
		f, ok := s.Field(path)
		if !ok || f.Type != typ || f.Tag != tag || f.Nullable != nullable {
			t.Fatalf("%s = %+v (found %v), want type %s tag %d nullable %v", path, f, ok, typ, tag, nullable)
		}
		return f
	}
	check("usage_id", "string", 1, false)
	check("response_bytes", "int64", 2, true)
	check("ts", "message google.protobuf.Timestamp", 3, true)
	check("ts.seconds", "int64", 1, false)
	check("counters", "map<string,int64>", 4, false)
	check("lines", "repeated message acme.v1.Line", 5, false)
	check("lines[].sku", "string", 1, false)
	if f := check("card", "string", 6, true); f.Oneof != "payer" {
		t.Fatalf("oneof %q", f.Oneof)
	}
	if f := check("status", "enum acme.v1.Status", 8, false); strings.Join(f.Symbols, ",") != "STATUS_UNSPECIFIED,OK" {
		t.Fatalf("symbols %v", f.Symbols)
	}
}

func TestJSONSchemaFieldsCarryRequiredNullabilityAndLocalRefs(t *testing.T) {
	s := mustParse(t, schema.JSON, `{"title":"Usage","type":"object","required":["usage_id"],
	 "properties":{
	   "usage_id":{"type":"string"},
	   "response_bytes":{"type":["integer","null"],"default":null},
	   "region":{"enum":["eu","us"]},
	   "ship_to":{"$ref":"#/definitions/Address"},
	   "tags":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}}}}
	 },
	 "definitions":{"Address":{"type":"object","properties":{"city":{"type":"string"}}}}}`)
	if s.Name != "Usage" {
		t.Fatal(s.Name)
	}
	f, _ := s.Field("usage_id")
	if f.Optional || f.Type != "string" {
		t.Fatalf("usage_id %+v", f)
	}
	f, _ = s.Field("response_bytes")
	if !f.Optional || !f.Nullable || f.Type != "integer" || f.Default != "null" {
		t.Fatalf("response_bytes %+v", f)
	}
	f, _ = s.Field("region")
	if strings.Join(f.Symbols, ",") != "eu,us" {
		t.Fatalf("region %+v", f)
	}
	if _, ok := s.Field("ship_to.city"); !ok {
		t.Fatalf("local $ref not followed: %+v", s.Fields)
	}
	if _, ok := s.Field("tags[].k"); !ok {
		t.Fatalf("array items not followed: %+v", s.Fields)
	}
}

func TestMalformedSchemasGiveClearErrors(t *testing.T) {
	cases := []struct {
		format schema.Format
		text   string
		want   string
	}{
		{schema.Avro, `{"type":"record","name":"R","fields":[{"name":"a","type":"strng"}]}`, "invalid Avro schema"},
		{schema.Avro, `{"type":"record"`, "invalid Avro schema"},
		{schema.Avro, "   ", "AVRO schema is empty"},
		{schema.Protobuf, `syntax = "proto3"; message M { string a = ; }`, "invalid Protobuf schema"},
		{schema.Protobuf, `syntax = "proto3"; enum E { A = 0; }`, "declares no message"},
		{schema.Protobuf, `syntax = "proto3"; import "missing.proto"; message M { string a = 1; }`, "invalid Protobuf schema"},
		{schema.JSON, `{"type":"object","properties":{"a":{"type":"strin"}}}`, `unknown type "strin"`},
		{schema.JSON, `{"type":"object","properties":[]}`, "properties must be an object"},
		{schema.JSON, `{"type":"object",}`, "malformed JSON at byte"},
		{schema.JSON, `42`, "must be an object or a boolean"},
		{schema.JSON, `{"required":"a"}`, "required must be an array"},
		{schema.Format("XML"), `<x/>`, "unknown schema type"},
	}
	for _, c := range cases {
		_, err := schema.Parse(c.format, c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want it to contain %q", c.format, c.text, err, c.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]schema.Format{"": schema.Avro, "avro": schema.Avro, "PROTOBUF": schema.Protobuf, "json": schema.JSON} {
		if got, err := schema.ParseFormat(in); err != nil || got != want {
			t.Errorf("%q → %v %v", in, got, err)
		}
	}
	if _, err := schema.ParseFormat("xml"); err == nil {
		t.Error("xml accepted")
	}
}

func TestFingerprintIgnoresWhitespaceInJSONFormats(t *testing.T) {
	a := mustParse(t, schema.Avro, read(t, "api-usage-value.v11.avsc"))
	b := mustParse(t, schema.Avro, strings.Join(strings.Fields(read(t, "api-usage-value.v11.avsc")), " "))
	if a.Fingerprint() != b.Fingerprint() {
		t.Fatal("same schema, different fingerprints")
	}
	c := mustParse(t, schema.Avro, read(t, "api-usage-value.v12.avsc"))
	if a.Fingerprint() == c.Fingerprint() {
		t.Fatal("different schemas, same fingerprint")
	}
}

// testdata/scenario/api-usage-value.v11.avsc must stay the v11 the story's lineage was built
// against (pkg/lineage/testdata/scenario), so schema checks and lineage tell one story.
func TestScenarioV11IsTheVersionTheLineageStoryPinned(t *testing.T) {
	lineage, err := os.ReadFile(filepath.Join("..", "lineage", "testdata", "scenario", "api-usage-value.v11.avsc"))
	if err != nil {
		t.Skipf("lineage story fixtures not present: %v", err)
	}
	if string(lineage) != read(t, "api-usage-value.v11.avsc") {
		t.Fatal("pkg/schema/testdata/scenario/api-usage-value.v11.avsc differs from pkg/lineage/testdata/scenario's: keep them identical")
	}
}

// Sniff names the format text plainly is, and nothing when it could be more than one.
func TestSniffNamesOnlyPlainFormats(t *testing.T) {
	cases := []struct {
		text string
		want schema.Format
		ok   bool
	}{
		{"syntax = \"proto3\";\nmessage M { string a = 1; }", schema.Protobuf, true},
		{"// a comment\npackage acme;\nmessage M {}", schema.Protobuf, true},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema"}`, schema.JSON, true},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, schema.JSON, true},
		{`{"type":"integer"}`, schema.JSON, true},
		{`{"type":"record","name":"R","fields":[]}`, schema.Avro, true},
		{`{"type":"enum","name":"E","symbols":["A"]}`, schema.Avro, true},
		{`{"type":"string"}`, "", false},
		{`["null","string"]`, "", false},
		{`not a schema`, "", false},
	}
	for _, c := range cases {
		if got, ok := schema.Sniff(c.text); got != c.want || ok != c.ok {
			t.Errorf("Sniff(%q) = %q, %v; want %q, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}

// The same Protobuf schema laid out differently or commented is the same canonical form, as the
// registry recognises a schema registered twice.
func TestProtobufFingerprintIgnoresLayoutAndComments(t *testing.T) {
	a := mustParse(t, schema.Protobuf, "syntax = \"proto3\";\npackage acme;\nmessage M { string a = 1; }")
	b := mustParse(t, schema.Protobuf, "syntax = \"proto3\";\n\npackage acme;\n\n// the message\nmessage M {\n  string a = 1; // the field\n}\n")
	c := mustParse(t, schema.Protobuf, "syntax = \"proto3\";\npackage acme;\nmessage M { string b = 1; }")
	if a.Fingerprint() != b.Fingerprint() || a.Fingerprint() == c.Fingerprint() {
		t.Fatal("fingerprints do not follow the canonical form")
	}
}

// The field model follows a $ref to a $ref to the schema behind it, as the diff does.
func TestJSONFieldModelFollowsRefChains(t *testing.T) {
	s := mustParse(t, schema.JSON, `{"type":"object","properties":{"amount":{"$ref":"#/$defs/money"}},"required":["amount"],
		"$defs":{"money":{"$ref":"#/$defs/decimal"},"decimal":{"type":"object","properties":{"units":{"type":"integer"}}}}}`)
	if f, ok := s.Field("amount.units"); !ok || f.Type != "integer" {
		t.Fatalf("fields %+v", s.Fields)
	}
	if f, ok := s.Field("amount"); !ok || f.Type != "object" || f.Optional {
		t.Fatalf("amount %+v", f)
	}
}

// A $ref that leads nowhere is refused, as the registry refuses to load it: followed, it would
// read as a schema that accepts anything and let any change pass.
func TestJSONRefThatLeadsNowhereIsRefused(t *testing.T) {
	for text, want := range map[string]string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`: "points to nothing",
		`{"type":"object","properties":{"a":{"$ref":"address.json"}}}`:    "not given as a reference",
	} {
		if _, err := schema.Parse(schema.JSON, text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", text, err)
		}
	}
	// A document named by an $id inside the schema, or given as a reference, is fine; so is data
	// that happens to look like a ref.
	for _, text := range []string{
		`{"$id":"https://example.com/schemas/order.json","$defs":{"addr":{"$id":"address.json","type":"string"}},"properties":{"a":{"$ref":"address.json"}}}`,
		`{"type":"object","properties":{"a":{"type":"object","default":{"$ref":"not-a-schema"}}}}`,
	} {
		if _, err := schema.Parse(schema.JSON, text); err != nil {
			t.Errorf("%s: %v", text, err)
		}
	}
	if _, err := schema.Parse(schema.JSON, `{"properties":{"a":{"$ref":"address.json"}}}`, schema.Reference{Name: "address.json", Schema: `{"type":"string"}`}); err != nil {
		t.Fatal(err)
	}
}
