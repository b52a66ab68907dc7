package plans

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/lineage/scenario"
	"github.com/dataworkers/dw/pkg/sqlparse"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

var storyAsset = graph.WarehouseURN("snowflake", "ANALYTICS", "USAGE", "USAGE_HOURLY")

func storySources(t *testing.T, withGraph bool) Sources {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t)
	now := func() time.Time { return time.Date(2026, 8, 14, 15, 30, 0, 0, time.UTC) }
	g := graph.New(st, now)
	if withGraph {
		if err := scenario.Load(ctx, g, "../lineage/testdata/scenario", "../../configs/catalog.example.yaml"); err != nil {
			t.Fatal(err)
		}
	}
	return Sources{Store: st, Graph: g, Config: &config.Config{}, Now: now}
}

func TestGenerateWithoutDiagnosisHoldsTheStripeDAGAndSaysWhy(t *testing.T) {
	src := storySources(t, true)
	inc := incidents.Incident{ID: 1, Asset: string(storyAsset), FailureMode: "null_rate", OpenedAt: time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC)}
	p, err := Generate(context.Background(), src, Request{Incident: inc, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Proposals) != 1 || p.Proposals[0].Class != config.ClassPauseJob || p.Proposals[0].Payload["dag_id"] != "sync_metered_usage_to_stripe" {
		t.Fatalf("proposals: %+v", p.Proposals)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "no diagnosis is recorded: run diagnose_incident first") {
		t.Errorf("notes: %v", p.Notes)
	}
	// Without a failing column the null_rate check is left out and said so; the rest stay on the incident asset.
	for _, c := range p.Checks {
		if c.Asset != string(storyAsset) || c.Supersedes != "" || c.Check == "null_rate" {
			t.Errorf("check %+v", c)
		}
	}
}

func TestGenerateOnAnAssetOutsideTheGraphNamesWhatIsMissing(t *testing.T) {
	src := storySources(t, false)
	raw, _ := json.Marshal(map[string]any{"input": diagnosis.Input{Column: "egress_bytes"}, "result": diagnosis.Result{Conclusion: "No upstream lineage is known"}})
	p, err := Generate(context.Background(), src, Request{Incident: incidents.Incident{ID: 2, Asset: "warehouse:sqlite/main.t", FailureMode: "null_rate"}, Diagnosis: string(raw)})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(p.Notes, "\n")
	if len(p.Proposals) != 0 || !strings.Contains(notes, "is not in the context graph") || !strings.Contains(notes, "the diagnosis names no schema change") {
		t.Errorf("plan %+v", p)
	}
	if len(p.Checks) != 3 || p.Checks[0].Check != "null_rate" || p.Checks[0].Columns[0] != "egress_bytes" {
		t.Errorf("checks %+v", p.Checks)
	}
	// A diagnosis in a shape this package cannot read degrades to a note, not an error.
	p, err = Generate(context.Background(), src, Request{Incident: incidents.Incident{ID: 2, Asset: "warehouse:sqlite/main.t"}, Diagnosis: "[1,2"})
	if err != nil || !strings.Contains(strings.Join(p.Notes, "\n"), "could not be read") {
		t.Errorf("%v %v", err, p.Notes)
	}
}

// FuzzRewriteStatement: any SQL either yields a draft that parses, or an error; never a panic.
func FuzzRewriteStatement(f *testing.F) {
	f.Add(rollupSQL)
	f.Add("INSERT INTO s SELECT t.response_bytes FROM `api-usage` t")
	f.Add("INSERT INTO `a`.`b`.`usage-hourly` SELECT response_bytes AS response_bytes FROM `api-usage` /* x */ WHERE response_bytes > 0")
	f.Add("SELECT 'response_bytes' FROM x")
	f.Add("INSERT INTO s SELECT u.payload.response_bytes, l.response_bytes, response_bytes FROM `api-usage` u JOIN limits l ON l.k = u.k")
	f.Add("INSERT INTO s WITH x AS (SELECT response_bytes FROM `api-usage`) SELECT response_bytes.f, response_bytes[1] FROM x")
	f.Fuzz(func(t *testing.T, sql string) {
		rep := Replacement{Removed: "response_bytes", With: "response_kib", Factor: "1024"}
		d, err := rewriteStatement(sql, []Replacement{rep}, "api-usage", "usage-hourly-v2", optionsHint([][2]string{{"scan.startup.mode", "timestamp"}}), nil)
		if err != nil {
			return
		}
		if _, err := sqlparse.Parse(d.SQL); err != nil {
			t.Fatalf("a draft was returned that does not parse: %v\n%s", err, d.SQL)
		}
		_, _ = checkStatement(d.SQL, map[string][]string{"api-usage": {"response_bytes", "response_kib"}})
	})
}

