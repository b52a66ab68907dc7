package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/mcpkit"
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
// in the proposed schema's group, lists the ones left out, and sends the registry the same
// metadata (srtest answers from our own checker, so its "agree" proves the plumbing, not the rule).
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

// JSON Schema converts to a logical row too: under LOGICAL an integer widened to number is an
// unsupported type change for Flink and Iceberg v2, though the native check calls it TYPE_EXTENDED.
func TestCheckCompatibilityAppliesLogicalToJSONSchema(t *testing.T) {
	_, _, tl := story(t)
	js := `{"type":"object","properties":{"id":{"type":"string"},"n":{"type":"integer"}},"additionalProperties":false}`
	widened := strings.Replace(js, `"n":{"type":"integer"}`, `"n":{"type":"number"}`, 1)
	var cc checkCompatibilityResult
	call(t, tl["check_compatibility"], map[string]any{"schema": widened, "schema_type": "JSON", "policy": "LOGICAL",
		"earlier_versions": []any{map[string]any{"schema": js}}}, &cc)
	if cc.Compatible || len(cc.NotReproduced) != 0 || cc.Incompatibilities[0].Type != "UNSUPPORTED_TYPE_CHANGE" {
		t.Fatalf("%+v", cc)
	}
	call(t, tl["check_compatibility"], map[string]any{"schema": widened, "schema_type": "JSON",
		"earlier_versions": []any{map[string]any{"schema": js}}}, &cc)
	if !cc.Compatible {
		t.Fatalf("natively: %+v", cc)
	}
	if msg := mcpkittest.Call(t, tl["check_compatibility"], map[string]any{"schema": js, "schema_type": "JSON",
		"earlier_versions": []any{map[string]any{"schema": js}}, "earlier_metadata": []any{map[string]any{"version": 1, "properties": map[string]string{"a": "b"}}}}, nil); !strings.Contains(msg, "compatibility_group") {
		t.Fatalf("earlier_metadata without a group: %q", msg)
	}
}

// `call check_compatibility` exits 100 (a failing verdict) on an incompatible verdict (failed: true)
// and 0 on a compatible one, so a script can gate on it; the result names the rule set.
func TestCallCheckCompatibilityExitsBlockedWhenIncompatible(t *testing.T) {
	home := t.TempDir()
	cfg := writeConfig(t, home, "")
	v11File, v12File := copyUnder(t, home, v11File), copyUnder(t, home, v12File)
	earlier := []any{map[string]any{"version": 11, "file": v11File}}
	code, res, stderr := runCall(t, cfg, "check_compatibility", map[string]any{"schema_file": v12File, "earlier_versions": earlier})
	if code != mcpkit.ExitOK || res["failed"] != false {
		t.Fatalf("compatible: exit %d, %v, %s", code, res, stderr)
	}
	if rs, _ := res["rule_set"].(map[string]any); rs["format"] != "AVRO" || rs["level"] != "BACKWARD" || rs["policy"] != "STRICT" {
		t.Fatalf("rule set %v", res["rule_set"])
	}
	bad := strings.Replace(readFile(t, v12File), `"name": "status_code", "type": "int"`, `"name": "status_code", "type": "string"`, 1)
	code, res, stderr = runCall(t, cfg, "check_compatibility", map[string]any{"schema": bad, "earlier_versions": earlier})
	if code != mcpkit.ExitBlocked || res["failed"] != true || res["compatible"] != false {
		t.Fatalf("incompatible: exit %d, %v, %s", code, res, stderr)
	}
}

// Re-running the checks after the rollout must not compare the registered version with itself:
// v12 is already version 12, so it is judged against v11 as at its registration, and a gate that
// blocked it before keeps blocking it.
func TestAlreadyRegisteredSchemaIsNotJudgedAgainstItself(t *testing.T) {
	env := mcpkittest.Env(t, "dw-schema")
	earlier := []any{map[string]any{"version": 11, "file": v11File}, map[string]any{"version": 12, "file": v12File}}
	var cc checkCompatibilityResult
	// LOGICAL rejects v12's deleted field for Iceberg v2; against itself it would pass.
	call(t, toolNamed(t, env, "check_compatibility"), map[string]any{"schema_file": v12File, "policy": "LOGICAL", "earlier_versions": earlier}, &cc)
	if cc.Compatible || !cc.Failed || cc.AlreadyRegistered != 12 || !slices.Equal(cc.ComparedVersions, []int{11}) ||
		!strings.Contains(cc.Note, "already registered as version 12") {
		t.Fatalf("check_compatibility = %+v", cc)
	}
	var g checkSchemaChangeResult
	call(t, toolNamed(t, env, "check_schema_change"), map[string]any{"subject": "api-usage-value", "schema_file": v12File, "policy": "LOGICAL",
		"earlier_versions": earlier, "allow_unknown_lineage": true}, &g)
	if !g.Failed || g.Compatible || !strings.Contains(strings.Join(g.Reasons, " | "), "already registered as version 12") || g.Impact.OldVersion != 11 {
		t.Fatalf("check_schema_change = %+v", g)
	}
	var a assessImpactResult
	call(t, toolNamed(t, env, "assess_impact"), map[string]any{"subject": "api-usage-value", "schema_file": v12File, "earlier_versions": earlier}, &a)
	if a.AlreadyRegistered != 12 || a.OldVersion != 11 || len(a.Changes) == 0 {
		t.Fatalf("assess_impact = %+v", a)
	}
}

