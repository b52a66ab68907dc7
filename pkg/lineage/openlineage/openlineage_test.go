package openlineage

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/graph"
)

func TestImportsADirectoryOfNDJSONAndJSONArrays(t *testing.T) {
	dir := filepath.Join("testdata", "events")
	evs, err := ReadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Fatalf("read %d events, want 4", len(evs))
	}
	bs, err := ImportJobs(evs)
	if err != nil {
		t.Fatal(err)
	}
	var b graph.Batch // every job's and dataset's claims together
	sources := map[string]bool{}
	for _, one := range bs {
		if !strings.HasPrefix(one.Source, "openlineage:") || sources[one.Source] {
			t.Errorf("source %q (empty, foreign or repeated)", one.Source)
		}
		sources[one.Source] = true
		b.Assets, b.Fields, b.Edges = append(b.Assets, one.Assets...), append(b.Fields, one.Fields...), append(b.Edges, one.Edges...)
	}
	got := map[string]graph.Edge{}
	for _, e := range b.Edges {
		got[e.From.String()+" -> "+e.To.String()] = e
	}
	job := "job:airflow-prod/sync_metered_usage_to_stripe.extract_usage"
	fct := "warehouse:snowflake/ANALYTICS.BILLING.FCT_BILLABLE_EGRESS"
	out := "warehouse:snowflake/ANALYTICS.EXPORT.STRIPE_USAGE"
	want := map[string]graph.EdgeKind{
		fct + " -> " + job: graph.EdgeReads,
		job + " -> " + out: graph.EdgeWrites,
		fct + "#BILLABLE_BYTES -> " + job + "#QUANTITY":                                      graph.EdgeTransformation,
		job + "#QUANTITY -> " + out + "#QUANTITY":                                            graph.EdgeIdentity,
		fct + "#ACCOUNT_ID -> " + job + "#ACCOUNT_ID":                                        graph.EdgeIdentity,
		fct + "#USAGE_DAY -> " + job:                                                         graph.EdgeFilter,
		"kafka:topic/api-usage#status_code -> job:flink-jobs/errors_by_endpoint#errors":      graph.EdgeAggregation,
		"job:flink-jobs/errors_by_endpoint -> openlineage:s3://acme-lake/errors/by_endpoint": graph.EdgeWrites,
	}
	for k, kind := range want {
		if e, ok := got[k]; !ok || e.Kind != kind {
			t.Errorf("edge %s: got %+v, want %s", k, e, kind)
		}
	}
	if e := got[fct+"#BILLABLE_BYTES -> "+job+"#QUANTITY"]; !strings.Contains(e.Transformation, "billable_bytes renamed") {
		t.Errorf("evidence %q", e.Transformation)
	}
	assets := map[graph.URN]graph.Asset{}
	for _, a := range b.Assets {
		assets[a.URN] = a
	}
	if a := assets[graph.URN(job)]; len(a.Owners) != 1 || a.Attrs["sql"] == "" || a.Attrs["last_event"] != "COMPLETE" || a.Attrs["integration"] != "AIRFLOW" {
		t.Errorf("job %+v", a)
	}
	if a := assets["warehouse:postgres/crm.public.accounts"]; len(a.Owners) != 1 || a.Owners[0] != "crm-team@example.com" {
		t.Errorf("dataset event ownership: %+v", a)
	}
	nested := false
	for _, f := range b.Fields {
		nested = nested || (f.Asset == "kafka:topic/api-usage" && f.Path == "meta.region")
	}
	if !nested {
		t.Error("nested schema field meta.region missing")
	}
}

func TestDecodeRejectsMalformedEvents(t *testing.T) {
	for _, raw := range []string{`{"eventType":`, `[{"job":1}]`, `{"job":{"namespace":"n","name":"j"}} trailing`} {
		if _, err := Decode([]byte(raw)); err == nil {
			t.Errorf("Decode(%q) accepted", raw)
		}
	}
	evs, err := Decode([]byte(`{"eventType":"START","inputs":[{"namespace":"n","name":"d"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ImportJobs(evs); err == nil || !strings.Contains(err.Error(), "no job") {
		t.Errorf("event without a job: %v", err)
	}
	if _, err := ReadPath(filepath.Join("testdata", "missing")); err == nil {
		t.Error("missing path accepted")
	}
}

func FuzzDecodeAndImport(f *testing.F) {
	f.Add([]byte(`{"job":{"namespace":"a","name":"b"},"inputs":[{"namespace":"kafka://h:1","name":"t"}],"outputs":[{"namespace":"snowflake://x","name":"A.B.C","facets":{"columnLineage":{"fields":{"c":{"inputFields":[{"namespace":"kafka://h:1","name":"t","field":"f","transformations":[{"type":"INDIRECT","subtype":"JOIN"}]}]}}}}}]}`))
	f.Add([]byte(`[{"dataset":{"namespace":"s3://b","name":"k#1","facets":{"schema":{"fields":[{"name":"a","fields":[{"name":"b"}]}]}}}}]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		evs, err := Decode(raw)
		if err != nil {
			return
		}
		bs, err := ImportJobs(evs)
		if err != nil {
			return
		}
		for _, jb := range bs {
			if !strings.HasPrefix(jb.Source, "openlineage:job/") && !strings.HasPrefix(jb.Source, "openlineage:dataset/") {
				t.Fatalf("source %q", jb.Source)
			}
			for _, e := range jb.Edges {
				if _, err := graph.ParseURN(string(e.From.Asset)); err != nil {
					t.Fatalf("bad URN from importer: %v", err)
				}
			}
		}
	})
}

// Files lists only event files, in a stable order, and Parse errors name the file they came from.
func TestFilesListsEventFilesAndParseNamesTheFile(t *testing.T) {
	dir := filepath.Join("testdata", "events")
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || !sort.StringsAreSorted(files) {
		t.Fatalf("files %v", files)
	}
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".json" && ext != ".ndjson" && ext != ".jsonl" {
			t.Errorf("listed %s", f)
		}
	}
	one := filepath.Join(dir, "nope.json")
	if got, err := Files(one); err == nil {
		t.Errorf("missing path listed %v", got)
	}
	if got, err := Files(files[0]); err != nil || len(got) != 1 || got[0] != files[0] {
		t.Errorf("a file lists itself: %v %v", got, err)
	}
	if _, err := Parse("x/run.json", []byte("{not json")); err == nil || !strings.HasPrefix(err.Error(), "x/run.json: ") {
		t.Errorf("parse error %v", err)
	}
	if evs, err := Parse("empty.json", nil); err != nil || len(evs) != 0 {
		t.Errorf("empty file: %v %v", evs, err)
	}
}
