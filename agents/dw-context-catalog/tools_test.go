package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/registry/srtest"
)

func TestToolSnapshots(t *testing.T) {
	mcpkittest.CheckSnapshots(t, tools(mcpkittest.Env(t, "dw-context-catalog")))
}

func TestToolSurfaceInvariants(t *testing.T) {
	mcpkittest.CheckInvariants(t, "dw-context-catalog", tools(mcpkittest.Env(t, "dw-context-catalog")))
}

func scenarioPath(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "pkg", "lineage", "testdata", "scenario"}, parts...)...)
}

// catalogEnv is the agent's env with a loopback Schema Registry holding api-usage-value v11 and v12.
func catalogEnv(t *testing.T, now time.Time) map[string]mcpkit.Tool {
	t.Helper()
	srv, err := srtest.Start(srtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	env := mcpkittest.Env(t, "dw-context-catalog")
	env.Now = func() time.Time { return now }
	env.Config.SchemaRegistry = &config.SchemaRegistry{URL: srv.URL, Timeout: 5 * time.Second}
	v11, err := os.ReadFile(scenarioPath("api-usage-value.v11.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	v12 := strings.Replace(string(v11), `{"name": "response_bytes", "type": ["null", "long"], "default": null}`,
		`{"name": "response_kib", "type": ["null", "long"], "default": null}`, 1)
	// The scenario's version numbers: v11 (the statement's pin) and v12 (response_bytes dropped).
	srv.Registry.SeedSchema("api-usage-value", 11, 100011, sr.Schema{Schema: string(v11), Type: sr.TypeAvro})
	srv.Registry.SeedSchema("api-usage-value", 12, 100012, sr.Schema{Schema: v12, Type: sr.TypeAvro})
	byName := map[string]mcpkit.Tool{}
	for _, tool := range tools(env) {
		byName[tool.Name] = tool
	}
	return byName
}

func loadScenario(t *testing.T, tl map[string]mcpkit.Tool) {
	t.Helper()
	for _, path := range []string{scenarioPath("streaming.yaml"), filepath.Join("..", "..", "configs", "catalog.example.yaml")} {
		if e := mcpkittest.Call(t, tl["register_assets"], map[string]any{"path": path}, nil); e != "" {
			t.Fatalf("register_assets %s: %s", path, e)
		}
	}
	var dbtRes importResult
	if e := mcpkittest.Call(t, tl["import_dbt_manifest"], map[string]any{"path": scenarioPath("manifest.json")}, &dbtRes); e != "" {
		t.Fatal(e)
	}
	if dbtRes.Details["column_edges"].(float64) == 0 {
		t.Fatalf("dbt import found no column lineage: %+v", dbtRes)
	}
	for _, f := range []string{"usage-hourly-rollup.statement.json", "api-errors-rollup.statement.json"} {
		raw, err := os.ReadFile(scenarioPath(f))
		if err != nil {
			t.Fatal(err)
		}
		var res importFlinkResult
		if e := mcpkittest.Call(t, tl["import_flink_statement"], map[string]any{"statement_json": string(raw),
			"schema_versions": map[string]any{"api-usage-value": 11}}, &res); e != "" {
			t.Fatalf("import_flink_statement %s: %s", f, e)
		}
	}
}

func TestBlastRadiusToolNamesTheStripeDAGAndItsNextRun(t *testing.T) {
	tl := catalogEnv(t, time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC))
	loadScenario(t, tl)
	var br blastResult
	if e := mcpkittest.Call(t, tl["blast_radius_analysis"], map[string]any{"asset_id": "api-usage-value", "column_name": "response_bytes", "change_type": "column_drop"}, &br); e != "" {
		t.Fatal(e)
	}
	got := map[string]bool{}
	for _, im := range append(br.FieldLevel, br.TableLevel...) {
		got[string(im.URN)] = true
	}
	for _, u := range []string{"flink:statement/usage-hourly-rollup", "tableflow:usage-hourly", "dbt:model.billing.fct_billable_egress",
		"bi:sigma/revenue-today", "job:airflow/sync_metered_usage_to_stripe", "sink:stripe"} {
		if !got[u] {
			t.Errorf("blast radius misses %s", u)
		}
	}
	for _, u := range []string{"flink:statement/api-errors-rollup", "dbt:model.billing.fct_request_counts", "dbt:model.billing.dim_accounts", "job:airflow/refresh_account_dim"} {
		if got[u] {
			t.Errorf("blast radius includes unrelated %s", u)
		}
	}
	if !strings.Contains(br.Summary, "sync_metered_usage_to_stripe next runs 2026-08-14T23:00:00Z") {
		t.Errorf("summary %q does not give the DAG's next run", br.Summary)
	}
	// Per reader, what its own SQL does with the value, the expression quoted.
	var sentences []string
	for _, r := range br.Reads {
		for _, rd := range r.Reads {
			sentences = append(sentences, string(r.URN)+": "+rd.Sentence)
		}
	}
	if !slices.Contains(sentences, "flink:statement/usage-hourly-rollup: `SUM(response_bytes)` skips nulls: sums shrink, and a group whose every record lacks the value sums to NULL (into egress_bytes)") {
		t.Errorf("reads %q", sentences)
	}
}

func TestSelectStarIsExpandedAgainstThePinnedVersionAndFlagged(t *testing.T) {
	tl := catalogEnv(t, time.Now())
	var res importFlinkResult
	e := mcpkittest.Call(t, tl["import_flink_statement"], map[string]any{"name": "usage-copy", "sql": "INSERT INTO `usage-copy` SELECT * FROM `api-usage`",
		"schema_versions": map[string]any{"api-usage-value": 11}}, &res)
	if e != "" {
		t.Fatal(e)
	}
	var asset assetResult
	if e := mcpkittest.Call(t, tl["get_asset"], map[string]any{"asset_id": "flink:statement/usage-copy"}, &asset); e != "" {
		t.Fatal(e)
	}
	if asset.Asset.Attrs["select_star_expanded"] != "true" || asset.Asset.Attrs["schema_pins"] != "api-usage-value v11" {
		t.Errorf("statement attrs %v: want select_star_expanded and the v11 pin", asset.Asset.Attrs)
	}
	var paths []string
	for _, f := range asset.Asset.Fields {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, ",") != "usage_id,account_id,event_time,endpoint,status_code,response_bytes" {
		t.Errorf("v11 expansion gave %v", paths)
	}
	// Re-imported without schema_versions, the given pin holds: nothing known goes stale on a guess.
	e = mcpkittest.Call(t, tl["import_flink_statement"], map[string]any{"name": "usage-copy", "sql": "INSERT INTO `usage-copy` SELECT * FROM `api-usage`"}, &res)
	if e != "" {
		t.Fatal(e)
	}
	if res.Stale != (graph.Counts{}) {
		t.Errorf("re-import without schema_versions marked lineage stale: %+v (warnings %v)", res.Stale, res.Warnings)
	}
	if e := mcpkittest.Call(t, tl["get_asset"], map[string]any{"asset_id": "flink:statement/usage-copy"}, &asset); e != "" {
		t.Fatal(e)
	}
	if asset.Asset.Attrs["schema_pins"] != "api-usage-value v11" || asset.Asset.Attrs["schema_pin_source"] != "given" {
		t.Errorf("after re-import: %v, want the given v11 pin", asset.Asset.Attrs)
	}
}

// With no record of the version, the pin is inferred from the SQL: the scenario statement sums
// response_bytes, which v12 dropped, so it was created against v11.
func TestUnpinnedImportInfersTheVersionFromTheSQL(t *testing.T) {
	tl := catalogEnv(t, time.Now())
	raw, err := os.ReadFile(scenarioPath("usage-hourly-rollup.statement.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res importFlinkResult
	if e := mcpkittest.Call(t, tl["import_flink_statement"], map[string]any{"statement_json": string(raw)}, &res); e != "" {
		t.Fatal(e)
	}
	if w := strings.Join(res.Warnings, " "); !strings.Contains(w, "pinned to v11") || !strings.Contains(w, "inferred_from_sql") {
		t.Errorf("warnings %v do not say v11 was inferred from the SQL", res.Warnings)
	}
	var asset assetResult
	if e := mcpkittest.Call(t, tl["get_asset"], map[string]any{"asset_id": "flink:statement/usage-hourly-rollup"}, &asset); e != "" {
		t.Fatal(e)
	}
	if asset.Asset.Attrs["schema_pins"] != "api-usage-value v11" || asset.Asset.Attrs["schema_pin_source"] != "inferred_from_sql" {
		t.Errorf("statement attrs %v: want api-usage-value v11 inferred_from_sql", asset.Asset.Attrs)
	}
	var br blastResult
	if e := mcpkittest.Call(t, tl["blast_radius_analysis"], map[string]any{"asset_id": "api-usage-value", "column_name": "response_bytes", "change_type": "column_drop"}, &br); e != "" {
		t.Fatal(e)
	}
	found := false
	for _, im := range br.FieldLevel {
		found = found || im.URN == "flink:statement/usage-hourly-rollup"
	}
	if !found {
		t.Errorf("blast radius of response_bytes misses the statement: %+v", br.FieldLevel)
	}
	// Re-importing re-infers the same pin: nothing goes stale.
	if e := mcpkittest.Call(t, tl["import_flink_statement"], map[string]any{"statement_json": string(raw)}, &res); e != "" {
		t.Fatal(e)
	}
	if res.Stale != (graph.Counts{}) {
		t.Errorf("re-import marked lineage stale: %+v", res.Stale)
	}
	if e := mcpkittest.Call(t, tl["import_flink_statement"], map[string]any{"name": "x", "sql": "SELECT 1 FROM `api-usage`",
		"schema_versions": map[string]any{"api-usage-value": 0}}, nil); !strings.Contains(e, "schema_versions") {
		t.Errorf("version 0: %q", e)
	}
}

func TestAmbiguousNameReturnsCandidates(t *testing.T) {
	tl := catalogEnv(t, time.Now())
	loadScenario(t, tl)
	e := mcpkittest.Call(t, tl["get_asset"], map[string]any{"asset_id": "fct_billable_egress"}, nil)
	if !strings.Contains(e, "ambiguous") || !strings.Contains(e, "dbt:model.billing.fct_billable_egress") ||
		!strings.Contains(e, "warehouse:snowflake/ANALYTICS.BILLING.FCT_BILLABLE_EGRESS") {
		t.Errorf("get_asset of an ambiguous name: %q", e)
	}
	e = mcpkittest.Call(t, tl["blast_radius_analysis"], map[string]any{"asset_id": "schema:api-usage-value", "column_name": "no_such_field"}, nil)
	if !strings.Contains(e, "response_bytes") {
		t.Errorf("unknown column should list the fields: %q", e)
	}
}

func TestTraceAndSearchTools(t *testing.T) {
	tl := catalogEnv(t, time.Now())
	loadScenario(t, tl)
	var tr traceResult
	if e := mcpkittest.Call(t, tl["trace_cross_platform_lineage"], map[string]any{"asset_id": "dbt:model.billing.fct_billable_egress",
		"column_name": "billable_bytes", "direction": "upstream", "max_depth": 20}, &tr); e != "" {
		t.Fatal(e)
	}
	found := false
	for _, h := range tr.Upstream.Hops {
		if h.From.String() == "schema:api-usage-value#response_bytes" {
			found = true
		}
		if len(h.Evidence) == 0 {
			t.Errorf("hop %s → %s without evidence", h.From, h.To)
		}
	}
	if !found {
		t.Errorf("upstream trace of billable_bytes does not reach response_bytes: %+v", tr.Upstream.Hops)
	}
	var sr searchResult
	if e := mcpkittest.Call(t, tl["search_catalog"], map[string]any{"query": "revenue", "tags": []any{"money"}}, &sr); e != "" {
		t.Fatal(e)
	}
	if sr.Count == 0 || sr.Results[0].URN != "bi:sigma/revenue-today" {
		t.Errorf("search revenue: %+v", sr)
	}
}

func TestRegisterInlineYAMLAndOpenLineageImport(t *testing.T) {
	tl := catalogEnv(t, time.Now())
	var reg registerResult
	yaml := "version: 1\nassets:\n  - urn: sink:hubspot\n    kind: external_sink\n    tags: [external]\n"
	if e := mcpkittest.Call(t, tl["register_assets"], map[string]any{"yaml": yaml}, nil); !strings.Contains(e, "source_name") {
		t.Errorf("inline yaml without source_name: %q", e)
	}
	if e := mcpkittest.Call(t, tl["register_assets"], map[string]any{"yaml": yaml, "source_name": "crm-sinks"}, &reg); e != "" {
		t.Fatal(e)
	}
	if len(reg.Imports) != 1 || reg.Imports[0].Source != "catalog:crm-sinks" || reg.Imports[0].Assets != 1 {
		t.Errorf("register %+v", reg)
	}
	// Registering the same source without the sink marks it stale.
	if e := mcpkittest.Call(t, tl["register_assets"], map[string]any{"yaml": "version: 1\n", "source_name": "crm-sinks"}, &reg); e != "" {
		t.Fatal(e)
	}
	if reg.Imports[0].Stale.Assets != 1 {
		t.Errorf("re-registration should mark sink:hubspot stale: %+v", reg.Imports[0])
	}
	var ol importOLResult
	dir := filepath.Join("..", "..", "pkg", "lineage", "openlineage", "testdata", "events")
	if e := mcpkittest.Call(t, tl["import_openlineage_events"], map[string]any{"path": dir}, &ol); e != "" {
		t.Fatal(e)
	}
	if len(ol.Imports) != 1 || ol.Imports[0].Edges == 0 {
		t.Errorf("openlineage import %+v", ol)
	}
	if e := mcpkittest.Call(t, tl["import_openlineage_events"], map[string]any{}, nil); !strings.Contains(e, "catalog.openlineage") {
		t.Errorf("no path and no config: %q", e)
	}
	if e := mcpkittest.Call(t, tl["import_dbt_manifest"], map[string]any{}, nil); !strings.Contains(e, "dbt.manifest_path") {
		t.Errorf("no manifest configured: %q", e)
	}
}

func TestTraceFiltersPlatformsAndRejectsBadArguments(t *testing.T) {
	tl := catalogEnv(t, time.Now())
	loadScenario(t, tl)
	var tr traceResult
	if e := mcpkittest.Call(t, tl["trace_cross_platform_lineage"], map[string]any{"asset_id": "schema:api-usage-value", "column_name": "response_bytes",
		"direction": "downstream", "platforms": []any{"bi", "job"}}, &tr); e != "" {
		t.Fatal(e)
	}
	if tr.Upstream != nil || len(tr.Downstream.Nodes) != 2 {
		t.Errorf("platform filter: %+v", tr.Downstream.Nodes)
	}
	for _, n := range tr.Downstream.Nodes {
		if s := n.Node.Asset.System(); s != "bi" && s != "job" {
			t.Errorf("node of system %s despite the filter", s)
		}
	}
	for args, want := range map[string]map[string]any{
		"direction":              {"asset_id": "schema:api-usage-value", "direction": "sideways"},
		"include_column_lineage": {"asset_id": "schema:api-usage-value", "column_name": "response_bytes", "include_column_lineage": false},
		"no asset named":         {"asset_id": "kafka:topic/nope"},
	} {
		if e := mcpkittest.Call(t, tl["trace_cross_platform_lineage"], want, nil); !strings.Contains(e, args) {
			t.Errorf("trace %v: %q, want an error mentioning %q", want, e, args)
		}
	}
}

// A failing location does not discard what the others wrote: the result lists those imports, sets
// failed and names the failing path; only when nothing was written is it an error.
func TestMultiPathImportsKeepWhatWasWritten(t *testing.T) {
	env := mcpkittest.Env(t, "dw-context-catalog")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nassets:\n  - urn: sink:x\n    colour: red\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	good := filepath.Join("..", "..", "configs", "catalog.example.yaml")
	events := filepath.Join("..", "..", "pkg", "lineage", "openlineage", "testdata", "events")
	env.Config.Catalog.Files = []string{bad, good, missing}
	env.Config.Catalog.OpenLineage = []string{missing, events}
	tl := map[string]mcpkit.Tool{}
	for _, tool := range tools(env) {
		tl[tool.Name] = tool
	}

	var reg registerResult
	if e := mcpkittest.Call(t, tl["register_assets"], map[string]any{}, &reg); e != "" {
		t.Fatal(e)
	}
	if !reg.Failed || len(reg.Imports) != 1 || reg.Imports[0].Assets == 0 || len(reg.Errors) != 2 ||
		reg.Errors[0].Path != bad || !strings.Contains(reg.Errors[0].Error, "line 4") || reg.Errors[1].Path != missing {
		t.Errorf("register_assets %+v", reg)
	}
	var get assetResult
	if e := mcpkittest.Call(t, tl["get_asset"], map[string]any{"asset_id": "job:airflow/sync_metered_usage_to_stripe"}, &get); e != "" {
		t.Errorf("the good file's asset was not kept: %s", e)
	}

	var ol importOLResult
	if e := mcpkittest.Call(t, tl["import_openlineage_events"], map[string]any{}, &ol); e != "" {
		t.Fatal(e)
	}
	if !ol.Failed || len(ol.Imports) != 1 || ol.Imports[0].Edges == 0 || len(ol.Errors) != 1 || ol.Errors[0].Path != missing {
		t.Errorf("import_openlineage_events %+v", ol)
	}

	// Nothing written: an error naming every failure.
	env.Config.Catalog.Files = []string{bad, missing}
	if e := mcpkittest.Call(t, tl["register_assets"], map[string]any{}, nil); !strings.Contains(e, "line 4") || !strings.Contains(e, "missing.yaml") {
		t.Errorf("all files failing: %q", e)
	}
	// One good path: no failure flag.
	reg = registerResult{}
	if e := mcpkittest.Call(t, tl["register_assets"], map[string]any{"path": good}, &reg); e != "" || reg.Failed || len(reg.Errors) != 0 {
		t.Errorf("single good path: %q %+v", e, reg)
	}
}