// An inline schema that is plainly JSON Schema or Protobuf, given without schema_type, is refused
// with a message that says to set it, not parsed as Avro.
func TestInlineSchemaInAnotherFormatAsksForSchemaType(t *testing.T) {
	env := mcpkittest.Env(t, "dw-schema")
	tl := toolNamed(t, env, "check_compatibility")
	for text, want := range map[string]string{
		`{"type":"object","properties":{"a":{"type":"string"}}}`: "set schema_type to JSON",
		"syntax = \"proto3\";\nmessage M { string a = 1; }":      "set schema_type to PROTOBUF",
	} {
		msg := mcpkittest.Call(t, tl, map[string]any{"schema": text, "earlier_versions": []any{map[string]any{"schema": text, "version": 1}}}, nil)
		if !strings.Contains(msg, want) || strings.Contains(msg, "invalid Avro") {
			t.Errorf("%q: %s", text, msg)
		}
	}
	// Given the type, the same text is judged.
	var cc checkCompatibilityResult
	text := `{"type":"object","properties":{"a":{"type":"string"}}}`
	call(t, tl, map[string]any{"schema": text, "schema_type": "JSON", "earlier_versions": []any{map[string]any{"schema": text}}}, &cc)
	if cc.RuleSet.Format != "JSON" || cc.RuleSet.Draft != "draft-07" {
		t.Fatalf("%+v", cc)
	}
}

// Under validateFields the names a data contract reserves (metadata property confluent:reserved)
// stay reserved and no field may take one, whatever the level: the registry's reserved-field rule.
func TestValidateFieldsEnforcesReservedNames(t *testing.T) {
	env := mcpkittest.Env(t, "dw-schema")
	tl := toolNamed(t, env, "check_compatibility")
	v1 := `{"type":"object","properties":{"id":{"type":"string"}},"additionalProperties":false}`
	v2 := `{"type":"object","properties":{"id":{"type":"string"},"email":{"type":"string"}},"additionalProperties":false}`
	earlier := []any{map[string]any{"version": 1, "schema": v1}}
	reserved := []any{map[string]any{"version": 1, "properties": map[string]string{compat.ReservedProperty: "email,phone"}}}
	var cc checkCompatibilityResult
	// A field takes a reserved name: RESERVED_PROPERTY_CONFLICTS_WITH_PROPERTY, even under NONE.
	call(t, tl, map[string]any{"schema": v2, "schema_type": "JSON", "level": "NONE", "earlier_versions": earlier, "validate_fields": true,
		"earlier_metadata": reserved, "metadata": map[string]string{compat.ReservedProperty: "email,phone"}}, &cc)
	if cc.Compatible || cc.Incompatibilities[0].Type != "RESERVED_PROPERTY_CONFLICTS_WITH_PROPERTY" || cc.Incompatibilities[0].Path != "#/properties/email" || !cc.RuleSet.ValidateFields {
		t.Fatalf("conflict: %+v", cc)
	}
	// A reserved name dropped from the metadata: RESERVED_PROPERTY_REMOVED.
	call(t, tl, map[string]any{"schema": v1, "schema_type": "JSON", "earlier_versions": []any{map[string]any{"version": 1, "schema": v2}}, "validate_fields": true,
		"earlier_metadata": reserved, "metadata": map[string]string{compat.ReservedProperty: "email"}}, &cc)
	if cc.Compatible || cc.Incompatibilities[0].Type != "RESERVED_PROPERTY_REMOVED" || cc.Incompatibilities[0].Field != "phone" {
		t.Fatalf("removed: %+v", cc)
	}
	// Without validateFields the registry does not enforce them.
	call(t, tl, map[string]any{"schema": v2, "schema_type": "JSON", "earlier_versions": earlier,
		"metadata": map[string]string{compat.ReservedProperty: "email"}}, &cc)
	if !cc.Compatible {
		t.Fatalf("without validate_fields: %+v", cc)
	}
}
