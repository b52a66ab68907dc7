package catalogfile

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/graph"
)

func TestExampleCatalogDeclaresTheScenario(t *testing.T) {
	path := filepath.Join("..", "..", "..", "configs", "catalog.example.yaml")
	b, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.Source != "catalog:"+abs {
		t.Errorf("source %s", b.Source)
	}
	// The same file named relatively, with ./ or absolutely is one source.
	for _, p := range []string{abs, "./" + path, filepath.Join("..", "catalogfile", path)} {
		other, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if other.Source != b.Source {
			t.Errorf("Load(%q) source %s, want %s", p, other.Source, b.Source)
		}
	}
	assets := map[graph.URN]graph.Asset{}
	for _, a := range b.Assets {
		assets[a.URN] = a
	}
	dag := assets["job:airflow/sync_metered_usage_to_stripe"]
	if dag.Schedule != "0 23 * * *" || !slices.Contains(dag.Tags, "money") || !slices.Contains(dag.Tags, "external") {
		t.Errorf("DAG %+v", dag)
	}
	if wb := assets["bi:sigma/revenue-today"]; wb.Name != "Revenue today" || !slices.Contains(wb.Tags, "customer_facing") {
		t.Errorf("workbook %+v", wb)
	}
	edges := map[string]graph.EdgeKind{}
	for _, e := range b.Edges {
		edges[e.From.String()+" -> "+e.To.String()] = e.Kind
	}
	for k, kind := range map[string]graph.EdgeKind{
		"dbt:model.billing.fct_billable_egress -> bi:sigma/revenue-today":                   graph.EdgeReads,
		"dbt:model.billing.fct_billable_egress -> job:airflow/sync_metered_usage_to_stripe": graph.EdgeReads,
		"job:airflow/sync_metered_usage_to_stripe -> sink:stripe":                           graph.EdgeSyncsTo,
	} {
		if edges[k] != kind {
			t.Errorf("edge %s: %q, want %s", k, edges[k], kind)
		}
	}
}

func TestParseErrorsSayWhatIsWrong(t *testing.T) {
	cases := map[string]string{
		"":                                   "empty",
		"version: 2":                         "version: 1",
		"version: 1\nassets:\n  - urn: nope": "bad URN",
		"version: 1\nassets:\n  - urn: job:a/b\n    schedul: x":            "schedul",
		"version: 1\nassets:\n  - urn: job:a/b\n    schedule: daily at 11": "cron",
		"version: 1\nassets:\n  - urn: job:a/b\n    criticality: meh":      "criticality",
		"version: 1\nassets:\n  - urn: job:a/b\n  - urn: job:a/b":          "twice",
		"version: 1\nedges:\n  - {from: a:b, to: a:c}":                     "kind is required",
		"version: 1\nedges:\n  - {from: a:b, to: 'a:b', kind: reads}":      "itself",
		"version: 1\nassets:\n  - urn: job:a/b\n    reads: [job:a/b]":      "itself",
		"version: 1\nassets:\n  - urn: job:a/b\n    fields: [{type: int}]": "empty path",
	}
	for in, want := range cases {
		_, err := Parse("t.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error mentioning %q", in, err, want)
		}
	}
}
