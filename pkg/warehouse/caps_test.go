package warehouse_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// peakHeap runs fn while sampling the heap, and returns the most heap in use above the level
// before fn (sampled every few milliseconds, plus the growth of TotalAlloc as a bound that no
// sample can miss).
func peakHeap(t *testing.T, fn func()) (peak, allocated uint64) {
	t.Helper()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var max atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > before.HeapInuse && m.HeapInuse-before.HeapInuse > max.Load() {
				max.Store(m.HeapInuse - before.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return max.Load(), after.TotalAlloc - before.TotalAlloc
}

func sqliteWarehouse(t *testing.T, w config.Warehouse) (*sql.DB, *warehouse.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wh.db")
	rw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rw.Close() })
	if _, err := rw.Exec(`CREATE TABLE t (id INTEGER, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	w.Engine, w.DSN, w.StatementTimeout = "sqlite", path, 20*time.Second
	db, err := warehouse.Connect(&w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return rw, db
}

// bigConcat builds 100 MB from pieces that are each small.
const bigConcat = `WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 100) SELECT group_concat(printf('%.*c', 1000000, 'x'), '') FROM s`

// The campaign's query: one value of a gigabyte. The engine refuses to build it, the error says
// what to do, and the process's heap never grows by more than a small bound (64 MiB, against the
// 1 GB value and the 21.5 GB seen before the fix).
func TestAGigabyteValueIsRefusedWithinABoundedHeap(t *testing.T) {
	_, w := sqliteWarehouse(t, config.Warehouse{})
	const limit = 64 << 20
	for _, q := range []string{`SELECT randomblob(1000000000)`, `SELECT length(randomblob(1000000000))`, bigConcat} {
		var err error
		peak, allocated := peakHeap(t, func() {
			_, err = w.Query(context.Background(), q, nil, 10)
		})
		if !errors.Is(err, warehouse.ErrValueTooLarge) || !strings.Contains(err.Error(), "substr") {
			t.Errorf("%s: err = %v, want ErrValueTooLarge with a hint", q, err)
		}
		if peak > limit || allocated > limit {
			t.Errorf("%s: heap grew by %d MiB (allocated %d MiB), want under %d MiB", q, peak>>20, allocated>>20, limit>>20)
		}
		t.Logf("%s: peak heap +%d KiB, allocated %d KiB", q, peak>>10, allocated>>10)
	}
}

// A value under the engine's limit but over the value cap comes back cut, with a marker that
// gives its length; a result over the result cap stops reading rows and says so.
func TestValuesAndResultsAreCutToTheirCaps(t *testing.T) {
	rw, w := sqliteWarehouse(t, config.Warehouse{MaxValueBytes: 100, MaxResultBytes: 1000, MaxSampleRows: 1000})
	if _, err := rw.Exec(`INSERT INTO t VALUES (1, replace(printf('%.*c', 7000000, 'x'), 'x', 'é'))`); err != nil {
		t.Fatal(err)
	}
	var res warehouse.Rows
	peak, _ := peakHeap(t, func() {
		var err error
		if res, err = w.Query(context.Background(), `SELECT id, body FROM t`, nil, 10); err != nil {
			t.Fatal(err)
		}
	})
	body, _ := res.Rows[0][1].(string)
	if len(body) > 100+40 || !strings.Contains(body, "…[truncated: ") || !strings.Contains(res.Truncated, "warehouse.max_value_bytes") {
		t.Errorf("value not cut: %d bytes, %q…, truncated %q", len(body), body[:min(len(body), 40)], res.Truncated)
	}
	if !strings.HasPrefix(body, strings.Repeat("é", 50)) {
		t.Errorf("the cut should fall on a character boundary: %q", body[:min(len(body), 120)])
	}
	if peak > 64<<20 {
		t.Errorf("heap grew by %d MiB reading one 14 MB value", peak>>20)
	}

	for i := 0; i < 100; i++ {
		if _, err := rw.Exec(`INSERT INTO t VALUES (?, printf('%.*c', 80, 'x'))`, i+2); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.QueryAll(context.Background(), `SELECT id, body FROM t WHERE id > 1 ORDER BY id`, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) == 0 || len(res.Rows) >= 100 || !strings.Contains(res.Truncated, "warehouse.max_result_bytes") {
		t.Errorf("result not bounded: %d rows, truncated %q", len(res.Rows), res.Truncated)
	}
	whole, err := w.Query(context.Background(), `SELECT id FROM t WHERE id < 5 ORDER BY id`, nil, 10)
	if err != nil || len(whole.Rows) != 4 || whole.Truncated != "" {
		t.Errorf("a small result should come back whole: %+v, %v", whole, err)
	}
}

// On PostgreSQL a row larger than the engine bound is refused from its message header, before
// its body is read; a long value under it is cut like any other.
func TestPostgresRowsAreBoundedBeforeTheyAreRead(t *testing.T) {
	_, w := engines(t)["postgres"](t)
	var err error
	peak, allocated := peakHeap(t, func() {
		_, err = w.Query(context.Background(), `SELECT repeat('x', 80000000)`, nil, 10)
	})
	if !errors.Is(err, warehouse.ErrValueTooLarge) {
		t.Errorf("err = %v, want ErrValueTooLarge", err)
	}
	if peak > 64<<20 || allocated > 64<<20 {
		t.Errorf("heap grew by %d MiB (allocated %d MiB) for a refused 80 MB row", peak>>20, allocated>>20)
	}
	res, err := w.Query(context.Background(), `SELECT repeat('y', 50000) AS v`, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := res.Rows[0][0].(string); len(v) > warehouse.DefaultMaxValueBytes+40 || !strings.Contains(v, "…[truncated: 50000 bytes]") {
		t.Errorf("value not cut: %d bytes", len(v))
	}
	// The session is still usable after the refusal.
	if _, err := w.Query(context.Background(), `SELECT 1`, nil, 1); err != nil {
		t.Errorf("after a refused row: %v", err)
	}
}
