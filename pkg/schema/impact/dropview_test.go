package impact

import (
	"testing"

	"github.com/dataworkers/dw/pkg/graph"
)

// What readers see of a dropped field is settled by the subject's format and the field's presence
// as the graph records them, and left to the NULL default where the graph cannot settle it.
func TestDropViewFollowsTheSubjectsFormat(t *testing.T) {
	subject := func(format string) graph.Asset {
		return graph.Asset{Kind: graph.KindSchemaSubject, Attrs: map[string]string{"schema_type": format}}
	}
	for _, tc := range []struct {
		name   string
		format string
		fields []graph.Field
		ok     bool
		want   Symptom
	}{
		{"proto3 scalar", "PROTOBUF", []graph.Field{{Path: "qty", Type: "int32"}}, true, SymptomZeros},
		{"proto3 optional", "PROTOBUF", []graph.Field{{Path: "qty", Type: "int32", Nullable: true}}, true, SymptomNulls},
		{"proto wrapper", "PROTOBUF", []graph.Field{{Path: "qty", Type: "message google.protobuf.Int32Value", Nullable: true}}, true, SymptomNulls},
		{"json property", "JSON", []graph.Field{{Path: "qty", Type: "integer"}}, true, SymptomNulls},
		{"avro: the reader's default is not in the graph", "AVRO", []graph.Field{{Path: "qty", Type: "long", Nullable: true}}, false, ""},
		{"fields that disagree", "PROTOBUF", []graph.Field{{Path: "a", Type: "int32"}, {Path: "b", Type: "string", Nullable: true}}, false, ""},
		{"no format recorded", "", []graph.Field{{Path: "qty", Type: "int32"}}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := DropView(subject(tc.format), tc.fields)
			if ok != tc.ok || (ok && v.Symptom != tc.want) {
				t.Fatalf("DropView = %+v, %v; want %v, %v", v, ok, tc.want, tc.ok)
			}
		})
	}
}
