package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

const (
	moneyV1 = "syntax = \"proto3\";\npackage acme.common;\nmessage Money { int64 units = 1; string currency = 2; }\n"
	// moneyV2 retypes units across scalar groups: a change the referencing schema inherits.
	moneyV2    = "syntax = \"proto3\";\npackage acme.common;\nmessage Money { string units = 1; string currency = 2; }\n"
	paymentSrc = "syntax = \"proto3\";\npackage acme;\nimport \"acme/money.proto\";\nmessage Payment { string id = 1; acme.common.Money amount = 2; }\n"
)

// Offline, the proposed schema and every earlier version carry their own references (inline or
// as a file), and a referenced type's change is judged as the registry judges it.
func TestReferencesGivenOfflineAreResolvedPerVersion(t *testing.T) {
	env := mcpkittest.Env(t, "dw-schema")
	dir := t.TempDir()
	moneyFile := filepath.Join(dir, "money.proto")
	if err := os.WriteFile(moneyFile, []byte(moneyV1), 0o600); err != nil {
		t.Fatal(err)
	}
	earlier := []any{map[string]any{"version": 1, "schema": paymentSrc, "references": []any{
		map[string]any{"name": "acme/money.proto", "subject": "money", "version": 1, "file": moneyFile}}}}
	var cc checkCompatibilityResult
	call(t, toolNamed(t, env, "check_compatibility"), map[string]any{"schema": paymentSrc, "schema_type": "PROTOBUF", "earlier_versions": earlier,
		"references": []any{map[string]any{"name": "acme/money.proto", "subject": "money", "version": 2, "schema": moneyV2}}}, &cc)
	if cc.Compatible || !hasIncompatibility(cc, "FIELD_NAMED_TYPE_CHANGED") || !hasIncompatibility(cc, "FIELD_SCALAR_KIND_CHANGED") {
		t.Fatalf("%+v", cc)
	}
	// The same reference text on both sides: the proposed schema is already version 1.
	call(t, toolNamed(t, env, "check_compatibility"), map[string]any{"schema": paymentSrc, "schema_type": "PROTOBUF", "earlier_versions": earlier,
		"references": []any{map[string]any{"name": "acme/money.proto", "file": moneyFile}}}, &cc)
	if !cc.Compatible || cc.AlreadyRegistered != 1 {
		t.Fatalf("%+v", cc)
	}
	// diff_schema_versions takes references for both schemas.
	var df diffResult
	call(t, toolNamed(t, env, "diff_schema_versions"), map[string]any{"schema": paymentSrc, "old_schema": paymentSrc, "schema_type": "PROTOBUF",
		"references":     []any{map[string]any{"name": "acme/money.proto", "schema": moneyV2}},
		"old_references": []any{map[string]any{"name": "acme/money.proto", "schema": moneyV1}}}, &df)
	if !strings.Contains(fmtChanges(df), "amount.units") {
		t.Fatalf("diff %+v", df.Changes)
	}
	// A reference with neither text nor subject is refused with what to give.
	msg := mcpkittest.Call(t, toolNamed(t, env, "check_compatibility"), map[string]any{"schema": paymentSrc, "schema_type": "PROTOBUF", "earlier_versions": earlier,
		"references": []any{map[string]any{"name": "acme/money.proto"}}}, nil)
	if !strings.Contains(msg, "subject") || !strings.Contains(msg, "inline or as a file") {
		t.Fatalf("textless reference: %s", msg)
	}
}

// Live, a reference naming only its subject and version is read from the registry, for the
// proposed schema as for the registered versions.
func TestReferencesNamingASubjectAreReadFromTheRegistry(t *testing.T) {
	_, srv, tl := story(t)
	srv.Registry.SeedSchema("money", 1, 501, sr.Schema{Schema: moneyV1, Type: sr.TypeProtobuf})
	srv.Registry.SeedSchema("money", 2, 502, sr.Schema{Schema: moneyV2, Type: sr.TypeProtobuf})
	srv.Registry.SeedSchema("payments-value", 1, 601, sr.Schema{Schema: paymentSrc, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "acme/money.proto", Subject: "money", Version: 1}}})
	var cc checkCompatibilityResult
	call(t, tl["check_compatibility"], map[string]any{"subject": "payments-value", "schema": paymentSrc,
		"references": []any{map[string]any{"name": "acme/money.proto", "subject": "money", "version": 2}}}, &cc)
	if cc.Compatible || !hasIncompatibility(cc, "FIELD_NAMED_TYPE_CHANGED") || cc.RuleSet.Format != "PROTOBUF" {
		t.Fatalf("%+v", cc)
	}
}

func hasIncompatibility(cc checkCompatibilityResult, typ string) bool {
	for _, in := range cc.Incompatibilities {
		if in.Type == typ {
			return true
		}
	}
	return false
}

func fmtChanges(d diffResult) string {
	var b strings.Builder
	for _, c := range d.Changes {
		b.WriteString(c.Path + " ")
	}
	return b.String()
}
