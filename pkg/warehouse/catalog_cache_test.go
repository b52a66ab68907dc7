package warehouse_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// TestResolveSeesCatalogChanges: a cached table is described again as soon as its definition
// changes through another connection — a new column, a new index, a dropped table — and a
// caller changing its answer does not change the next one. It holds for Resolve on the handle and
// in a snapshot (where the cached answer's marker is read inside the snapshot's transaction).
func TestResolveSeesCatalogChanges(t *testing.T) {
	ctx := context.Background()
	for name, open := range engines(t) {
		for _, inSnapshot := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/snapshot=%v", name, inSnapshot), func(t *testing.T) {
				rw, handle := open(t)
				w := resolver(func(ctx context.Context, table string) (*warehouse.TableInfo, error) {
					if !inSnapshot {
						return handle.Resolve(ctx, table)
					}
					snap, err := handle.Snapshot(ctx)
					if err != nil {
						return nil, err
					}
					defer snap.Close()
					return snap.Resolve(ctx, table)
				})
				resolveSeesCatalogChanges(t, ctx, name, rw, w)
			})
		}
	}
}

// resolver is Resolve on a handle or in a snapshot.
type resolver func(ctx context.Context, table string) (*warehouse.TableInfo, error)

func (r resolver) Resolve(ctx context.Context, table string) (*warehouse.TableInfo, error) {
	return r(ctx, table)
}

func resolveSeesCatalogChanges(t *testing.T, ctx context.Context, name string, rw *sql.DB, w resolver) {
	ti, err := w.Resolve(ctx, "usage_hourly")
	if err != nil {
		t.Fatal(err)
	}
	if len(ti.Columns) != 4 || ti.Indexed("egress_bytes") {
		t.Fatalf("first resolve: columns %v, indexed %v", ti.Columns, ti.IndexedColumns)
	}
	ti.Columns[0].Name = "scribbled"
	ti.IndexedColumns = append(ti.IndexedColumns, "scribbled")
	again, err := w.Resolve(ctx, "usage_hourly")
	if err != nil {
		t.Fatal(err)
	}
	if again.Columns[0].Name != "usage_id" || again.Indexed("scribbled") {
		t.Fatalf("a caller's change reached the cache: %v %v", again.Columns, again.IndexedColumns)
	}
	if _, err := rw.Exec(`ALTER TABLE usage_hourly ADD COLUMN region TEXT`); err != nil {
		t.Fatal(err)
	}
	ti, err = w.Resolve(ctx, "usage_hourly")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ti.Column("region"); err != nil {
		t.Fatalf("added column not seen: %v", err)
	}
	if _, err := rw.Exec(`CREATE INDEX usage_hourly_egress ON usage_hourly (egress_bytes)`); err != nil {
		t.Fatal(err)
	}
	if ti, err = w.Resolve(ctx, "usage_hourly"); err != nil || !ti.Indexed("egress_bytes") {
		t.Fatalf("new index not seen: %v, %v", ti, err)
	}
	if _, err := rw.Exec(`DROP INDEX usage_hourly_egress`); err != nil {
		t.Fatal(err)
	}
	if ti, err = w.Resolve(ctx, "usage_hourly"); err != nil || ti.Indexed("egress_bytes") {
		t.Fatalf("dropped index still seen: %v, %v", ti, err)
	}
	// One index dropped and another made in one transaction: as many indexes as before.
	if _, err := rw.Exec(`CREATE INDEX usage_hourly_egress ON usage_hourly (egress_bytes)`); err != nil {
		t.Fatal(err)
	}
	if ti, err = w.Resolve(ctx, "usage_hourly"); err != nil || !ti.Indexed("egress_bytes") {
		t.Fatalf("index made again not seen: %v, %v", ti, err)
	}
	swap, err := rw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := swap.Exec(`DROP INDEX usage_hourly_egress`); err != nil {
		t.Fatal(err)
	}
	if _, err := swap.Exec(`CREATE INDEX usage_hourly_account ON usage_hourly (account_id)`); err != nil {
		t.Fatal(err)
	}
	if err := swap.Commit(); err != nil {
		t.Fatal(err)
	}
	if ti, err = w.Resolve(ctx, "usage_hourly"); err != nil || ti.Indexed("egress_bytes") || !ti.Indexed("account_id") {
		t.Fatalf("an index swapped for another not seen: %v, %v", ti, err)
	}
	if name == "postgres" {
		if _, err := rw.Exec(`ALTER TABLE usage_hourly ALTER COLUMN region SET NOT NULL`); err != nil {
			t.Fatal(err)
		}
		if ti, err = w.Resolve(ctx, "usage_hourly"); err != nil {
			t.Fatal(err)
		}
		if c, _ := ti.Column("region"); c.Nullable {
			t.Fatalf("SET NOT NULL not seen: %+v", c)
		}
		if _, err := rw.Exec(`INSERT INTO usage_hourly VALUES ('u-1', 1, '2025-12-01 00:00:00', 10, 'eu'), ('u-2', 2, '2025-12-01 01:00:00', NULL, 'us')`); err != nil {
			t.Fatal(err)
		}
		if _, err := rw.Exec(`ANALYZE usage_hourly`); err != nil {
			t.Fatal(err)
		}
		if ti, err = w.Resolve(ctx, "usage_hourly"); err != nil || ti.RowCount == nil || *ti.RowCount != 2 {
			t.Fatalf("ANALYZE's row estimate not seen: %+v, %v", ti, err)
		}
	}
	if _, err := rw.Exec(`DROP TABLE usage_hourly`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Resolve(ctx, "usage_hourly"); !errors.Is(err, warehouse.ErrNoSuchTable) {
		t.Fatalf("resolve after DROP = %v, want ErrNoSuchTable", err)
	}
}

// TestResolveSeesSQLiteReanalyze: a second ANALYZE rewrites sqlite_stat1 without a schema
// change; the cached row estimate follows it.
func TestResolveSeesSQLiteReanalyze(t *testing.T) {
	ctx := context.Background()
	rw, w := engines(t)["sqlite"](t)
	if _, err := rw.Exec(`INSERT INTO usage_hourly VALUES ('u-1', 1, '2025-12-01 00:00:00', 10); ANALYZE`); err != nil {
		t.Fatal(err)
	}
	ti, err := w.Resolve(ctx, "usage_hourly")
	if err != nil || ti.RowCount == nil || *ti.RowCount != 1 {
		t.Fatalf("first estimate: %+v, %v", ti, err)
	}
	if _, err := rw.Exec(`INSERT INTO usage_hourly VALUES ('u-2', 2, '2025-12-01 01:00:00', 20), ('u-3', 3, '2025-12-01 02:00:00', 30); ANALYZE`); err != nil {
		t.Fatal(err)
	}
	if ti, err = w.Resolve(ctx, "usage_hourly"); err != nil || ti.RowCount == nil || *ti.RowCount != 3 {
		t.Fatalf("estimate after the second ANALYZE: %+v, %v", ti, err)
	}
}
