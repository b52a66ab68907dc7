package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/schema"
)

func toolNamed(t *testing.T, env *mcpkit.Env, name string) mcpkit.Tool {
	t.Helper()
	for _, x := range tools(env) {
		if x.Name == name {
			return x
		}
	}
	t.Fatalf("no tool %s", name)
	return mcpkit.Tool{}
}

// A producer's CI without the context graph must not pass a change it cannot assess, unless it
// opts out explicitly; the reason says how to provide the graph.
func TestGateBlocksOnUnknownLineageUnlessAllowed(t *testing.T) {
	env := mcpkittest.Env(t, "dw-schema") // empty store: the graph knows nothing
	tl := toolNamed(t, env, "check_schema_change")
	args := map[string]any{"subject": "api-usage-value", "schema_file": v12File,
		"earlier_versions": []any{map[string]any{"version": 11, "file": v11File}}}
	var g checkSchemaChangeResult
	call(t, tl, args, &g)
	reasons := strings.Join(g.Reasons, " | ")
	if !g.Failed || g.Impact.LineageKnown || !strings.Contains(reasons, "allow_unknown_lineage=true") || !strings.Contains(reasons, "sync_catalog") {
		t.Fatalf("unknown lineage: failed=%v reasons=%s", g.Failed, reasons)
	}
	args["allow_unknown_lineage"] = true
	g = checkSchemaChangeResult{}
	call(t, tl, args, &g)
	if g.Failed || !strings.Contains(strings.Join(g.Reasons, " | "), "not blocking") {
		t.Fatalf("allow_unknown_lineage: failed=%v reasons=%v", g.Failed, g.Reasons)
	}
}

// The first version of a subject passes, but does not claim the lineage was looked at.
func TestFirstVersionDoesNotClaimKnownLineage(t *testing.T) {
	_, _, tl := story(t)
	var g checkSchemaChangeResult
	call(t, tl["check_schema_change"], map[string]any{"subject": "orders-value", "schema_file": v11File}, &g)
	if g.Failed || g.Impact.LineageKnown || len(g.Impact.Notes) == 0 {
		t.Fatalf("first version: %+v", g)
	}
}

// When the registry was consulted and refuses a change our checker accepts, the gate fails and
// says the registry disagrees.
func TestGateFailsWhenTheRegistryDisagreesAndRefuses(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	reg.SeedSchema("api-usage-value", 11, 111, sr.Schema{Schema: readFile(t, v11File)})
	// Shaped like the registry's verbose answer to POST /compatibility/subjects/{s}/versions.
	env := proxiedStory(t, reg, func(r *http.Request) string {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/compatibility/") {
			return `{"is_compatible":false,"messages":["{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'test refusal'}"]}`
		}
		return ""
	})
	var g checkSchemaChangeResult
	call(t, toolNamed(t, env, "check_schema_change"), map[string]any{"subject": "api-usage-value", "schema_file": v12File}, &g)
	if !g.Compatible || !g.Registry.Consulted || !strings.HasPrefix(g.Registry.Agreement, "DISAGREE") {
		t.Fatalf("setup: %+v", g)
	}
	if !g.Failed || g.Verdict != "incompatible" || !strings.Contains(strings.Join(g.Reasons, " | "), "registry disagrees") {
		t.Fatalf("gate: failed=%v verdict=%q reasons=%v", g.Failed, g.Verdict, g.Reasons)
	}
}

