package dbt

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func load(t testing.TB, path string) *Manifest {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type edge struct{ from, to, kind string }

func edgeSet(b graph.Batch) map[edge]bool {
	out := map[edge]bool{}
	for _, e := range b.Edges {
		out[edge{e.From.String(), e.To.String(), string(e.Kind)}] = true
	}
	return out
}

// Real manifests written by dbt 1.1 (v5), 1.3 (v7), 1.7 (v11) and a v12 fixture, trimmed to a few
// nodes (see testdata/public/README.md).
func TestImportsRealManifestsOfEachSchemaVersion(t *testing.T) {
	cases := []struct {
		file    string
		version string
		models  int
		edges   []edge
	}{
		{"datahub-jaffle-shop-1.1.0-manifest.v5.json", "v5", 1, []edge{
			{"dbt:seed.jaffle_shop.raw_payments#id", "dbt:model.jaffle_shop.stg_payments#payment_id", "identity"},
			{"dbt:seed.jaffle_shop.raw_payments#amount", "dbt:model.jaffle_shop.stg_payments#amount", "transformation"},
			{"dbt:seed.jaffle_shop.raw_payments", "dbt:model.jaffle_shop.stg_payments", "depends_on"},
			{"dbt:model.jaffle_shop.stg_payments", "warehouse:bigquery/calm-pagoda-323403.jaffle_shop.stg_payments", "materializes"},
		}},
		{"piperider-dbt-postgres-1.3.4-manifest.v7.json", "v7", 1, []edge{
			{"dbt:model.jaffle_shop.stg_customers#first_name", "dbt:model.jaffle_shop.customers#first_name", "identity"},
			{"dbt:model.jaffle_shop.stg_orders#order_date", "dbt:model.jaffle_shop.customers#first_order", "aggregation"},
			{"dbt:model.jaffle_shop.stg_orders#order_id", "dbt:model.jaffle_shop.customers#number_of_orders", "aggregation"},
			{"dbt:model.jaffle_shop.stg_customers#customer_id", "dbt:model.jaffle_shop.customers", "join"},
		}},
		// Written without compiled SQL (no compiled_code key at all): table-level lineage only.
		{"piperider-dbt-duckdb-1.6.0-manifest.v10.json", "v10", 2, []edge{
			{"dbt:model.jaffle_shop.stg_orders", "dbt:model.jaffle_shop.int_order_payments_pivoted", "depends_on"},
			{"dbt:seed.jaffle_shop.raw_customers", "dbt:model.jaffle_shop.stg_customers", "depends_on"},
			{"dbt:model.jaffle_shop.stg_customers", "warehouse:duckdb/jaffle_shop.main.stg_customers", "materializes"},
		}},
		{"piperider-dbt-duckdb-1.7.2-manifest.v11.json", "v11", 1, []edge{
			{"dbt:model.jaffle_shop.stg_orders#order_id", "dbt:model.jaffle_shop.int_order_payments_pivoted#order_id", "identity"},
			{"dbt:model.jaffle_shop.stg_payments#amount", "dbt:model.jaffle_shop.int_order_payments_pivoted#credit_card_amount", "aggregation"},
			{"dbt:model.jaffle_shop.stg_payments#payment_method", "dbt:model.jaffle_shop.int_order_payments_pivoted#credit_card_amount", "conditional"},
			{"dbt:model.jaffle_shop.stg_payments#amount", "dbt:model.jaffle_shop.int_order_payments_pivoted#amount", "aggregation"},
		}},
		{"datahub-multi-project-a-1.8.0-manifest.v12.json", "v12", 2, []edge{
			{"dbt:model.project_a.orders#amount", "dbt:model.project_a.orders_summary#total_amount", "aggregation"},
			{"dbt:model.project_a.orders#customer_id", "dbt:model.project_a.orders_summary#customer_id", "identity"},
			{"dbt:model.project_a.orders_summary", "dbt:exposure.project_a.orders_dashboard", "exposes"},
		}},
	}
	for _, c := range cases {
		t.Run(c.version, func(t *testing.T) {
			m := load(t, filepath.Join("testdata", "public", c.file))
			if !strings.Contains(m.Metadata.SchemaVersion, c.version+".json") {
				t.Fatalf("fixture is %s, want %s", m.Metadata.SchemaVersion, c.version)
			}
			b, stats, err := Import(m, "")
			if err != nil {
				t.Fatal(err)
			}
			if stats.Models != c.models {
				t.Errorf("models %d, want %d", stats.Models, c.models)
			}
			if c.version == "v10" && (len(stats.WithoutCompiledSQL) != 2 || len(b.KeepFieldEdgesInto) != 2 || stats.ColumnEdges != 0) {
				t.Errorf("a manifest without compiled_code: %+v, keep %v", stats, b.KeepFieldEdgesInto)
			}
			got := edgeSet(b)
			for _, e := range c.edges {
				if !got[e] {
					t.Errorf("missing edge %s → %s (%s) among %d edges", e.from, e.to, e.kind, len(got))
				}
			}
			for _, e := range b.Edges {
				if _, err := graph.ParseURN(string(e.From.Asset)); err != nil {
					t.Errorf("bad URN: %v", err)
				}
			}
		})
	}
}

func TestManifestOwnersTestsAndExposures(t *testing.T) {
	m := load(t, filepath.Join("testdata", "public", "datahub-multi-project-a-1.8.0-manifest.v12.json"))
	b, stats, err := Import(m, "")
	if err != nil {
		t.Fatal(err)
	}
	if stats.Tests != 1 || stats.Exposures != 1 {
		t.Errorf("stats %+v", stats)
	}
	for _, a := range b.Assets {
		if a.URN == "dbt:exposure.project_a.orders_dashboard" && (len(a.Owners) != 1 || a.Owners[0] != "sales-analytics@example.com") {
			t.Errorf("exposure owners %v", a.Owners)
		}
		if a.URN == "dbt:model.project_a.orders" && a.Attrs["tests"] != "not_null(id)" {
			t.Errorf("orders tests %q", a.Attrs["tests"])
		}
	}
	for _, f := range b.Fields {
		if f.Asset == "dbt:model.project_a.orders" && f.Path == "id" && (f.Nullable || !slices.Contains(f.Tags, "test:not_null")) {
			t.Errorf("orders.id field %+v: a not_null test makes it non-nullable", f)
		}
	}
	scen := load(t, filepath.Join("..", "testdata", "scenario", "manifest.json"))
	b, _, err = Import(scen, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range b.Assets {
		if a.URN == "dbt:model.billing.fct_billable_egress" {
			if a.Criticality != "critical" || !slices.Contains(a.Owners, "billing-data@example.com") || !slices.Contains(a.Tags, "money") {
				t.Errorf("fct_billable_egress from meta: %+v", a)
			}
		}
	}
	if !edgeSet(b)[edge{"warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY", "dbt:source.billing.usage.usage_hourly", "materializes"}] {
		t.Error("source is not tied to its warehouse table")
	}
}

// A manifest written by dbt parse/ls/test has no compiled_code: re-importing it must keep the
// column lineage an earlier import found (datahub-project/datahub PR #18823), while a model that
// vanished is marked stale.
func TestManifestWithoutCompiledCodeKeepsKnownColumnLineage(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	g := graph.New(st, time.Now)
	path := filepath.Join("..", "testdata", "scenario", "manifest.json")
	b, _, err := Import(load(t, path), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Import(ctx, b); err != nil {
		t.Fatal(err)
	}

	var raw map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	nodes := raw["nodes"].(map[string]any)
	for _, n := range nodes {
		delete(n.(map[string]any), "compiled_code")
	}
	delete(nodes, "model.billing.dim_accounts")
	stripped, _ := json.Marshal(raw)
	m2, err := Parse(stripped)
	if err != nil {
		t.Fatal(err)
	}
	b2, stats, err := Import(m2, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.WithoutCompiledSQL) != 2 {
		t.Errorf("models without compiled SQL: %v", stats.WithoutCompiledSQL)
	}
	res, err := g.Import(ctx, b2)
	if err != nil {
		t.Fatal(err)
	}
	lin, err := g.Upstream(ctx, []graph.FieldRef{{Asset: "dbt:model.billing.fct_billable_egress", Path: "billable_bytes"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(lin.Nodes) == 0 || lin.Nodes[0].Node.String() != "dbt:source.billing.usage.usage_hourly#egress_bytes" {
		t.Errorf("column lineage of billable_bytes lost after a manifest without compiled_code: %+v", lin.Nodes)
	}
	a, err := g.Get(ctx, "dbt:model.billing.dim_accounts")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Stale {
		t.Errorf("dim_accounts vanished from the manifest but is not stale (import marked %+v)", res.Stale)
	}
}

func TestParseRejectsWhatIsNotAManifest(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"metadata":{}}`, `{"nodes": 3}`, `not json`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

func FuzzManifestImport(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "public", "*.json"))
	files = append(files, filepath.Join("..", "testdata", "scenario", "manifest.json"))
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(`{"nodes":{"model.a.b":{"resource_type":"model","unique_id":"model.a.b","compiled_code":"select x from y","columns":{"x":null},"config":{"tags":"t","meta":{"owner":["a",{"email":"b"}]}}}},"sources":{"s":null},"exposures":{"e":null}}`))
	f.Add([]byte(`{"nodes":{"model.a.b":{"resource_type":"model","relation_name":"\"a.b\".c","compiled_code":"select * from"}},"groups":{"g":null}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Parse(raw)
		if err != nil {
			return
		}
		b, _, err := Import(m, "")
		if err != nil {
			return
		}
		for _, e := range b.Edges {
			if e.Kind == "" {
				t.Fatalf("edge without kind: %+v", e)
			}
		}
	})
}
