package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	lscenario "github.com/dataworkers/dw/pkg/lineage/scenario"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/registry/srtest"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/store"
)

func TestToolSnapshots(t *testing.T) {
	mcpkittest.CheckSnapshots(t, tools(mcpkittest.Env(t, "dw-schema")))
}

func TestToolSurfaceInvariants(t *testing.T) {
	mcpkittest.CheckInvariants(t, "dw-schema", tools(mcpkittest.Env(t, "dw-schema")))
}

// 14:05 UTC, when the gateway team registers v12.
var storyNow = time.Date(2026, 11, 29, 14, 5, 0, 0, time.UTC)

var (
	v11File = filepath.Join("..", "..", "pkg", "schema", "testdata", "scenario", "api-usage-value.v11.avsc")
	v12File = filepath.Join("..", "..", "pkg", "schema", "testdata", "scenario", "api-usage-value.v12.avsc")
	// The story's lineage artifacts, shared with the other agents' tests and the demo.
	storyDir       = filepath.Join("..", "..", "pkg", "lineage", "testdata", "scenario")
	exampleCatalog = filepath.Join("..", "..", "configs", "catalog.example.yaml")
	model          = graph.DBTURN("model.billing.fct_billable_egress")
	workbook       = graph.URN("bi:sigma/revenue-today")
	dag            = graph.JobURN("airflow", "sync_metered_usage_to_stripe")
)

