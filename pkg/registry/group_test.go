package registry_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/registry/srtest"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

func rec(fields string) string {
	return `{"type":"record","name":"Order","namespace":"acme","fields":[` + fields + `]}`
}

const major = "application.major.version"

// compatibilityGroup over HTTP: versions carry metadata.properties, the subject's config names the
// property, and registration is judged only against the versions in the new schema's group, as
// AbstractSchemaRegistry does — a breaking "major version 2" starts a new group, and a breaking
// change inside a group is still refused with 409/40901.
func TestRegisterComparesOnlyTheNewSchemasCompatibilityGroup(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, srtest.Options{})
	if err := c.SetSubjectConfig(ctx, "orders-value", compat.BackwardTransitive, major, ""); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.SubjectConfig(ctx, "orders-value")
	if err != nil || cfg.Group != major || cfg.Level != compat.BackwardTransitive || !cfg.Explicit {
		t.Fatalf("config = %+v, %v", cfg, err)
	}
	v1 := rec(`{"name":"id","type":"string"}`)
	v2 := rec(`{"name":"id","type":"string"},{"name":"note","type":["null","string"],"default":null}`)
	v3 := rec(`{"name":"id","type":"long"}`) // breaking: id string → long
	for _, s := range []struct {
		text, group string
	}{{v1, "1"}, {v2, "1"}, {v3, "2"}} {
		if _, err := c.RegisterWithMetadata(ctx, "orders-value", schema.Avro, s.text, nil, map[string]string{major: s.group}); err != nil {
			t.Fatalf("register in group %s: %v", s.group, err)
		}
	}
	// The same breaking change inside group 1 is refused.
	if _, err := c.RegisterWithMetadata(ctx, "orders-value", schema.Avro, rec(`{"name":"id","type":"long"},{"name":"x","type":["null","int"],"default":null}`), nil,
		map[string]string{major: "1"}); !registry.IsCode(err, 40901) {
		t.Fatalf("breaking change in group 1: %v", err)
	}
	// The versions come back with their metadata.
	hist, err := c.History(ctx, "orders-value")
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, v := range hist {
		groups = append(groups, v.Properties()[major])
	}
	if !slices.Equal(groups, []string{"1", "1", "2"}) {
		t.Fatalf("metadata = %v", groups)
	}
	// The compatibility endpoint follows the group too; without metadata every version is compared.
	v4 := rec(`{"name":"id","type":"long"},{"name":"y","type":["null","int"],"default":null}`)
	if v, err := c.CheckCompatibilityWithMetadata(ctx, "orders-value", schema.Avro, v4, nil, map[string]string{major: "2"}); err != nil || !v.Compatible {
		t.Fatalf("v4 in group 2: %+v, %v", v, err)
	}
	v, err := c.CheckCompatibility(ctx, "orders-value", schema.Avro, v4, nil)
	if err != nil || v.Compatible || !strings.Contains(strings.Join(v.Messages, " "), "TYPE_MISMATCH") {
		t.Fatalf("v4 without metadata: %+v, %v", v, err)
	}
}

// LOGICAL set through PUT /config is applied on registration: v12 passes BACKWARD natively but
// deletes response_bytes, which the Iceberg v2 mode rejects.
func TestRegisterUnderLogicalPolicyRejectsV12(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, srtest.Options{})
	if _, err := c.Register(ctx, "api-usage-value", schema.Avro, scenario(t, 11), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.SetSubjectConfig(ctx, "api-usage-value", compat.Backward, "", compat.Logical); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.SubjectConfig(ctx, "api-usage-value")
	if err != nil || cfg.Policy != compat.Logical || len(cfg.NotReproduced) != 0 {
		t.Fatalf("config = %+v, %v", cfg, err)
	}
	_, err = c.Register(ctx, "api-usage-value", schema.Avro, scenario(t, 12), nil)
	if !registry.IsCode(err, 40901) || !strings.Contains(err.Error(), "FIELD_DELETED") || !strings.Contains(err.Error(), "response_bytes") {
		t.Fatalf("v12 under LOGICAL: %v", err)
	}
	// A bad policy is refused as the registry refuses a bad level.
	if err := c.SetSubjectConfig(ctx, "api-usage-value", compat.Backward, "", "SEMANTIC"); !registry.IsCode(err, 42203) {
		t.Fatalf("bad policy: %v", err)
	}
}
