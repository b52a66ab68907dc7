package compat_test

import (
	"slices"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// compatibilityGroup filters the versions before the level picks the latest or every one: only
// versions whose metadata property equals the proposed schema's value are compared.
func TestCompatibilityGroupFiltersVersionsBeforeTheLevel(t *testing.T) {
	const major = "application.major.version"
	v1 := mustParse(t, schema.Avro, avroRec(fA))                                 // major 1
	v2 := mustParse(t, schema.Avro, avroRec(fA+","+fBd))                         // major 1
	v3 := mustParse(t, schema.Avro, avroRec(`{"name":"a","type":"int"}`))        // major 2: breaking, new group
	v4 := mustParse(t, schema.Avro, avroRec(`{"name":"x","type":"string"}`))     // no metadata
	proposed := mustParse(t, schema.Avro, avroRec(`{"name":"a","type":"long"}`)) // int→long: fine after v3 only
	prev := []compat.Version{
		{Version: 1, Schema: v1, Metadata: map[string]string{major: "1"}},
		{Version: 2, Schema: v2, Metadata: map[string]string{major: "1"}},
		{Version: 3, Schema: v3, Metadata: map[string]string{major: "2"}},
		{Version: 4, Schema: v4},
	}
	cases := []struct {
		name       string
		level      compat.Level
		value      map[string]string
		compatible bool
		compared   []int
		kept       []int
		excluded   []int
	}{
		{"group 2, transitive", compat.BackwardTransitive, map[string]string{major: "2"}, true, []int{3}, []int{3}, []int{1, 2, 4}},
		{"group 2, plain level compares the group's latest", compat.Backward, map[string]string{major: "2"}, true, []int{3}, []int{3}, []int{1, 2, 4}},
		{"group 1, transitive stops at the first failure", compat.BackwardTransitive, map[string]string{major: "1"}, false, []int{2}, []int{1, 2}, []int{3, 4}},
		{"a group with no versions yet", compat.BackwardTransitive, map[string]string{major: "3"}, true, []int{}, []int{}, []int{1, 2, 3, 4}},
		// No value in the proposed schema: the reference is silent; nothing is filtered (stricter).
		{"no value: every version", compat.Backward, nil, false, []int{4}, []int{1, 2, 3, 4}, []int{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := compat.Evaluate(compat.Request{Level: c.level, Policy: compat.Strict, Group: major, Proposed: proposed, ProposedMetadata: c.value, Previous: prev})
			if res.Compatible != c.compatible || !slices.Equal(res.Compared, c.compared) || res.Group == nil ||
				!slices.Equal(res.Group.Kept, c.kept) || !slices.Equal(res.Group.Excluded, c.excluded) || res.Group.Property != major {
				t.Fatalf("%+v group=%+v", res, res.Group)
			}
			if _, set := c.value[major]; res.Group.ValueSet != set || res.Group.Note == "" {
				t.Fatalf("group=%+v", res.Group)
			}
		})
	}
	// Without a group the result carries no filter.
	if res := compat.Check(compat.Backward, compat.Strict, proposed, prev); res.Group != nil {
		t.Fatalf("%+v", res.Group)
	}
}
