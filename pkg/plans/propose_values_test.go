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
)

// valueDiagnosis is a recorded diagnosis whose top cause is a version that only brought a new
// value of status, read by model.
func valueDiagnosis(t *testing.T, model string) string {
	t.Helper()
	sc := diagnosis.SchemaChange{Subject: "parcels-value", Version: 4, FirstSeen: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC),
		Changes:   []diagnosis.FieldChange{{Path: "status", Change: "enum_symbols_added"}},
		OnPath:    []string{"status"},
		Readers:   []diagnosis.Reader{{URN: model, ReadsFields: []string{"status"}}},
		NewValues: []diagnosis.ValuesSeen{{Field: "status", Values: []string{"DELIVERED_LOCKER"}}}}
	raw, err := json.Marshal(recorded{
		Input:  diagnosis.Input{Column: "parcels", Onset: time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC), SchemaChanges: []diagnosis.SchemaChange{sc}},
		Result: diagnosis.Result{Candidates: []diagnosis.Candidate{{Kind: "schema_change", Source: "schema:parcels-value v4"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func writeManifest(t *testing.T, model, path, code string) string {
	t.Helper()
	dir := t.TempDir()
	m := map[string]any{"nodes": map[string]any{model: map[string]any{"resource_type": "model", "raw_code": code, "original_file_path": path}}}
	raw, _ := json.Marshal(m)
	if err := os.MkdirAll(filepath.Join(dir, "target"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "target", "manifest.json")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValueChangeWidensTheFilterAndRestoresNoSchema(t *testing.T) {
	src := storySources(t, false)
	model := "model.logistics.fct_delivered_parcels"
	code := "select depot, count(*) as parcels\nfrom {{ ref('stg_parcels') }}\nwhere status in ('DELIVERED', 'DELIVERED_NEIGHBOUR')\ngroup by depot\n"
	src.Config = &config.Config{DBT: &config.DBT{ManifestPath: writeManifest(t, model, "models/fct_delivered_parcels.sql", code)}}
	inc := incidents.Incident{ID: 7, Asset: "dbt:" + model, FailureMode: "volume", OpenedAt: time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)}
	p, err := Generate(context.Background(), src, Request{Incident: inc, Diagnosis: valueDiagnosis(t, "dbt:"+model), Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Proposals) != 1 {
		t.Fatalf("want one dbt step, got %+v (notes %v)", p.Proposals, p.Notes)
	}
	st := p.Proposals[0]
	if st.Class != config.ClassDBTCode || st.Target != "dbt:"+model {
		t.Fatalf("step: %+v", st)
	}
	diff, _ := st.Payload["diff"].(string)
	if !strings.Contains(diff, "+where status in ('DELIVERED', 'DELIVERED_NEIGHBOUR', 'DELIVERED_LOCKER')") ||
		!strings.Contains(diff, "-where status in ('DELIVERED', 'DELIVERED_NEIGHBOUR')") {
		t.Errorf("diff:\n%s", diff)
	}
	if got, _, err := ApplyDiff(code, diff); err != nil || !strings.Contains(got, "'DELIVERED_LOCKER')") {
		t.Errorf("diff does not apply: %v\n%s", err, got)
	}
	if !strings.HasPrefix(st.Why, "no schema restore needed: parcels-value v4 changes only the values of status") {
		t.Errorf("why: %s", st.Why)
	}
	steps, _ := st.Payload["steps"].([]string)
	if len(steps) != 2 || !strings.HasPrefix(steps[1], "dbt build -s fct_delivered_parcels+ from 2026-03-02 00:00 UTC") {
		t.Errorf("steps (the rerun): %v", steps)
	}
	for _, pr := range p.Proposals {
		if pr.Class == config.ClassRegisterSchema || pr.Class == config.ClassFlinkStatement {
			t.Errorf("a value change restores no schema and rewrites no statement: %+v", pr)
		}
	}
	hasVolume := false
	for _, c := range p.Checks {
		hasVolume = hasVolume || c.Check == "volume" && c.Asset == inc.Asset
	}
	if !hasVolume {
		t.Errorf("the rows come back: volume must be re-checked: %+v", p.Checks)
	}
}

func TestValueChangeLeavesAnUnmechanicalFilterToTheOwner(t *testing.T) {
	for name, code := range map[string]string{
		"range":    "select * from {{ ref('stg') }} where status like 'DELIVERED%'\n",
		"twice":    "select * from a where status = 'DELIVERED' union all select * from b where status = 'DELIVERED'\n",
		"excludes": "select * from {{ ref('stg') }} where status not in ('LOST')\n",
	} {
		t.Run(name, func(t *testing.T) {
			src := storySources(t, false)
			model := "model.logistics.fct_delivered_parcels"
			src.Config = &config.Config{DBT: &config.DBT{ManifestPath: writeManifest(t, model, "models/f.sql", code)}}
			inc := incidents.Incident{ID: 7, Asset: "dbt:" + model, FailureMode: "volume", OpenedAt: time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)}
			p, err := Generate(context.Background(), src, Request{Incident: inc, Diagnosis: valueDiagnosis(t, "dbt:"+model), Actor: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Proposals) != 1 || p.Proposals[0].Payload["diff"] != nil {
				t.Fatalf("want one step without a diff: %+v", p.Proposals)
			}
			st := p.Proposals[0]
			if !strings.HasPrefix(st.Title, "Decide whether fct_delivered_parcels counts DELIVERED_LOCKER") || !strings.Contains(st.Why, "the owner's call") ||
				!strings.Contains(st.Why, "no schema restore needed") {
				t.Errorf("step: %+v", st)
			}
		})
	}
}

func TestWidenKeepsQuotingAndAlias(t *testing.T) {
	got, expr, why := widen("WHERE o.STATUS = 'PAID' AND x > 1", "status", []string{"PAID_LATER", "O'NEIL"})
	if why != "" || got != "WHERE o.STATUS IN ('PAID', 'PAID_LATER', 'O''NEIL') AND x > 1" || expr != "o.STATUS = 'PAID'" {
		t.Errorf("got %q %q %q", got, expr, why)
	}
	if _, _, why := widen("where status_code = 'A'", "status", []string{"B"}); why == "" {
		t.Error("status_code is not status")
	}
}

func FuzzWiden(f *testing.F) {
	f.Add("where status in ('A', 'B')", "status", "C")
	f.Add("WHERE t.status = 'it''s' AND status <> 'X'", "status", "D")
	f.Add("where status not in ('A') or status = ", "status", "'")
	f.Fuzz(func(t *testing.T, code, field, value string) {
		if field == "" {
			return
		}
		got, expr, why := widen(code, field, []string{value})
		if why != "" {
			if got != code {
				t.Fatalf("refused widening changed the code: %q -> %q", code, got)
			}
			return
		}
		if expr == "" || !strings.Contains(got, "'"+strings.ReplaceAll(value, "'", "''")+"'") {
			t.Fatalf("widened %q to %q without the value %q", code, got, value)
		}
	})
}

// A sink connector lands the records, so no statement reads the subject and the diagnosis has
// no reader; the incident is on the table a dbt model builds. The model and its table are one
// asset: the model's filter is widened.
func TestValueChangeWithoutAStatementWidensTheModelThatBuildsTheIncidentTable(t *testing.T) {
	src := storySources(t, false)
	model := "model.marketplace.fct_seller_commissions"
	table := graph.WarehouseURN("snowflake", "ANALYTICS", "MARTS", "FCT_SELLER_COMMISSIONS")
	if _, err := src.Graph.Import(context.Background(), graph.Batch{Source: "test:dbt",
		Assets: []graph.Asset{{URN: graph.URN("dbt:" + model), Kind: graph.KindDBTModel, Name: "fct_seller_commissions"},
			{URN: table, Kind: graph.KindWarehouseTable, Name: "ANALYTICS.MARTS.FCT_SELLER_COMMISSIONS"}},
		Edges: []graph.Edge{{From: graph.URN("dbt:" + model).Field(""), To: table.Field(""), Kind: graph.EdgeMaterializes}}}); err != nil {
		t.Fatal(err)
	}
	code := "select seller_id, fee_eur_micros\nfrom {{ source('landing', 'deliveries') }}\nwhere status in ('DELIVERED', 'PICKED_UP')\n"
	src.Config = &config.Config{DBT: &config.DBT{ManifestPath: writeManifest(t, model, "models/fct_seller_commissions.sql", code)}}
	var rec recorded
	if err := json.Unmarshal([]byte(valueDiagnosis(t, "dbt:"+model)), &rec); err != nil {
		t.Fatal(err)
	}
	rec.Input.SchemaChanges[0].Readers = nil
	raw, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	inc := incidents.Incident{ID: 8, Asset: string(table), FailureMode: "volume", OpenedAt: time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)}
	p, err := Generate(context.Background(), src, Request{Incident: inc, Diagnosis: string(raw), Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var diff string
	for _, pr := range p.Proposals {
		if pr.Class == config.ClassDBTCode && pr.Target == "dbt:"+model {
			diff, _ = pr.Payload["diff"].(string)
		}
	}
	if !strings.Contains(diff, "+where status in ('DELIVERED', 'PICKED_UP', 'DELIVERED_LOCKER')") {
		t.Errorf("no widened filter for the model that builds the table: %+v (notes %v)", p.Proposals, p.Notes)
	}
}
