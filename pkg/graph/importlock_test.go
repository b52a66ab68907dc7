package graph

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// An import writes while it decodes, so the write lock is held from before fill's first batch to
// the commit: another handle that writes while the import is still decoding fails if its busy
// timeout is shorter than the import, or else waits for the import and then runs after it (its
// transaction sees every row of the import); the import lands whole. (How long that wait is at
// 50,000 dbt models: docs/benchmarks.md.)
func TestAnotherWriterWaitsForAnImportThatDecodes(t *testing.T) {
	ctx := context.Background()
	path, opts := storetest.Location(t)
	st, err := store.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	opts.BusyTimeout = 100 * time.Millisecond
	impatient, err := store.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	opts.BusyTimeout = time.Minute
	other, err := store.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	g := New(st, func() time.Time { return time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC) })

	const batches, perBatch = 20, 500
	type seen struct {
		claims int
		err    error
	}
	otherDone := make(chan seen, 1)
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
			if i == 1 {
				err := impatient.Write(ctx, func(tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, `INSERT INTO graph_assets (urn, system, first_seen) VALUES ('warehouse:db/impatient', 'warehouse', '2026-08-14T12:00:00Z')`)
					return err
				})
				if err == nil || !strings.Contains(err.Error(), "held the write lock") {
					return fmt.Errorf("a write with a 100 ms busy timeout during the import: %v, want it refused for the import's lock", err)
				}
			}
			if i == batches/2 { // mid-decode: another process writes, counting the import's claims
				go func() {
					var n int
					err := other.Write(ctx, func(tx *sql.Tx) error {
						if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM graph_asset_claims WHERE source = 'dbt:manifest/big'`).Scan(&n); err != nil {
							return err
						}
						_, err := tx.ExecContext(ctx, `INSERT INTO graph_assets (urn, system, first_seen) VALUES ('warehouse:db/other', 'warehouse', '2026-08-14T12:00:00Z')`)
						return err
					})
					otherDone <- seen{n, err}
				}()
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
	o := <-otherDone
	if o.err != nil {
		t.Fatalf("another handle's write during the import: %v", o.err)
	}
	if o.claims != batches*perBatch {
		t.Fatalf("the other write saw %d of the import's claims, want all %d: it did not wait for the import's commit", o.claims, batches*perBatch)
	}
	var n int
	if err := st.DB.QueryRow(`SELECT count(*) FROM graph_assets WHERE urn = 'warehouse:db/other'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the other write = %d, %v", n, err)
	}
}

// A write that fails stops the fill: its put returns an error, the import returns the write's
// error (not the fill's), and nothing is written.
func TestAFailedWriteStopsTheFill(t *testing.T) {
	g := newGraph(t, time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC))
	puts := 0
	_, err := g.ImportBatches(context.Background(), "dbt:manifest/x", time.Time{}, func(put func(Batch) error) error {
		for i := 0; ; i++ {
			b := Batch{Assets: []Asset{{URN: URN(fmt.Sprintf("warehouse:db/t%d", i)), System: "warehouse"}}}
			if i == 3 {
				b.Assets[0].Criticality = "extreme" // refused by the checks, on the writing side
			}
			if err := put(b); err != nil {
				return fmt.Errorf("fill stopped: %w", err)
			}
			if puts++; puts > 1000 {
				return fmt.Errorf("fill was never stopped")
			}
		}
	})
	if err == nil || !strings.Contains(err.Error(), "criticality") {
		t.Fatalf("err = %v, want the batch check's", err)
	}
	var n int
	if err := g.st.DB.QueryRow(`SELECT count(*) FROM graph_assets`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("assets after a failed write = %d, %v", n, err)
	}
}

// A fill that panics fails the import instead of the process, and writes nothing.
func TestAPanickingFillWritesNothing(t *testing.T) {
	g := newGraph(t, time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC))
	_, err := g.ImportBatches(context.Background(), "dbt:manifest/x", time.Time{}, func(put func(Batch) error) error {
		if err := put(Batch{Assets: []Asset{{URN: "warehouse:db/a", System: "warehouse"}}}); err != nil {
			return err
		}
		panic("decoder bug")
	})
	if err == nil || !strings.Contains(err.Error(), "decoder bug") {
		t.Fatalf("err = %v, want the panic", err)
	}
	var n int
	if err := g.st.DB.QueryRow(`SELECT count(*) FROM graph_assets`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("assets after a panicking fill = %d, %v", n, err)
	}
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

// A fill whose batches come from another goroutine (dbt's pipeline merger) and which panics: the
// other goroutine's later puts are refused, not a send on a closed channel, and it is not left
// blocked.
func TestAPutAfterAPanickingFillIsRefused(t *testing.T) {
	merged := make(chan error, 1)
	err := overlap(func(put func(Batch) error) error {
		go func() {
			// It puts until refused: a fixed count could all be written before the panic
			// reached overlap, and say nothing.
			var err error
			for err == nil {
				err = put(Batch{})
			}
			merged <- err
		}()
		panic("walk bug")
	}, func(Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "walk bug") {
		t.Fatalf("err = %v, want the panic", err)
	}
	select {
	case err := <-merged:
		if !errors.Is(err, errOverlapStopped) {
			t.Fatalf("the merger's put after the panic = %v, want errOverlapStopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the merger was left blocked on put")
	}
}

// A write that panics stops the fill and waits for it before the panic goes on up: the fill
// returns, and no goroutine stays blocked on a batch.
func TestAPanickingWriteStopsTheFill(t *testing.T) {
	fillDone := make(chan error, 1)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the write's panic did not reach the caller")
			}
		}()
		_ = overlap(func(put func(Batch) error) error {
			var err error
			for i := 0; i < 1000 && err == nil; i++ {
				err = put(Batch{})
			}
			fillDone <- err
			return err
		}, func(Batch) error { panic("writer bug") })
	}()
	select {
	case err := <-fillDone:
		if !errors.Is(err, errOverlapStopped) {
			t.Fatalf("fill's put after the write panicked = %v, want errOverlapStopped", err)
		}
	default:
		t.Fatal("the panic went up before fill had returned")
	}
}
