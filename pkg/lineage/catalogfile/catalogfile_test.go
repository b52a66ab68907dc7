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

// A file that is not a catalog — a password file, a private key, KEY=VALUE lines — is refused
// with the line and the kind of problem, never with its text.
func TestParseErrorsQuoteNothingOfTheFile(t *testing.T) {
	for name, body := range map[string]string{
		"shadow":      "root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n",
		"private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n",
		"env file":    "DB_PASSWORD=hunter22secret\nAPI_TOKEN=tok_abcdef123456\n",
		"wrong keys":  "version: 1\nhunter22secret: x\nassets:\n  - urn: sink:x\n    tok_abcdef123456: red\n",
	} {
		_, err := Parse("f.yaml", []byte(body))
		if err == nil {
			t.Errorf("%s: parsed", name)
			continue
		}
		for _, leak := range []string{"root:*", "20228", "OPENSSH", "b3BlbnNz", "hunter22", "tok_abc"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s: the error quotes %q: %v", name, leak, err)
			}
		}
		if !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: the error should give the line: %v", name, err)
		}
	}
}

// FuzzParse: never panics, and a decoding error quotes no line of the input whole.
func FuzzParse(f *testing.F) {
	f.Add([]byte("version: 1\nassets:\n  - urn: sink:x\n    colour: red\n"))
	f.Add([]byte("root:*:20228:0:99999:7:::\n"))
	f.Add([]byte("version: 1\nassets: [{urn: 'a:b', fields: [{path: 1}]}]\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, err := Parse("f.yaml", raw)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "unknown key") {
			return
		}
		known := map[string]bool{}
		for _, typ := range []string{"catalogfile.File", "catalogfile.Asset", "catalogfile.Field", "catalogfile.Edge"} {
			_, keys := knownKeys(typ)
			for _, k := range keys {
				known[k] = true
			}
		}
		for _, line := range strings.Split(string(raw), "\n") {
			k, _, ok := strings.Cut(strings.Trim(strings.TrimSpace(line), "-{ "), ":")
			if k = strings.TrimSpace(k); ok && len(k) >= 12 && !known[k] && strings.Contains(err.Error(), k) {
				t.Fatalf("the error quotes the key %q: %v", k, err)
			}
		}
	})
}