// A rename is read exactly as pkg/schema/diff.go states it ("<old> is renamed to <new> (…)"):
// a reader of "name" is not taken for a reader of "user_name".
func TestSchemaCauseMatchesRenamesExactly(t *testing.T) {
	rename := func(old, new string) diagnosis.FieldChange {
		return diagnosis.FieldChange{Path: new, Change: "renamed", OldName: old, NewName: new, Detail: "worded for people only: " + old + " → " + new}
	}
	cases := []struct {
		name   string
		ch     diagnosis.FieldChange
		reads  string
		cause  bool
		oldWas string // what renameOf reads as the old name ("" when the change is not a rename)
	}{
		{"reader of the old name", rename("user_name", "username"), "user_name", true, "user_name"},
		{"reader of a substring of it", rename("user_name", "username"), "name", false, "user_name"},
		{"reader of the new name", rename("user_name", "username"), "username", false, "user_name"},
		{"nested path", rename("a.b", "a.c"), "a.b", true, "a.b"},
		// The detail's wording never counts: a change without the structured old name is no rename.
		{"detail only", diagnosis.FieldChange{Path: "username", Change: "renamed", Detail: "user_name is renamed to username (by alias)"}, "user_name", false, ""},
		{"a removal", diagnosis.FieldChange{Path: "user_name", Change: "removed", OldName: "user_name"}, "user_name", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old, ok := renameOf(c.ch)
			if ok != (c.oldWas != "") || old != c.oldWas {
				t.Errorf("renameOf = %q, %v", old, ok)
			}
			dc := &draftContext{diag: &recorded{Input: diagnosis.Input{SchemaChanges: []diagnosis.SchemaChange{{Subject: "users-value", Version: 2,
				Changes: []diagnosis.FieldChange{c.ch}, Readers: []diagnosis.Reader{{URN: "flink:statement/x", ReadsFields: []string{c.reads}}}}}}}}
			if _, _, got := dc.schemaCause(); got != c.cause {
				t.Errorf("schemaCause = %v, want %v (notes %v)", got, c.cause, dc.notes)
			}
		})
	}
}

