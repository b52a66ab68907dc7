package graph

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
)

// indexDefs lists the definitions of the graph tables' secondary indexes (from pg_indexes on
// PostgreSQL, where no import defers them).
func indexDefs(t *testing.T, g *Graph) []string {
	t.Helper()
	q := `SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
		AND tbl_name IN ('graph_asset_claims', 'graph_fields', 'graph_edges') ORDER BY name`
	if g.st.Dialect() == store.PostgreSQL {
		q = `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()
		AND tablename IN ('graph_asset_claims', 'graph_fields', 'graph_edges') ORDER BY indexname`
	}
	rows, err := g.st.DB.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// Deferred indexes are gone inside the transaction once the import has put enough rows (not
// before), come back exactly as defined on rebuild, and come back with the rows when the
// transaction fails; a table holding more rows than the import writes keeps its indexes.
func TestDeferredIndexesComeBackAsDefined(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC))
	if g.st.Dialect() != store.SQLite {
		t.Skip("only SQLite imports defer their indexes")
	}
	before := indexDefs(t, g)
	if len(before) < 5 {
		t.Fatalf("graph indexes = %q", before)
	}
	if _, err := g.Upsert(ctx, Batch{Source: "s", Assets: []Asset{{URN: "warehouse:db/a"}, {URN: "warehouse:db/b"}}}); err != nil {
		t.Fatal(err)
	}
	count := func(tx *sql.Tx) (n int) {
		if err := tx.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name = 'graph_edges'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	boom := errors.New("import failed")
	err := g.st.Write(ctx, func(tx *sql.Tx) error {
		// graph_asset_claims holds 2 rows: an import of 1 keeps its index.
		d, err := newIndexDeferrer(ctx, tx, 5)
		if err != nil {
			return err
		}
		for _, g := range []struct {
			table string
			n     int
		}{{"graph_edges", 4}, {"graph_asset_claims", 1}} {
			if err := d.grow(ctx, g.table, g.n); err != nil {
				return err
			}
		}
		if n := count(tx); n == 0 {
			t.Errorf("graph_edges indexes dropped after 4 rows of 5")
		}
		for _, n := range []int{10, 20} { // the second time, nothing is left to drop
			if err := d.grow(ctx, "graph_edges", n); err != nil {
				return err
			}
		}
		if n := count(tx); n != 0 {
			t.Errorf("graph_edges indexes inside the transaction = %d, want 0", n)
		}
		var claims int
		if err := tx.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'graph_asset_claims_by_source'`).Scan(&claims); err != nil || claims != 1 {
			t.Errorf("claims index of a table larger than the import: %d, %v", claims, err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if after := indexDefs(t, g); !slices.Equal(after, before) {
		t.Fatalf("after a failed import: %q, want %q", after, before)
	}
	if err := g.st.Write(ctx, func(tx *sql.Tx) error {
		d, err := newIndexDeferrer(ctx, tx, 5)
		if err != nil {
			return err
		}
		if err := d.grow(ctx, "graph_edges", 10); err != nil {
			return err
		}
		return d.rebuild(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	if after := indexDefs(t, g); !slices.Equal(after, before) {
		t.Fatalf("after rebuild: %q, want %q", after, before)
	}
}

// An import large enough to defer the indexes writes the same graph as any other: re-imported
// with part of it gone, exactly that part is marked stale, and the traversal indexes are back.
func TestBulkImportThenReimport(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC))
	before := indexDefs(t, g)
	const n = bulkIndexMinRows + 100
	fill := func(skip int) func(put func(Batch) error) error {
		return func(put func(Batch) error) error {
			var b Batch
			for i := 0; i < n; i++ {
				if i%1000 == skip {
					continue
				}
				b.Edges = append(b.Edges, fe(fmt.Sprintf("warehouse:db/T%d#c%d", i/10, i%10), fmt.Sprintf("warehouse:db/T%d#c%d", i/10+1, i%10), EdgeIdentity))
				if len(b.Edges) == 5000 {
					if err := put(b); err != nil {
						return err
					}
					b = Batch{}
				}
			}
			return put(b)
		}
	}
	res, err := g.ImportBatches(ctx, "dbt:manifest/big", time.Time{}, fill(-1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Edges != n {
		t.Fatalf("first import = %+v", res)
	}
	if after := indexDefs(t, g); !slices.Equal(after, before) {
		t.Fatalf("indexes after a bulk import: %q, want %q", after, before)
	}
	res, err = g.ImportBatches(ctx, "dbt:manifest/big", time.Time{}, fill(7))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := 0; i < n; i++ {
		if i%1000 == 7 {
			want++
		}
	}
	if res.Stale.Edges != want {
		t.Fatalf("re-import marked %d edges stale, want %d", res.Stale.Edges, want)
	}
}
