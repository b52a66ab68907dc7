package impact_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	lscenario "github.com/dataworkers/dw/pkg/lineage/scenario"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/impact"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// 14:05 UTC on the day v12 is registered.
var now = time.Date(2026, 11, 29, 14, 5, 0, 0, time.UTC)

func scenario(t *testing.T, v int) *schema.Schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "scenario", fmt.Sprintf("api-usage-value.v%d.avsc", v)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(schema.Avro, string(b))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storyDir holds the story's real-format artifacts, shared by every package's tests and the demo.
var storyDir = filepath.Join("..", "..", "lineage", "testdata", "scenario")

var exampleCatalog = filepath.Join("..", "..", "..", "configs", "catalog.example.yaml")

// seeded loads the story graph (pkg/lineage/scenario) with usage-hourly-rollup pinned to
// api-usage-value at version pinned; 0 leaves the graph empty.
func seeded(t testing.TB, pinned int) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t)
	g := graph.New(st, func() time.Time { return now })
	if pinned == 0 {
		return g
	}
	dir := storyDir
	if pinned != 11 {
		// The resolver pins each subject at the version in its .avsc file name.
		dir = t.TempDir()
		entries, err := os.ReadDir(storyDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			raw, err := os.ReadFile(filepath.Join(storyDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			name := strings.Replace(e.Name(), "api-usage-value.v11.avsc", fmt.Sprintf("api-usage-value.v%d.avsc", pinned), 1)
			if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := lscenario.Load(ctx, g, dir, exampleCatalog); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestV12BreaksTheStatementPinnedToV11AndEverythingItFeeds(t *testing.T) {
	g := seeded(t, 11)
	v11, v12 := scenario(t, 11), scenario(t, 12)
	res := compat.Check(compat.Backward, compat.Strict, v12, []compat.Version{{Version: 11, Schema: v11}})
	a, err := impact.New(g, func() time.Time { return now }).Assess(context.Background(), impact.Request{
		Subject: "api-usage-value", OldVersion: 11, NewVersion: 12, Old: v11, New: v12, Compatibility: &res})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Compatible || !a.LineageKnown || len(a.Changes) != 1 || a.Changes[0].Path != "response_bytes" {
		t.Fatalf("assessment %+v", a)
	}
	by := map[graph.URN]impact.Reader{}
	for _, r := range a.Readers {
		by[r.URN] = r
		if r.Effect == "" || r.Severity == "" {
			t.Errorf("reader without effect or severity: %+v", r)
		}
	}
	stmt, ok := by[graph.FlinkStatementURN("usage-hourly-rollup")]
	if !ok {
		t.Fatalf("statement not found among %+v", a.Readers)
	}
	if stmt.PinnedVersion != 11 || !stmt.Breaks || stmt.Effect != "reads response_bytes (pinned to v11): NULL for v12 records; SUM(response_bytes) shrinks" {
		t.Fatalf("statement %+v", stmt)
	}
	model, workbook, dag, sink := graph.DBTURN("model.billing.fct_billable_egress"), graph.URN("bi:sigma/revenue-today"),
		graph.JobURN("airflow", "sync_metered_usage_to_stripe"), graph.URN("sink:stripe")
	table := graph.WarehouseURN("snowflake", "ANALYTICS", "USAGE", "USAGE_HOURLY")
	for _, u := range []graph.URN{graph.TableflowURN("usage-hourly"), table, model, workbook, dag, sink} {
		r, ok := by[u]
		if !ok || !r.Breaks {
			t.Fatalf("%s missing or not broken: %+v", u, r)
		}
	}
	// Readers of the same topic that never read response_bytes are not named.
	if _, ok := by[graph.FlinkStatementURN("api-errors-rollup")]; ok {
		t.Error("api-errors-rollup reads no response_bytes")
	}
	if r := by[table]; r.Effect != "column EGRESS_BYTES under-counts from the first v12 record" {
		t.Errorf("warehouse: %q", r.Effect)
	}
	if r := by[model]; !strings.Contains(r.Effect, "sum(coalesce(egress_bytes, 0))") || r.Severity != impact.Critical {
		t.Errorf("model: %+v", r)
	}
	job := by[dag]
	if job.NextRun == nil || !job.NextRun.Equal(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)) || job.Severity != impact.Critical ||
		!strings.Contains(job.Effect, "2026-11-29 23:00 UTC") {
		t.Errorf("job: %+v", job)
	}
	if s := by[sink]; s.Severity != impact.Critical {
		t.Errorf("sink severity %s (%s)", s.Severity, s.SeverityReason)
	}
	if w := by[workbook]; !w.Severity.AtLeast(impact.High) || !w.TableLevel {
		t.Errorf("workbook %+v", w)
	}
	if a.Verdict != fmt.Sprintf("compatible but breaks %d readers", a.Broken) || a.Broken < 7 {
		t.Fatalf("verdict %q, broken %d", a.Verdict, a.Broken)
	}
}

func TestStatementCreatedAfterTheChangeIsNotBroken(t *testing.T) {
	g := seeded(t, 12)
	a, err := impact.New(g, func() time.Time { return now }).Assess(context.Background(), impact.Request{
		Subject: "api-usage-value", OldVersion: 11, NewVersion: 12, Old: scenario(t, 11), New: scenario(t, 12)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Broken != 0 || a.Verdict != "compatible and safe" {
		t.Fatalf("%+v", a)
	}
	if len(a.Readers) == 0 || !strings.Contains(a.Readers[0].Effect, "created against v12") {
		t.Fatalf("readers %+v", a.Readers)
	}
}

func TestUnknownSubjectSaysLineageIsUnknown(t *testing.T) {
	g := seeded(t, 0)
	a, err := impact.New(g, time.Now).Assess(context.Background(), impact.Request{
		Subject: "api-usage-value", OldVersion: 11, NewVersion: 12, Old: scenario(t, 11), New: scenario(t, 12)})
	if err != nil {
		t.Fatal(err)
	}
	if a.LineageKnown || !strings.Contains(a.Verdict, "downstream unknown") || len(a.Notes) == 0 {
		t.Fatalf("%+v", a)
	}
}

func TestRequiredFieldRemovalMakesThePinnedStatementFail(t *testing.T) {
	g := seeded(t, 11)
	v11 := strings.Replace(readText(t, 11), `{"name": "response_bytes", "type": ["null", "long"], "default": null}`,
		`{"name": "response_bytes", "type": "long"}`, 1)
	old, err := schema.Parse(schema.Avro, v11)
	if err != nil {
		t.Fatal(err)
	}
	a, err := impact.New(g, func() time.Time { return now }).Assess(context.Background(), impact.Request{
		Subject: "api-usage-value", OldVersion: 11, NewVersion: 12, Old: old, New: scenario(t, 12)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range a.Readers {
		if r.URN == graph.FlinkStatementURN("usage-hourly-rollup") {
			if !strings.Contains(r.Effect, "the statement fails") {
				t.Fatalf("%+v", r)
			}
			return
		}
	}
	t.Fatalf("statement missing: %+v", a.Readers)
}

func readText(t *testing.T, v int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "scenario", fmt.Sprintf("api-usage-value.v%d.avsc", v)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func BenchmarkAssessScenario(b *testing.B) {
	ctx := context.Background()
	g := seeded(b, 11)
	load := func(v int) *schema.Schema {
		raw, err := os.ReadFile(filepath.Join("..", "testdata", "scenario", fmt.Sprintf("api-usage-value.v%d.avsc", v)))
		if err != nil {
			b.Fatal(err)
		}
		s, err := schema.Parse(schema.Avro, string(raw))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	req := impact.Request{Subject: "api-usage-value", OldVersion: 11, NewVersion: 12, Old: load(11), New: load(12)}
	a := impact.New(g, func() time.Time { return now })
	b.ResetTimer()
	for b.Loop() {
		res, err := a.Assess(ctx, req)
		if err != nil || res.Broken == 0 {
			b.Fatal(res.Broken, err)
		}
	}
}

type starResolver struct{}

func (starResolver) ResolveTable(_ context.Context, ref flinksql.TableRef, _ time.Time) (flinksql.Table, error) {
	cols := []flinksql.Column{{Name: "usage_id", Type: "STRING"}, {Name: "account_id", Type: "BIGINT"}, {Name: "response_bytes", Type: "BIGINT", Nullable: true}}
	switch ref.Table {
	case "api-usage":
		return flinksql.Table{Topic: "api-usage", ValueSubject: "api-usage-value", SchemaVersion: 11, Columns: cols}, nil
	case "usage-archive":
		return flinksql.Table{Topic: "usage-archive", Columns: cols}, nil
	}
	return flinksql.Table{}, flinksql.ErrTableNotFound
}

func TestSelectStarStatementIsFlaggedAndMissesTheNewField(t *testing.T) {
	g := seeded(t, 0)
	ctx := context.Background()
	b, err := flinksql.Import(ctx, flinksql.Statement{Name: "usage-archive", SQL: "INSERT INTO `usage-archive` SELECT * FROM `api-usage`"}, starResolver{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Import(ctx, b); err != nil {
		t.Fatal(err)
	}
	a, err := impact.New(g, func() time.Time { return now }).Assess(ctx, impact.Request{
		Subject: "api-usage-value", OldVersion: 11, NewVersion: 12, Old: scenario(t, 11), New: scenario(t, 12)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range a.Readers {
		if r.URN == graph.FlinkStatementURN("usage-archive") {
			if !r.SelectStar || r.PinnedVersion != 11 || !strings.Contains(r.Effect, "SELECT * was expanded at creation, so the new response_kib never reaches it") {
				t.Fatalf("%+v", r)
			}
			return
		}
	}
	t.Fatalf("statement not found: %+v", a.Readers)
}
