package lifecycle

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
	"github.com/dataworkers/dw/pkg/plans"
)

// A volume incident on a dbt model whose diagnosis names a version that only added a status
// value: propose_remediation's plan widens the model's filter, reruns it, restores no schema,
// and the plan is stored on the incident.
func TestProposeForANewValueWidensTheFilter(t *testing.T) {
	ctx := context.Background()
	e := newEstate(t)
	model := "model.logistics.fct_delivered_parcels"
	dir := t.TempDir()
	code := "select depot, count(*) as parcels\nfrom {{ ref('stg_parcels') }}\nwhere status = 'DELIVERED'\ngroup by depot\n"
	if err := os.MkdirAll(filepath.Join(dir, "target"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "models", "fct_delivered_parcels.sql"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest, _ := json.Marshal(map[string]any{"nodes": map[string]any{model: map[string]any{
		"resource_type": "model", "raw_code": "stale", "original_file_path": "models/fct_delivered_parcels.sql"}}})
	mp := filepath.Join(dir, "target", "manifest.json")
	if err := os.WriteFile(mp, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	e.cfg.DBT = &config.DBT{ManifestPath: mp}
	inc, err := e.incs.Open(ctx, "dbt:"+model, "volume", "sev2", "parcels 30% below the usual rate", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	sc := diagnosis.SchemaChange{Subject: "parcels-value", Version: 4, FirstSeen: e.now().Add(-3 * time.Hour),
		Changes: []diagnosis.FieldChange{{Path: "status", Change: "enum_symbols_added"}}, OnPath: []string{"status"},
		Readers:   []diagnosis.Reader{{URN: "dbt:" + model, ReadsFields: []string{"status"}}},
		NewValues: []diagnosis.ValuesSeen{{Field: "status", Values: []string{"DELIVERED_LOCKER"}}}}
	raw, err := json.Marshal(map[string]any{
		"input":  diagnosis.Input{Column: "parcels", Onset: e.now().Add(-2 * time.Hour), SchemaChanges: []diagnosis.SchemaChange{sc}},
		"result": diagnosis.Result{Candidates: []diagnosis.Candidate{{Cause: "v4 added DELIVERED_LOCKER", Kind: "schema_change", Source: "schema:parcels-value v4"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.incs.RecordDiagnosis(ctx, inc.ID, string(raw), "v4 added DELIVERED_LOCKER", "test"); err != nil {
		t.Fatal(err)
	}
	life := e.service(t, nil)
	p, err := life.Propose(ctx, ProposeInput{IncidentID: inc.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Proposals) != 1 || p.Proposals[0].Class != config.ClassDBTCode {
		t.Fatalf("proposals: %+v notes %v", p.Proposals, p.Notes)
	}
	diff, _ := p.Proposals[0].Payload["diff"].(string)
	if !strings.Contains(diff, "+where status in ('DELIVERED', 'DELIVERED_LOCKER')") {
		t.Errorf("the diff is against the project's file, widened:\n%s", diff)
	}
	if !strings.Contains(p.Proposals[0].Why, "no schema restore needed") || !strings.Contains(strings.Join(p.Notes, "\n"), "no schema restore needed") {
		t.Errorf("why %q notes %v", p.Proposals[0].Why, p.Notes)
	}
	stored, err := plans.Latest(ctx, e.st, inc.ID)
	if err != nil || stored.ID != p.ID {
		t.Fatalf("stored plan %+v %v", stored, err)
	}
}
