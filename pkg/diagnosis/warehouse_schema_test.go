package diagnosis

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// A staging table loses a column in a migration; the fact table built from it starts reading
// zeros there. dw-quality's schema check recorded the drop (and, earlier, a retype on a lookup
// table the fact also reads): the diagnosis ranks the drop on the failing column's lineage first,
// by the same rule as a registry version, and says which evidence supports it.
func TestDiagnosisRanksAWarehouseColumnDrop(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "wh.db")
	rw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	for _, stmt := range []string{
		`CREATE TABLE stg_parcels (parcel_id TEXT NOT NULL, declared_value_cents BIGINT, scanned_at TEXT NOT NULL)`,
		`CREATE TABLE ref_tariffs (code TEXT NOT NULL, rate_cents BIGINT, scanned_at TEXT NOT NULL)`,
		`CREATE TABLE fct_parcels (parcel_id TEXT NOT NULL, declared_value_cents BIGINT, scanned_at TEXT NOT NULL)`,
	} {
		if _, err := rw.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	wh, err := warehouse.Connect(&config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 10 * time.Second, MaxSampleRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	clock := time.Date(2026, 8, 14, 13, 0, 0, 0, time.UTC)
	checker := quality.NewChecker(wh, quality.NewHistory(f.st), func() time.Time { return clock })
	schemaRun := func(table string) string {
		t.Helper()
		w, err := quality.ParseWindow(quality.WindowSpec{}, clock)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := checker.Run(ctx, quality.Request{Table: table, TimestampColumn: "scanned_at", Window: w, Checks: []quality.Check{quality.SchemaChanges}})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Asset
	}
	stg, ref, fct := graph.URN(schemaRun("stg_parcels")), graph.URN(schemaRun("ref_tariffs")), graph.URN(schemaRun("fct_parcels"))
	if _, err := f.g.Import(ctx, graph.Batch{Source: "dbt:manifest/parcels", Edges: []graph.Edge{
		{From: stg.Field("declared_value_cents"), To: fct.Field("declared_value_cents"), Kind: graph.EdgeIdentity},
		{From: graph.FieldRef{Asset: ref}, To: graph.FieldRef{Asset: fct}, Kind: graph.EdgeJoin},
	}}); err != nil {
		t.Fatal(err)
	}

	// 14:00: rate_cents becomes TEXT; 15:05: declared_value_cents is dropped.
	clock = time.Date(2026, 8, 14, 14, 0, 0, 0, time.UTC)
	if _, err := rw.Exec(`ALTER TABLE ref_tariffs DROP COLUMN rate_cents; ALTER TABLE ref_tariffs ADD COLUMN rate_cents TEXT`); err != nil {
		t.Fatal(err)
	}
	schemaRun("ref_tariffs")
	clock = time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC)
	if _, err := rw.Exec(`ALTER TABLE stg_parcels DROP COLUMN declared_value_cents`); err != nil {
		t.Fatal(err)
	}
	schemaRun("stg_parcels")

	inc := f.history(t, fct, ModeColumn, "zero_rate", "declared_value_cents")
	rep := f.diagnose(t, inc, Live{}, &config.Config{})
	var kinds []string
	for _, c := range rep.Result.Candidates {
		kinds = append(kinds, c.Kind+": "+c.Cause)
	}
	if len(rep.Result.Candidates) < 2 {
		t.Fatalf("candidates: %q (unchecked %q)", kinds, rep.Result.Unchecked)
	}
	top, second := rep.Result.Candidates[0], rep.Result.Candidates[1]
	if top.Kind != "warehouse_schema_change" || !strings.Contains(top.Cause, "declared_value_cents removed (was BIGINT)") ||
		!slices.Equal(top.Supports, []string{KindTiming, KindLineage, KindMode}) || top.Score != 3 {
		t.Fatalf("top: %+v (all %q)", top, kinds)
	}
	if ev := strings.Join(top.Evidence, "\n"); !strings.Contains(ev, "declared_value_cents lies on the upstream lineage of declared_value_cents (1 hops)") ||
		!strings.Contains(ev, "explains a column failure") || !strings.Contains(ev, "detected it at 15:05 UTC") {
		t.Errorf("top evidence:\n%s", ev)
	}
	// Same score: the retype ranks after the drop because it is further from the onset.
	if second.Kind != "warehouse_schema_change" || !strings.Contains(second.Cause, "rate_cents retyped from BIGINT to TEXT") || second.Score != 3 ||
		!strings.Contains(strings.Join(second.Evidence, "\n"), "upstream of declared_value_cents at table level") {
		t.Errorf("second: %+v", second)
	}
	if !strings.HasPrefix(rep.Result.Conclusion, "Most likely: main.stg_parcels in the warehouse: declared_value_cents removed") {
		t.Errorf("conclusion: %s", rep.Result.Conclusion)
	}
}

// A change detected long before the onset, or only an added column, is no candidate.
func TestWarehouseChangesOutsideTheLookBackAreNotCandidates(t *testing.T) {
	onset := time.Date(2026, 8, 14, 15, 0, 0, 0, time.UTC)
	in := Input{FailureMode: ModeNullRate, Column: "c", Onset: onset, LookBack: 24 * time.Hour}
	old := WarehouseSchemaChange{Asset: "warehouse:sqlite/main.t", DetectedAt: onset.Add(-3 * 24 * time.Hour),
		Changes: []quality.ColumnChange{{Column: "c", Change: "made_nullable"}}, OnPath: []string{"c"}}
	c := judgeWarehouseSchema(in, old)
	if slices.Contains(c.Supports, KindTiming) || !slices.Contains(c.Supports, KindMode) {
		t.Errorf("three days before: %+v", c)
	}
	if (quality.ColumnChange{Change: "added"}).Harmful() || !(quality.ColumnChange{Change: "retyped"}).Harmful() {
		t.Error("harmful: an addition breaks no reader, a retype may")
	}
}