// seedStory loads the story graph, in which usage-hourly-rollup was created against v11.
func seedStory(t *testing.T, st *store.Store, now func() time.Time) {
	t.Helper()
	if err := lscenario.Load(context.Background(), graph.New(st, now), storyDir, exampleCatalog); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// story starts the fake registry with api-usage-value v11 (id 111) seeded, points the agent at it,
// and seeds the context graph with the story's lineage (statement pinned to v11).
func story(t *testing.T) (*mcpkit.Env, *srtest.Server, map[string]mcpkit.Tool) {
	t.Helper()
	srv, err := srtest.Start(srtest.Options{Username: "sr-key", Password: "sr-secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.Registry.SeedSchema("api-usage-value", 11, 111, sr.Schema{Schema: readFile(t, v11File)})
	env := mcpkittest.Env(t, "dw-schema")
	env.Config.SchemaRegistry = &config.SchemaRegistry{URL: srv.URL, Username: "sr-key", Password: "sr-secret", Timeout: 5 * time.Second}
	env.Now = func() time.Time { return storyNow }
	st, err := env.Store.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seedStory(t, st, env.Now)
	byName := map[string]mcpkit.Tool{}
	for _, tl := range tools(env) {
		byName[tl.Name] = tl
	}
	return env, srv, byName
}

func call(t *testing.T, tl mcpkit.Tool, args map[string]any, out any) {
	t.Helper()
	if msg := mcpkittest.Call(t, tl, args, out); msg != "" {
		t.Fatalf("%s: %s", tl.Name, msg)
	}
}

func TestScenarioFromRegistrationToFix(t *testing.T) {
	env, srv, tl := story(t)
	ctx := context.Background()

	// Before registration: v12 is BACKWARD-compatible, and the registry was asked the same question
	// (srtest answers from our own checker: this proves the round trip, not the rule)…
	var cc checkCompatibilityResult
	call(t, tl["check_compatibility"], map[string]any{"subject": "api-usage-value", "schema_file": v12File}, &cc)
	if !cc.Compatible || cc.Level != "BACKWARD" || cc.Mode != "live" || !cc.Registry.Consulted || cc.Registry.Agreement != "agree" {
		t.Fatalf("check_compatibility: %+v", cc)
	}
	// …but the gate blocks it: the statement pinned to v11 sums response_bytes into money readers.
	var gate checkSchemaChangeResult
	call(t, tl["check_schema_change"], map[string]any{"subject": "api-usage-value", "schema_file": v12File}, &gate)
	if !gate.Failed || !gate.Compatible || len(gate.Blocking) == 0 || !strings.HasPrefix(gate.Verdict, "compatible but breaks") ||
		!strings.Contains(strings.Join(gate.Reasons, "\n"), "usage-hourly-rollup reads response_bytes (pinned to v11)") {
		t.Fatalf("check_schema_change: %+v", gate)
	}

	// 14:05: the gateway team registers v12 anyway (srclient over HTTP; BACKWARD passes).
	c, err := registry.New(env.Config.SchemaRegistry)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, "api-usage-value", schema.Avro, readFile(t, v12File), nil); err != nil {
		t.Fatal(err)
	}

	var subj getSubjectResult
	call(t, tl["get_subject"], map[string]any{"subject": "api-usage-value"}, &subj)
	if len(subj.Versions) != 2 || subj.Versions[1].Version != 12 || subj.Versions[1].FirstSeen == nil || !subj.Versions[1].FirstSeen.Equal(storyNow) ||
		subj.Shown.Version != 12 || subj.Level != "BACKWARD" {
		t.Fatalf("get_subject: %+v", subj)
	}

	var d diffResult
	call(t, tl["diff_schema_versions"], map[string]any{"subject": "api-usage-value"}, &d)
	if d.From != "api-usage-value v11" || d.To != "api-usage-value v12" || len(d.Changes) != 2 || d.AffectingReaders != 1 {
		t.Fatalf("diff: %+v", d)
	}

	var a assessImpactResult
	call(t, tl["assess_impact"], map[string]any{"subject": "api-usage-value", "version": 12}, &a)
	var stmt, modelEffect, workbookEffect, dagEffect string
	for _, r := range a.Readers {
		switch r.URN {
		case graph.FlinkStatementURN("usage-hourly-rollup"):
			stmt = r.Effect
			if r.PinnedVersion != 11 {
				t.Errorf("pinned %d", r.PinnedVersion)
			}
		case model:
			modelEffect = r.Effect
		case workbook:
			workbookEffect = r.Effect
		case dag:
			dagEffect = r.Effect
		}
	}
	if stmt != "reads response_bytes (pinned to v11): NULL for v12 records; SUM(response_bytes) shrinks" || modelEffect == "" || workbookEffect == "" ||
		!strings.Contains(dagEffect, "23:00") || a.Verdict != fmt.Sprintf("compatible but breaks %d readers", a.Broken) || a.Broken < 7 {
		t.Fatalf("assess_impact: %s\nstatement %q\nmodel %q\nworkbook %q\ndag %q", a.Verdict, stmt, modelEffect, workbookEffect, dagEffect)
	}

	// The fix: v13 restores response_bytes as optional beside response_kib, proven under BACKWARD
	// by us and by the registry.
	var fx proposeSchemaFixResult
	call(t, tl["propose_schema_fix"], map[string]any{"subject": "api-usage-value"}, &fx)
	if fx.Fixes != "v12" || fx.RestoresFrom != 11 || fx.NextVersion != 13 || !fx.Proof.Compatible || fx.Proof.Registry.Agreement != "agree" ||
		len(fx.Restored) != 1 || fx.Restored[0].Path != "response_bytes" {
		t.Fatalf("propose_schema_fix: %+v", fx)
	}
	v13, err := schema.Parse(schema.Avro, fx.Text)
	if err != nil {
		t.Fatal(err)
	}
	rb, ok1 := v13.Field("response_bytes")
	_, ok2 := v13.Field("response_kib")
	if !ok1 || !ok2 || !rb.Nullable || rb.Default != "null" {
		t.Fatalf("v13 %s", fx.Text)
	}
	// And the registry accepts it over HTTP as version 13.
	if _, err := c.Register(ctx, "api-usage-value", schema.Avro, fx.Text, nil); err != nil {
		t.Fatal(err)
	}
	latest, err := c.Version(ctx, "api-usage-value", 0, false)
	if err != nil || latest.Version != 13 {
		t.Fatalf("latest %+v %v", latest, err)
	}
	_ = srv
}

func TestFirstVersionOfANewSubjectIsCompatibleAndPassesTheGate(t *testing.T) {
	_, _, tl := story(t)
	var cc checkCompatibilityResult
	call(t, tl["check_compatibility"], map[string]any{"subject": "orders-value", "schema_file": v11File}, &cc)
	if !cc.Compatible || !cc.Registry.Consulted || cc.Registry.Agreement != "agree" || len(cc.ComparedVersions) != 0 {
		t.Fatalf("%+v", cc)
	}
	var g checkSchemaChangeResult
	call(t, tl["check_schema_change"], map[string]any{"subject": "orders-value", "schema_file": v11File}, &g)
	if g.Failed || g.Verdict != "compatible and safe" {
		t.Fatalf("%+v", g)
	}
	if msg := mcpkittest.Call(t, tl["get_subject"], map[string]any{"subject": "orders-value"}, nil); !strings.Contains(msg, "40401") {
		t.Fatalf("get_subject of an unknown subject: %q", msg)
	}
}

func TestCheckCompatibilityOfflineNeedsNoRegistryAndExplainsEachIncompatibility(t *testing.T) {
	env := mcpkittest.Env(t, "dw-schema")
	var tl mcpkit.Tool
	for _, x := range tools(env) {
		if x.Name == "check_compatibility" {
			tl = x
		}
	}
	bad := strings.Replace(readFile(t, v12File), `"name": "status_code", "type": "int"`, `"name": "status_code", "type": "string"`, 1)
	var out checkCompatibilityResult
	call(t, tl, map[string]any{"schema": bad, "earlier_versions": []any{map[string]any{"version": 11, "file": v11File}}}, &out)
	if out.Compatible || out.Mode != "offline" || len(out.Incompatibilities) != 1 || out.Incompatibilities[0].Type != "TYPE_MISMATCH" ||
		out.Incompatibilities[0].Field != "status_code" || out.Registry.Consulted || out.LevelSource == "" {
		t.Fatalf("%+v", out)
	}
	// Without a registry and without earlier versions: the error names the config key.
	msg := mcpkittest.Call(t, tl, map[string]any{"subject": "api-usage-value", "schema": bad}, nil)
	if !strings.Contains(msg, "schema_registry.url") || !strings.Contains(msg, "earlier_versions") {
		t.Fatalf("error %q", msg)
	}
	msg = mcpkittest.Call(t, tl, map[string]any{"schema": `{"type":"record"`, "earlier_versions": []any{map[string]any{"file": v11File}}}, nil)
	if !strings.Contains(msg, "invalid Avro schema") {
		t.Fatalf("malformed: %q", msg)
	}
}

// writeConfig writes a config file for `dw-schema call`, with the store under home.
func writeConfig(t *testing.T, home, registryURL string) string {
	t.Helper()
	cfg := fmt.Sprintf("store:\n  path: %s\n", filepath.Join(home, "dw.db"))
	if registryURL != "" {
		cfg += fmt.Sprintf("schema_registry:\n  url: %s\n", registryURL)
	}
	p := filepath.Join(home, "dw.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCall(t *testing.T, cfgPath string, tool string, args map[string]any) (int, map[string]any, string) {
	t.Helper()
	raw, _ := json.Marshal(args)
	var out, errb bytes.Buffer
	lookup := func(k string) (string, bool) {
		if k == "DW_CONFIG" {
			return cfgPath, true
		}
		return "", false
	}
	code := mcpkit.Run(context.Background(), mcpkit.Agent{Name: "dw-schema", Instructions: instructions, Tools: tools},
		[]string{"call", tool, string(raw)}, mcpkit.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, lookup)
	var res map[string]any
	_ = json.Unmarshal(out.Bytes(), &res)
	return code, res, errb.String()
}

func TestCallCheckSchemaChangeExitsBlockedWhenItBlocks(t *testing.T) {
	home := t.TempDir()
	cfg := writeConfig(t, home, "")
	st, err := store.Open(context.Background(), filepath.Join(home, "dw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seedStory(t, st, func() time.Time { return storyNow })
	st.Close()
	// Files a tool reads lie under the config file's directory, as in a producer's repository.
	v11File, v12File := copyUnder(t, home, v11File), copyUnder(t, home, v12File)
	earlier := []any{map[string]any{"version": 11, "file": v11File}}

	// The producer's CI, no registry: v12 from the pull request is blocked.
	code, res, stderr := runCall(t, cfg, "check_schema_change", map[string]any{"subject": "api-usage-value", "schema_file": v12File, "earlier_versions": earlier})
	if code != mcpkit.ExitBlocked || res["failed"] != true {
		t.Fatalf("exit %d, result %v, stderr %s", code, res, stderr)
	}
	// The restoring version passes the same gate.
	code, fx, stderr := runCall(t, cfg, "propose_schema_fix", map[string]any{"subject": "api-usage-value", "schema_file": v12File, "earlier_versions": earlier})
	if code != mcpkit.ExitOK {
		t.Fatalf("propose_schema_fix exit %d: %s", code, stderr)
	}
	code, res, stderr = runCall(t, cfg, "check_schema_change", map[string]any{"subject": "api-usage-value", "schema": fx["schema"], "earlier_versions": earlier})
	if code != mcpkit.ExitOK || res["failed"] != false {
		t.Fatalf("v13 through the gate: exit %d, %v, %s", code, res["reasons"], stderr)
	}
	// Blocking only on critical still blocks (the Stripe DAG and sink are critical); blocking only
	// on a severity no broken reader has lets it through, with the broken readers listed.
	code, res, _ = runCall(t, cfg, "check_schema_change", map[string]any{"subject": "api-usage-value", "schema_file": v12File, "earlier_versions": earlier, "block_on": []string{"critical"}})
	if code != mcpkit.ExitBlocked {
		t.Fatalf("block_on critical: exit %d %v", code, res["reasons"])
	}
	code, res, _ = runCall(t, cfg, "check_schema_change", map[string]any{"subject": "api-usage-value", "schema_file": v12File, "earlier_versions": earlier, "block_on": []string{"medium"}})
	if code != mcpkit.ExitOK || !strings.HasPrefix(fmt.Sprint(res["verdict"]), "compatible but breaks") {
		t.Fatalf("block_on medium: exit %d %v", code, res)
	}
	// An incompatible change blocks whatever the readers.
	bad := strings.Replace(readFile(t, v12File), `"name": "status_code", "type": "int"`, `"name": "status_code", "type": "string"`, 1)
	code, res, _ = runCall(t, cfg, "check_schema_change", map[string]any{"subject": "api-usage-value", "schema": bad, "earlier_versions": earlier, "block_on": []string{"low"}})
	if code != mcpkit.ExitBlocked || res["verdict"] != "incompatible" {
		t.Fatalf("incompatible: exit %d %v", code, res)
	}
}

func TestDiffOfTwoFilesAndToolErrors(t *testing.T) {
	env := mcpkittest.Env(t, "dw-schema")
	byName := map[string]mcpkit.Tool{}
	for _, x := range tools(env) {
		byName[x.Name] = x
	}
	var d diffResult
	call(t, byName["diff_schema_versions"], map[string]any{"old_schema_file": v11File, "schema_file": v12File}, &d)
	if len(d.Changes) != 2 || d.Changes[0].Kind != schema.FieldRemoved {
		t.Fatalf("%+v", d)
	}
	if msg := mcpkittest.Call(t, byName["list_subjects"], map[string]any{}, nil); !strings.Contains(msg, "schema_registry.url") {
		t.Fatalf("list_subjects without registry: %q", msg)
	}
	if msg := mcpkittest.Call(t, byName["check_schema_change"], map[string]any{"subject": "x", "schema_file": "/nonexistent.avsc",
		"earlier_versions": []any{map[string]any{"file": v11File}}}, nil); !strings.Contains(msg, "cannot read schema file") {
		t.Fatalf("missing file: %q", msg)
	}
	if msg := mcpkittest.Call(t, byName["check_schema_change"], map[string]any{"subject": "x", "schema_file": v12File, "block_on": []string{"severe"},
		"earlier_versions": []any{map[string]any{"file": v11File}}}, nil); !strings.Contains(msg, "unknown severity") {
		t.Fatalf("bad severity: %q", msg)
	}
}

// A registry that accepts everything (plain srfake, no checker) disagrees with us on an
// incompatible schema; the tool must say so rather than pick one silently.
func TestDisagreementWithTheRegistryIsCalledOut(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	reg.SeedSchema("api-usage-value", 11, 111, sr.Schema{Schema: readFile(t, v11File)})
	env := mcpkittest.Env(t, "dw-schema")
	env.Config.SchemaRegistry = &config.SchemaRegistry{URL: reg.URL(), Timeout: 5 * time.Second}
	var tl mcpkit.Tool
	for _, x := range tools(env) {
		if x.Name == "check_compatibility" {
			tl = x
		}
	}
	bad := strings.Replace(readFile(t, v12File), `"name": "status_code", "type": "int"`, `"name": "status_code", "type": "string"`, 1)
	var out checkCompatibilityResult
	call(t, tl, map[string]any{"subject": "api-usage-value", "schema": bad}, &out)
	if out.Compatible || !out.Registry.Consulted || out.Registry.Compatible == nil || !*out.Registry.Compatible ||
		!strings.HasPrefix(out.Registry.Agreement, "DISAGREE") {
		t.Fatalf("%+v", out)
	}
}

// copyUnder copies file into dir and returns the copy's path: `call` reads files only under the
// config file's directory (and the working directory), as a producer's CI job has them.
func copyUnder(t *testing.T, dir, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}
