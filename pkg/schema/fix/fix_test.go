package fix_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/fix"
)

func parse(t *testing.T, f schema.Format, s string) *schema.Schema {
	t.Helper()
	p, err := schema.Parse(f, s)
	if err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return p
}

func scenario(t *testing.T, v string) *schema.Schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "scenario", "api-usage-value.v"+v+".avsc"))
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, schema.Avro, string(b))
}

func TestScenarioV13RestoresResponseBytesBesideResponseKib(t *testing.T) {
	v11, v12 := scenario(t, "11"), scenario(t, "12")
	r, err := fix.Restore(v11, v12)
	if err != nil {
		t.Fatal(err)
	}
	v13 := parse(t, schema.Avro, r.Text)
	rb, ok := v13.Field("response_bytes")
	if !ok || !rb.Nullable || !rb.Optional || rb.Default != "null" || rb.Type != "long" {
		t.Fatalf("response_bytes in v13: %+v (%v)\n%s", rb, ok, r.Text)
	}
	if _, ok := v13.Field("response_kib"); !ok {
		t.Fatal("response_kib must stay")
	}
	if len(r.Restored) != 1 || r.Restored[0].Path != "response_bytes" {
		t.Fatalf("restored %+v", r.Restored)
	}
	// Proven under every level against v11 and v12, in the order the registry checks.
	prev := []compat.Version{{Version: 11, Schema: v11}, {Version: 12, Schema: v12}}
	for _, l := range compat.Levels {
		if res := compat.Check(l, compat.Strict, v13, prev); !res.Compatible {
			t.Errorf("%s: v13 incompatible: %+v", l, res.Incompatibilities)
		}
	}
	// Reading v13 with v11's field set again: the diff v12→v13 adds exactly response_bytes.
	d := schema.Diff(v12, v13)
	if len(d) != 1 || d[0].Kind != schema.FieldAdded || d[0].Path != "response_bytes" {
		t.Fatalf("v12→v13 diff %+v", d)
	}
}

func TestAvroRestoreMakesRequiredFieldsOptionalAndReusesNamedTypes(t *testing.T) {
	old := parse(t, schema.Avro, `{"type":"record","name":"R","namespace":"acme","fields":[
	 {"name":"a","type":"string"},
	 {"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"},{"name":"zip","type":"string"}]}},
	 {"name":"home","type":"Addr"},
	 {"name":"kind","type":["string","null"]}]}`)
	nw := parse(t, schema.Avro, `{"type":"record","name":"R","namespace":"acme","fields":[
	 {"name":"a","type":"string"},
	 {"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"}]}}]}`)
	r, err := fix.Restore(old, nw)
	if err != nil {
		t.Fatal(err)
	}
	got := parse(t, schema.Avro, r.Text)
	for _, p := range []string{"addr.zip", "home", "home.city", "kind"} {
		f, ok := got.Field(p)
		if !ok {
			t.Fatalf("%s missing:\n%s", p, r.Text)
		}
		if p != "home.city" && (!f.Nullable || f.Default != "null") {
			t.Fatalf("%s not optional: %+v", p, f)
		}
	}
	if res := compat.Check(compat.Backward, compat.Strict, got, []compat.Version{{Version: 2, Schema: nw}}); !res.Compatible {
		t.Fatalf("restoration not BACKWARD compatible: %+v", res)
	}
}

