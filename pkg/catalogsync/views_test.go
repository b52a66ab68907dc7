package catalogsync_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/catalogsync"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

// A view's SQL is harvested onto its asset with its column lineage, so the view is a reader whose
// SQL is read like a dbt model's: a COALESCE over a column that goes null is named.
func TestWarehouseHarvestReadsViewSQLAndLineage(t *testing.T) {
	p := setup(t)
	db, err := sql.Open("sqlite3", p.cfg.Warehouse.DSN)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE VIEW egress_by_account AS SELECT account_id, SUM(COALESCE(egress_bytes, 0)) AS egress FROM usage_hourly WHERE requests > 0 GROUP BY account_id`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	rep := p.sync(t, catalogsync.SystemWarehouse)
	w := system(rep, catalogsync.SystemWarehouse)
	if w.Status != "synced" {
		t.Fatalf("warehouse = %+v", w)
	}
	ctx := context.Background()
	view := graph.URN("warehouse:sqlite/main.egress_by_account")
	a, err := p.g.Get(ctx, view)
	if err != nil || !strings.Contains(a.Attrs["sql"], "COALESCE(egress_bytes, 0)") || a.Attrs["table_kind"] != "view" {
		t.Fatalf("view asset %+v, %v", a, err)
	}
	edges, _, err := p.g.Neighbours(ctx, view, graph.Upstream)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range edges {
		got = append(got, e.From.String()+" -"+string(e.Kind)+"-> "+e.To.String())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		"warehouse:sqlite/main.usage_hourly#egress_bytes -aggregation-> warehouse:sqlite/main.egress_by_account#egress",
		"warehouse:sqlite/main.usage_hourly#requests -filter-> warehouse:sqlite/main.egress_by_account",
		"warehouse:sqlite/main.usage_hourly -reads-> warehouse:sqlite/main.egress_by_account",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("lineage lacks %s:\n%s", want, all)
		}
	}
	reads := impact.NullReads(a, "usage_hourly", "egress_bytes")
	if len(reads) == 0 || !strings.Contains(reads[0].Sentence, "every not_null test passes") {
		t.Errorf("view reads %+v", reads)
	}
	if len(w.Warnings) != 0 {
		t.Errorf("warnings: %v", w.Warnings)
	}
}
