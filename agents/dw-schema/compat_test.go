package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

func orderRec(fields string) string {
	return `{"type":"record","name":"Order","namespace":"acme","fields":[` + fields + `]}`
}

const majorProp = "application.major.version"

// check_compatibility against a live subject with a compatibilityGroup compares only the versions
// in the proposed schema's group, lists the ones left out, and agrees with the registry (srtest
// over HTTP) when both get the same metadata.
func TestCheckCompatibilityComparesOnlyTheProposedSchemasGroup(t *testing.T) {
	env, _, tl := story(t)
	ctx := context.Background()
	c, err := registry.New(env.Config.SchemaRegistry)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetSubjectConfig(ctx, "orders-value", compat.BackwardTransitive, majorProp, ""); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ text, major string }{
		{orderRec(`{"name":"id","type":"string"}`), "1"},
		{orderRec(`{"name":"id","type":"string"},{"name":"note","type":["null","string"],"default":null}`), "1"},
		{orderRec(`{"name":"id","type":"long"}`), "2"}, // a breaking change starts major version 2
	} {
		if _, err := c.RegisterWithMetadata(ctx, "orders-value", schema.Avro, v.text, nil, map[string]string{majorProp: v.major}); err != nil {
			t.Fatal(err)
		}
	}
	proposed := orderRec(`{"name":"id","type":"long"},{"name":"qty","type":["null","int"],"default":null}`)

	var cc checkCompatibilityResult
	call(t, tl["check_compatibility"], map[string]any{"subject": "orders-value", "schema": proposed, "metadata": map[string]string{majorProp: "2"}}, &cc)
	g := cc.CompatibilityGroup
	if !cc.Compatible || !slices.Equal(cc.ComparedVersions, []int{3}) || g == nil || g.Property != majorProp || g.Value != "2" ||
		!slices.Equal(g.Kept, []int{3}) || !slices.Equal(g.Excluded, []int{1, 2}) || len(cc.NotReproduced) != 0 || cc.Registry.Agreement != "agree" {
		t.Fatalf("group 2: %+v group=%+v", cc, g)
	}
	// In group 1 the same schema breaks id's type against version 2 (newest first).
	call(t, tl["check_compatibility"], map[string]any{"subject": "orders-value", "schema": proposed, "metadata": map[string]string{majorProp: "1"}}, &cc)
	if cc.Compatible || !slices.Equal(cc.ComparedVersions, []int{2}) || !slices.Equal(cc.CompatibilityGroup.Excluded, []int{3}) ||
		cc.Incompatibilities[0].Type != "TYPE_MISMATCH" || cc.Registry.Agreement != "agree" {
		t.Fatalf("group 1: %+v", cc)
	}
	// Without metadata the group cannot apply: every version is compared, and the verdict says so.
	call(t, tl["check_compatibility"], map[string]any{"subject": "orders-value", "schema": proposed}, &cc)
	if cc.Compatible || cc.CompatibilityGroup.ValueSet || len(cc.NotReproduced) != 1 || !strings.Contains(cc.NotReproduced[0], "not applied") {
		t.Fatalf("no metadata: %+v", cc)
	}
	// A live subject's group comes from its config, not the call.
	if msg := mcpkittest.Call(t, tl["check_compatibility"], map[string]any{"subject": "orders-value", "schema": proposed, "compatibility_group": "x"}, nil); !strings.Contains(msg, "offline") {
		t.Fatalf("group given for a live subject: %q", msg)
	}
}

// Offline (CI without a registry), the group and the earlier versions' metadata come from the
// call, and LOGICAL is checked as the registry would.
func TestCheckCompatibilityOfflineWithGroupAndLogical(t *testing.T) {
	_, _, tl := story(t)
	args := map[string]any{
		"schema": readFile(t, v12File), "level": "BACKWARD_TRANSITIVE", "policy": "LOGICAL",
		"earlier_versions":    []any{map[string]any{"version": 10, "schema": orderRec(`{"name":"id","type":"string"}`)}, map[string]any{"version": 11, "file": v11File}},
		"compatibility_group": majorProp,
		"earlier_metadata":    []any{map[string]any{"version": 10, "properties": map[string]string{majorProp: "1"}}, map[string]any{"version": 11, "properties": map[string]string{majorProp: "2"}}},
		"metadata":            map[string]string{majorProp: "2"},
	}
	var cc checkCompatibilityResult
	call(t, tl["check_compatibility"], args, &cc)
	if cc.Compatible || cc.Mode != "offline" || cc.Policy != "LOGICAL" || !slices.Equal(cc.ComparedVersions, []int{11}) ||
		!slices.Equal(cc.CompatibilityGroup.Excluded, []int{10}) || len(cc.Incompatibilities) != 1 ||
		cc.Incompatibilities[0].Type != "FIELD_DELETED" || cc.Incompatibilities[0].LogicalMode != compat.IcebergV2 {
		t.Fatalf("%+v", cc)
	}
}

// The CI gate takes the proposed schema's metadata too: v12 declared as a new major version is
// compared with no earlier version, so the registry would accept it — and the gate still blocks it
// for the statement pinned to v11 that sums the removed field.
func TestCheckSchemaChangeAppliesTheCompatibilityGroup(t *testing.T) {
	_, _, tl := story(t)
	var g checkSchemaChangeResult
	call(t, tl["check_schema_change"], map[string]any{"subject": "api-usage-value", "schema_file": v12File,
		"earlier_versions":    []any{map[string]any{"version": 11, "file": v11File}},
		"compatibility_group": majorProp,
		"earlier_metadata":    []any{map[string]any{"version": 11, "properties": map[string]string{majorProp: "1"}}},
		"metadata":            map[string]string{majorProp: "2"},
	}, &g)
	if !g.Compatible || len(g.ComparedVersions) != 0 || g.CompatibilityGroup == nil || !slices.Equal(g.CompatibilityGroup.Excluded, []int{11}) {
		t.Fatalf("compared=%v group=%+v compatible=%v", g.ComparedVersions, g.CompatibilityGroup, g.Compatible)
	}
	if !g.Failed || len(g.Blocking) == 0 {
		t.Fatalf("the gate let v12 through: %+v", g.Decision)
	}
}

// JSON Schema's logical conversion is not in the reference: under LOGICAL the native verdict
// stands and the result says the logical part was not reproduced.
func TestCheckCompatibilityNamesLogicalNotReproducedForJSONSchema(t *testing.T) {
	_, _, tl := story(t)
	js := `{"type":"object","properties":{"id":{"type":"string"}}}`
	var cc checkCompatibilityResult
	call(t, tl["check_compatibility"], map[string]any{"schema": js, "schema_type": "JSON", "policy": "LOGICAL",
		"earlier_versions": []any{map[string]any{"schema": js}}}, &cc)
	if !cc.Compatible || len(cc.NotReproduced) != 1 || !strings.Contains(cc.NotReproduced[0], "LOGICAL") {
		t.Fatalf("%+v", cc)
	}
	if msg := mcpkittest.Call(t, tl["check_compatibility"], map[string]any{"schema": js, "schema_type": "JSON",
		"earlier_versions": []any{map[string]any{"schema": js}}, "earlier_metadata": []any{map[string]any{"version": 1, "properties": map[string]string{"a": "b"}}}}, nil); !strings.Contains(msg, "compatibility_group") {
		t.Fatalf("earlier_metadata without a group: %q", msg)
	}
}