func TestJSONRestoreUnderStrictOpenModelIsHonestlyIncompatible(t *testing.T) {
	old := parse(t, schema.JSON, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a","b"]}`)
	nw := parse(t, schema.JSON, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`)
	r, err := fix.Restore(old, nw)
	if err != nil {
		t.Fatal(err)
	}
	got := parse(t, schema.JSON, r.Text)
	if f, ok := got.Field("b"); !ok || !f.Optional {
		t.Fatalf("b: %+v\n%s", f, r.Text)
	}
	// The new model is open, so adding b back is OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL under
	// STRICT — the caller must see that, not a false "fixed".
	if res := compat.Check(compat.Backward, compat.Strict, got, []compat.Version{{Version: 2, Schema: nw}}); res.Compatible {
		t.Fatal("adding a property to an open model must fail under STRICT")
	}
	if res := compat.Check(compat.Backward, compat.Lenient, got, []compat.Version{{Version: 2, Schema: nw}}); !res.Compatible {
		t.Fatalf("LENIENT: %+v", res)
	}
}

func TestProtobufRestoreUsesTheOldTag(t *testing.T) {
	old := parse(t, schema.Protobuf, "syntax = \"proto3\";\npackage acme;\nmessage Usage {\n  string id = 1;\n  int64 response_bytes = 2;\n  Inner inner = 4;\n  message Inner { string x = 1; int32 y = 2; }\n}\n")
	nw := parse(t, schema.Protobuf, "syntax = \"proto3\";\npackage acme;\nmessage Usage {\n  string id = 1;\n  int64 response_kib = 3;\n  Inner inner = 4;\n  message Inner { string x = 1; }\n}\n")
	r, err := fix.Restore(old, nw)
	if err != nil {
		t.Fatal(err)
	}
	got := parse(t, schema.Protobuf, r.Text)
	f, ok := got.Field("response_bytes")
	if !ok || f.Tag != 2 || !f.Nullable {
		t.Fatalf("response_bytes %+v\n%s", f, r.Text)
	}
	if f, ok := got.Field("inner.y"); !ok || f.Tag != 2 {
		t.Fatalf("inner.y %+v\n%s", f, r.Text)
	}
	for _, l := range compat.Levels {
		if res := compat.Check(l, compat.Strict, got, []compat.Version{{Version: 1, Schema: old}, {Version: 2, Schema: nw}}); !res.Compatible {
			t.Errorf("%s: %+v", l, res.Incompatibilities)
		}
	}
	// A tag taken by another field cannot come back.
	taken := parse(t, schema.Protobuf, "syntax = \"proto3\";\npackage acme;\nmessage Usage {\n  string id = 1;\n  string response_bytes = 5;\n  Inner inner = 4;\n  message Inner { string x = 1; int32 y = 2; }\n}\n")
	if _, err := fix.Restore(old, taken); err == nil || !strings.Contains(err.Error(), "uses the name on another tag") {
		t.Fatalf("name on another tag: %v", err)
	}
}

// A shop's proto3 order event: v8 removed discount_micros and reserved its tag and name, inside a
// wider reserved range. The restore lifts only that tag and name and brings the field back as it was.
func TestProtobufRestoreLiftsTheReservationOfTheRemovedField(t *testing.T) {
	old := parse(t, schema.Protobuf, `syntax = "proto3";
package shop.v1;
message Order {
  string order_id = 1;
  int64 total_micros = 2;
  int64 discount_micros = 3;
  string currency = 4;
}
`)
	nw := parse(t, schema.Protobuf, `syntax = "proto3";
package shop.v1;
message Order {
  reserved 3 to 5, 9;
  reserved "discount_micros", "legacy_flag";
  string order_id = 1;
  int64 total_micros = 2;
  string currency_code = 6;
}
`)
	r, err := fix.Restore(old, nw)
	if err != nil {
		t.Fatal(err)
	}
	got := parse(t, schema.Protobuf, r.Text)
	f, ok := got.Field("discount_micros")
	if !ok || f.Tag != 3 || f.Type != "int64" {
		t.Fatalf("discount_micros %+v\n%s", f, r.Text)
	}
	for _, want := range []string{"reserved 5, 9;", `reserved "legacy_flag";`} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("restored text lacks %q:\n%s", want, r.Text)
		}
	}
	var why string
	for _, x := range r.Restored {
		if x.Path == "shop.v1.Order.discount_micros" {
			why = x.Why
		}
	}
	if !strings.Contains(why, "reserved discount_micros (tag 3)") || !strings.Contains(why, "same name, type and tag") {
		t.Errorf("why %q (%+v)", why, r.Restored)
	}
	// currency (tag 4, inside the reserved range) was removed too and nothing uses its tag or name:
	// it comes back on its tag, and the range is split around both.
	if f, ok := got.Field("currency"); !ok || f.Tag != 4 {
		t.Errorf("currency %+v\n%s", f, r.Text)
	}
	for _, l := range []compat.Level{compat.Backward, compat.Forward, compat.Full} {
		if res := compat.Check(l, compat.Strict, got, []compat.Version{{Version: 8, Schema: nw}}); !res.Compatible {
			t.Errorf("%s against v8: %+v", l, res.Incompatibilities)
		}
	}
}

func TestProtobufRestoreDropsAReservationLeftEmpty(t *testing.T) {
	old := parse(t, schema.Protobuf, "syntax = \"proto3\";\npackage lab;\nmessage Sample {\n  string id = 1;\n  double mass_mg = 2;\n}\n")
	nw := parse(t, schema.Protobuf, "syntax = \"proto3\";\npackage lab;\nmessage Sample {\n  reserved 2;\n  string id = 1;\n}\n")
	r, err := fix.Restore(old, nw)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Text, "reserved") || !strings.Contains(r.Text, "optional double mass_mg = 2;") {
		t.Fatalf("text:\n%s", r.Text)
	}
}

func TestNothingToRestore(t *testing.T) {
	v11 := scenario(t, "11")
	if _, err := fix.Restore(v11, v11); !errors.Is(err, fix.ErrNothingRemoved) {
		t.Fatal(err)
	}
}

// testdata/scenario/api-usage-value.v13.avsc is the v13 of the story, as propose_schema_fix writes it.
func TestScenarioV13MatchesTheStoryFile(t *testing.T) {
	r, err := fix.Restore(scenario(t, "11"), scenario(t, "12"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "testdata", "scenario", "api-usage-value.v13.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(r.Text) != strings.TrimSpace(string(want)) {
		t.Fatalf("v13 differs from the story file:\n%s", r.Text)
	}
}

func FuzzProtobufRestoreAcrossReservations(f *testing.F) {
	f.Add(int32(3), "3 to 5, 9", int32(4))
	f.Add(int32(7), "1 to max", int32(2))
	f.Add(int32(2), "2", int32(2))
	f.Fuzz(func(t *testing.T, tag int32, ranges string, other int32) {
		if tag < 1 || tag > 10000 || other < 1 || other > 10000 || tag == other || strings.ContainsAny(ranges, ";{}\"/\n") {
			return
		}
		old, err := schema.Parse(schema.Protobuf, fmt.Sprintf("syntax = \"proto3\";\npackage z;\nmessage M {\n  int64 gone = %d;\n  string kept = %d;\n}\n", tag, other))
		if err != nil {
			return
		}
		nw, err := schema.Parse(schema.Protobuf, fmt.Sprintf("syntax = \"proto3\";\npackage z;\nmessage M {\n  reserved %s;\n  string kept = %d;\n}\n", ranges, other))
		if err != nil {
			return
		}
		r, err := fix.Restore(old, nw)
		if err != nil {
			return
		}
		got, err := schema.Parse(schema.Protobuf, r.Text)
		if err != nil {
			t.Fatalf("restored text does not compile: %v\n%s", err, r.Text)
		}
		if f, ok := got.Field("gone"); !ok || f.Tag != int(tag) {
			t.Fatalf("gone not on tag %d:\n%s", tag, r.Text)
		}
	})
}