// The manifest is read once per plan, however many models are looked up.
func TestManifestIsReadOncePerPlan(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "target", "manifest.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	raw := `{"nodes": {"model.p.a": {"resource_type": "model", "raw_code": "select 1\n", "original_file_path": "models/a.sql"},
		"model.p.b": {"resource_type": "model", "raw_code": "select 2\n", "original_file_path": "models/b.sql"}}, "sources": {}}`
	if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	var c manifestCache
	if md, _, err := c.model(path, "model.p.a"); err != nil || md.Code != "select 1\n" {
		t.Fatalf("%+v %v", md, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if md, _, err := c.model(path, "model.p.b"); err != nil || md.Code != "select 2\n" || md.Path != "models/b.sql" {
		t.Fatalf("second model must come from the manifest already read: %+v %v", md, err)
	}
	if _, _, err := c.model(path, "model.p.nope"); err == nil || !strings.Contains(err.Error(), "has no node model.p.nope") {
		t.Errorf("unknown model: %v", err)
	}
}

// A job imported from OpenLineage is named job:<namespace>/<dag>.<task>; dispatch pauses only
// job:airflow/<dag_id>, so its hold is a note for a person, while the story's DAG is still paused.
func TestGenerateHoldsOnlyJobsWhoseURNNamesTheirDAG(t *testing.T) {
	src := storySources(t, true)
	task := graph.URN("job:airflow-prod/sync.push_task")
	p := planWithSinkJobs(t, src, "sink:x", graph.Asset{URN: task, Kind: graph.KindJob, Attrs: map[string]string{"orchestrator": "airflow", "dag_id": "sync"}})
	var pauses, byHand []string
	for _, pr := range p.Proposals {
		switch {
		case pr.ByHand != "":
			byHand = append(byHand, pr.ByHand)
			if pr.Routable() == "" || pr.Executor != ExecutorOwner {
				t.Errorf("a by-hand step must never be routed or run by Data Workers: %+v", pr)
			}
		case pr.Class == config.ClassPauseJob:
			pauses = append(pauses, pr.Target)
		}
	}
	if len(pauses) != 1 || pauses[0] != "job:airflow/sync_metered_usage_to_stripe" {
		t.Errorf("pause_job targets %v, want only the story's DAG", pauses)
	}
	// A graph attr alone never points a pause at another DAG: the task is held by hand.
	want := "Hold job:airflow-prod/sync.push_task (airflow) by hand before it pushes to sink:x: its next run is not known; no owner is recorded in the catalog"
	if len(byHand) != 1 || byHand[0] != want {
		t.Errorf("by-hand steps %q, want %q", byHand, want)
	}
}

// Jobs known only through OpenLineage: an Airflow task's parent run names its DAG, which is
// paused; a Spark job pushing to an external sink is a step for its owner, with its next run.
func TestGenerateHoldsOpenLineageJobs(t *testing.T) {
	src := storySources(t, true)
	task := graph.URN("job:airflow://scheduler.example:8080/carrier_billing.export_invoices")
	spark := graph.URN("job:spark://cluster-7/invoice_push")
	p := planWithSinkJobs(t, src, "sink:billing-api",
		graph.Asset{URN: task, Kind: graph.KindJob, Attrs: map[string]string{"openlineage_namespace": "airflow://scheduler.example:8080", "parent_job": "carrier_billing", "integration": "AIRFLOW"}},
		graph.Asset{URN: spark, Kind: graph.KindJob, Owners: []string{"payments-eng@example.com"}, Attrs: map[string]string{"openlineage_namespace": "spark://cluster-7", "integration": "SPARK"}})
	var dag, hand *Proposal
	for i, pr := range p.Proposals {
		if pr.Target == "job:airflow/carrier_billing" {
			dag = &p.Proposals[i]
		}
		if pr.Target == string(spark) {
			hand = &p.Proposals[i]
		}
	}
	if dag == nil || dag.Payload["dag_id"] != "carrier_billing" || dag.ByHand != "" || !strings.Contains(dag.Why, "its parent run is DAG carrier_billing") ||
		!strings.Contains(strings.Join(dag.BlastRadius, " "), string(task)) || CheckTarget(dag.Class, dag.Target, dag.Payload) != nil {
		t.Errorf("the Airflow task's DAG must be paused: %+v", dag)
	}
	if hand == nil || hand.ByHand == "" || !strings.Contains(hand.ByHand, "(spark) by hand before it pushes to sink:billing-api") ||
		!strings.Contains(hand.ByHand, "owned by payments-eng@example.com") || !strings.Contains(hand.Routable(), "by hand") {
		t.Errorf("the Spark job must be a by-hand step naming its owner: %+v", hand)
	}
}

// planWithSinkJobs adds jobs that read the story's table and push to sink, and generates the
// plan of an undiagnosed incident on the table (the holds only).
func planWithSinkJobs(t *testing.T, src Sources, sink graph.URN, jobs ...graph.Asset) Plan {
	t.Helper()
	ctx := context.Background()
	b := graph.Batch{Source: "test:openlineage", Assets: append(jobs, graph.Asset{URN: sink, Kind: graph.KindExternalSink})}
	for _, j := range jobs {
		b.Edges = append(b.Edges, graph.Edge{From: graph.FieldRef{Asset: storyAsset}, To: graph.FieldRef{Asset: j.URN}, Kind: graph.EdgeReads},
			graph.Edge{From: graph.FieldRef{Asset: j.URN}, To: graph.FieldRef{Asset: sink}, Kind: graph.EdgeSyncsTo})
	}
	if _, err := src.Graph.Import(ctx, b); err != nil {
		t.Fatal(err)
	}
	inc := incidents.Incident{ID: 1, Asset: string(storyAsset), FailureMode: "null_rate", OpenedAt: time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC)}
	p, err := Generate(ctx, src, Request{Incident: inc, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
