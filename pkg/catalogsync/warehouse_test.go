package catalogsync_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/catalogsync"
)

// A view whose table was dropped fails SQLite's whole bulk column read: the harvest then describes
// each table on its own, so only the broken view is lost, with a warning.
func TestWarehouseHarvestFallsBackPerTableWhenTheBulkReadFails(t *testing.T) {
	p := setup(t)
	db, err := sql.Open("sqlite3", p.cfg.Warehouse.DSN)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TABLE gone (x INTEGER)`, `CREATE VIEW broken AS SELECT x FROM gone`, `DROP TABLE gone`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	rep := p.sync(t, catalogsync.SystemWarehouse)
	w := system(rep, catalogsync.SystemWarehouse)
	warn := strings.Join(w.Warnings, "\n")
	if w.Status != "synced" || w.Assets != 2 || !strings.Contains(warn, "bulk column read failed") || !strings.Contains(warn, "table main.broken") {
		t.Fatalf("warehouse = %+v", w)
	}
	a, err := p.g.Get(context.Background(), "warehouse:sqlite/main.accounts")
	if err != nil || len(a.Fields) != 2 || a.Attrs["primary_key"] != "account_id" {
		t.Errorf("accounts = %+v, %v", a, err)
	}
}
