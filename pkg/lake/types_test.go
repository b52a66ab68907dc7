package lake

import (
	"encoding/json"
	"testing"
)

// Types as table metadata writes them, and as the tools report them.
func TestSchemaTypes(t *testing.T) {
	var s Schema
	err := json.Unmarshal([]byte(`{"type":"struct","schema-id":3,"fields":[
		{"id":1,"name":"amount","required":true,"type":"decimal(9, 2)"},
		{"id":2,"name":"key","required":false,"type":"fixed[16]"},
		{"id":3,"name":"tags","required":false,"type":{"type":"list","element-id":6,"element":"string","element-required":true}},
		{"id":4,"name":"attrs","required":false,"type":{"type":"map","key-id":7,"key":"string","value-id":8,"value":"long","value-required":false}},
		{"id":5,"name":"address","required":false,"doc":"where","type":{"type":"struct","fields":[{"id":9,"name":"city","required":true,"type":"string"}]}},
		{"id":10,"name":"shape","required":false,"type":"geometry(srid:4326)"}]}`), &s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"decimal(9, 2)", "fixed[16]", "list<string>", "map<string, long>", "struct<9: city: required string>", "geometry(srid:4326)"}
	for i, f := range s.Fields() {
		if got := f.Type.String(); got != want[i] {
			t.Errorf("field %s: %q, want %q", f.Name, got, want[i])
		}
	}
	if f := s.Fields()[0]; f.Type.Precision != 9 || f.Type.Scale != 2 || !isNumeric(f.Type) || f.Type.Nested() {
		t.Errorf("amount = %+v", f)
	}
	if !s.Fields()[2].Type.Nested() || s.Fields()[2].Type.Element.ID != 6 || s.Fields()[3].Type.Value.ID != 8 {
		t.Errorf("nested ids: %+v %+v", s.Fields()[2].Type, s.Fields()[3].Type)
	}
	if f, ok := s.FindFieldByName("address.city"); !ok || f.ID != 9 {
		t.Errorf("address.city = %+v, %v", f, ok)
	}
	if _, ok := s.FindFieldByName("tags.element"); ok {
		t.Error("a list's element found by a struct path")
	}
	if got := s.Fields()[4].String(); got != "5: address: optional struct<9: city: required string> (where)" {
		t.Errorf("field string = %q", got)
	}
	for _, bad := range []string{`"decimal(39,2)"`, `"decimal(9)"`, `"fixed[x]"`, `""`, `{"type":"list","element":"int"}`, `{"type":"union"}`} {
		var typ Type
		if err := json.Unmarshal([]byte(bad), &typ); err == nil {
			t.Errorf("%s parsed as %+v", bad, typ)
		}
	}
}
