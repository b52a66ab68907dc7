package graph

import (
	"context"
	"testing"
	"time"
)

// A PostgreSQL mart built by a dbt model: the nightly export job reads the model (its manifest
// names it), not the table. A blast radius from the table still reaches the job.
func TestBlastRadiusFromATableReachesWhatReadsTheModelThatBuildsIt(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC))
	model := DBTURN("model.logistics.fct_parcel_weights")
	table := WarehouseURN("postgres", "analytics", "marts", "fct_parcel_weights")
	job := JobURN("airflow", "carrier_invoice_export")
	b := Batch{Source: "test:dbt",
		Assets: []Asset{{URN: model, Kind: KindDBTModel, Name: "fct_parcel_weights"},
			{URN: table, Kind: KindWarehouseTable, Name: "analytics.marts.fct_parcel_weights"},
			{URN: job, Kind: KindJob, Name: "carrier_invoice_export", Schedule: "30 2 * * *", Owners: []string{"invoicing@example.com"}}},
		Fields: []Field{{Asset: model, Path: "total_grams"}, {Asset: table, Path: "total_grams"}, {Asset: job, Path: "billed_kg"}},
		Edges: []Edge{{From: model.Field(""), To: table.Field(""), Kind: EdgeMaterializes},
			{From: model.Field("total_grams"), To: job.Field("billed_kg"), Kind: EdgeTransformation, Transformation: "total_grams / 1000.0"}}}
	if _, err := g.Import(ctx, b); err != nil {
		t.Fatal(err)
	}
	br, err := g.BlastRadius(ctx, BlastRadiusRequest{Asset: table, Fields: []string{"total_grams"}, ChangeType: ChangeColumnDrop})
	if err != nil {
		t.Fatal(err)
	}
	if len(br.SameAsset) != 1 || br.SameAsset[0] != model {
		t.Fatalf("same asset %v", br.SameAsset)
	}
	if len(br.FieldLevel) != 1 || br.FieldLevel[0].URN != job || br.FieldLevel[0].Fields[0] != "billed_kg" {
		t.Fatalf("field level %+v / table level %+v", br.FieldLevel, br.TableLevel)
	}
	if len(br.ScheduledJobs) != 1 || br.ScheduledJobs[0].NextRun == nil || br.Total != 1 {
		t.Fatalf("jobs %+v total %d", br.ScheduledJobs, br.Total)
	}
	// The model itself is the changed asset, not an impact.
	for _, im := range append(br.FieldLevel, br.TableLevel...) {
		if im.URN == model || im.URN == table {
			t.Errorf("%s reported as its own impact", im.URN)
		}
	}
}
