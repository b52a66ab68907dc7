package graph

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// While a large import is still decoding (fill has put some batches and not returned), another
// handle on the same store writes without waiting for the import: the write lock is taken only
// once the view is decoded. The import still lands whole.
func TestAnotherWriterIsNotBlockedWhileAnImportDecodes(t *testing.T) {
	ctx := context.Background()
	path, opts := storetest.Location(t)
	st, err := store.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	opts.BusyTimeout = 200 * time.Millisecond
	other, err := store.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	g := New(st, func() time.Time { return time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC) })
	og := New(other, func() time.Time { return time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC) })

	const batches, perBatch = 20, 500
	var otherWrite time.Duration
	res, err := g.ImportBatches(ctx, "dbt:manifest/big", time.Time{}, func(put func(Batch) error) error {
		for i := 0; i < batches; i++ {
			var b Batch
			for j := 0; j < perBatch; j++ {
				u := URN(fmt.Sprintf("warehouse:db/T%d_%d", i, j))
				b.Assets = append(b.Assets, Asset{URN: u, System: "warehouse"})
				b.Edges = append(b.Edges, fe(string(u), fmt.Sprintf("warehouse:db/T%d_%d", i, j+1), EdgeReads))
			}
			if err := put(b); err != nil {
				return err
			}
			if i == batches/2 { // mid-decode: another process writes
				start := time.Now()
				if _, err := og.Import(ctx, Batch{Source: "catalog:other", Assets: []Asset{{URN: "warehouse:db/other", System: "warehouse"}}}); err != nil {
					return fmt.Errorf("another handle's write during the import's decoding: %w", err)
				}
				otherWrite = time.Since(start)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Assets != batches*perBatch || res.Edges != batches*perBatch {
		t.Fatalf("import = %+v", res)
	}
	var n int
	if err := st.DB.QueryRow(`SELECT count(*) FROM graph_asset_claims c JOIN graph_assets a ON a.id = c.asset_id WHERE a.urn LIKE 'warehouse:db/T%'`).Scan(&n); err != nil || n != batches*perBatch {
		t.Fatalf("claims written = %d, %v", n, err)
	}
	if err := st.DB.QueryRow(`SELECT count(*) FROM graph_assets WHERE urn = 'warehouse:db/other'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the other write = %d, %v", n, err)
	}
	t.Logf("other handle's write during decoding took %s", otherWrite)
}

// A fill that fails after putting batches writes nothing: the import stays atomic.
func TestAFailedFillWritesNothing(t *testing.T) {
	g := newGraph(t, time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC))
	_, err := g.ImportBatches(context.Background(), "dbt:manifest/x", time.Time{}, func(put func(Batch) error) error {
		if err := put(Batch{Assets: []Asset{{URN: "warehouse:db/a", System: "warehouse"}}}); err != nil {
			return err
		}
		return fmt.Errorf("manifest truncated")
	})
	if err == nil {
		t.Fatal("want the fill's error")
	}
	var n int
	if err := g.st.DB.QueryRow(`SELECT count(*) FROM graph_assets`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("assets after a failed fill = %d, %v", n, err)
	}
}