// proxiedStory points the agent at reg through a loopback proxy whose answer replaces the
// registry's wherever override returns a body, and seeds the story's graph.
func proxiedStory(t *testing.T, reg *srfake.Registry, override func(r *http.Request) string) *mcpkit.Env {
	t.Helper()
	target, err := url.Parse(reg.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body := override(r); body != "" {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			_, _ = w.Write([]byte(body))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	env := mcpkittest.Env(t, "dw-schema")
	env.Config.SchemaRegistry = &config.SchemaRegistry{URL: srv.URL, Timeout: 5 * time.Second}
	env.Now = func() time.Time { return storyNow }
	st, err := env.Store.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seedStory(t, st, env.Now)
	return env
}

// A LOGICAL policy is applied in both verdicts; a compatibilityGroup the proposed schema gives no
// value for is not applied, and both verdicts say so.
func TestVerdictsApplyLogicalAndNameAnUnappliedGroup(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	reg.SeedSchema("api-usage-value", 11, 111, sr.Schema{Schema: readFile(t, v11File)})
	env := proxiedStory(t, reg, func(r *http.Request) string {
		if r.Method == http.MethodGet && r.URL.Path == "/config/api-usage-value" {
			return `{"compatibilityLevel":"BACKWARD","compatibilityPolicy":"LOGICAL","compatibilityGroup":"application.major.version"}`
		}
		return ""
	})
	var cc checkCompatibilityResult
	// An optional field added at the end: compatible natively and under both logical modes.
	added := strings.Replace(readFile(t, v11File), `"default": null}
  ]`, `"default": null},
    {"name": "region", "type": ["null", "string"], "default": null}
  ]`, 1)
	call(t, toolNamed(t, env, "check_compatibility"), map[string]any{"subject": "api-usage-value", "schema": added}, &cc)
	if !cc.Compatible || cc.Policy != "LOGICAL" || len(cc.NotReproduced) != 1 || !strings.Contains(cc.NotReproduced[0], `compatibilityGroup "application.major.version" not applied`) ||
		cc.CompatibilityGroup == nil || cc.CompatibilityGroup.ValueSet || len(cc.CompatibilityGroup.Kept) != 1 {
		t.Fatalf("check_compatibility = %+v", cc)
	}
	// v12 passes the native BACKWARD check but LOGICAL's Iceberg v2 mode rejects the deleted field.
	call(t, toolNamed(t, env, "check_compatibility"), map[string]any{"subject": "api-usage-value", "schema_file": v12File}, &cc)
	if cc.Compatible || len(cc.Incompatibilities) != 1 || cc.Incompatibilities[0].Type != "FIELD_DELETED" || cc.Incompatibilities[0].LogicalMode != "ICEBERG_V2" {
		t.Fatalf("v12 under LOGICAL = %+v", cc)
	}
	var g checkSchemaChangeResult
	call(t, toolNamed(t, env, "check_schema_change"), map[string]any{"subject": "api-usage-value", "schema_file": v11File}, &g)
	if len(g.NotReproduced) != 1 || !strings.Contains(strings.Join(g.Reasons, " | "), "compatibilityGroup") {
		t.Fatalf("check_schema_change: not_reproduced=%v reasons=%v", g.NotReproduced, g.Reasons)
	}
}

// Schema files are regular files of at most 1 MiB; devices, directories and huge files are clear
// errors, and an extension that names no format takes the subject's instead of forcing Avro.
func TestSchemaFilesAreBoundedRegularFiles(t *testing.T) {
	d := &deps{env: mcpkittest.Env(t, "dw-schema")}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.avsc")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), maxSchemaFile+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"/dev/zero", "outside the directories tools may read"},
		{"/dev/null", "outside the directories tools may read"},
		{dir, "not a regular file"},
		{big, "larger than"},
		{filepath.Join(dir, "missing.avsc"), "cannot read schema file"},
	} {
		if _, err := d.load(schemaInput{File: c.path}, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("load(%s) = %v, want %q", c.path, err, c.want)
		}
	}
	// A JSON Schema saved as .schema: the subject's format decides, not a default of Avro.
	js := filepath.Join(dir, "orders.schema")
	if err := os.WriteFile(js, []byte(`{"type":"object","properties":{"id":{"type":"string"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := d.load(schemaInput{File: js}, schema.JSON)
	if err != nil || s.Format != schema.JSON {
		t.Fatalf("unknown extension with a JSON subject: %v, %v", s, err)
	}
	if _, err := d.load(schemaInput{File: js}, ""); err == nil || !strings.Contains(err.Error(), "schema_type") {
		t.Fatalf("unknown extension without a subject format: %v", err)
	}
	if s, err := d.load(schemaInput{File: js, Type: "JSON"}, schema.Avro); err != nil || s.Format != schema.JSON {
		t.Fatalf("schema_type wins: %v, %v", s, err)
	}
}
