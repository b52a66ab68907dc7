package warehouse

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
)

// TestResolveServesTheCacheUntilTheTTL: while the marker stands, Resolve answers from the cache
// (a sentinel planted in the entry comes back) without describing the table; past the TTL it
// describes it again.
func TestResolveServesTheCacheUntilTheTTL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wh.db")
	rw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Exec(`CREATE TABLE events (id INTEGER PRIMARY KEY, at TIMESTAMP)`); err != nil {
		t.Fatal(err)
	}
	w, err := Connect(&config.Warehouse{Engine: "sqlite", DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	w.catalog = newCatalogCache(func() time.Time { return clock })
	if _, err := w.Resolve(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	w.catalog.mu.Lock()
	e := w.catalog.entries["events"]
	e.info.Kind = "sentinel"
	w.catalog.mu.Unlock()
	if ti, err := w.Resolve(ctx, "events"); err != nil || ti.Kind != "sentinel" {
		t.Fatalf("within the TTL: kind %q, %v; want the cached entry", ti.Kind, err)
	}
	clock = clock.Add(catalogTTL)
	if ti, err := w.Resolve(ctx, "events"); err != nil || ti.Kind != "table" {
		t.Fatalf("past the TTL: kind %q, %v; want the table described again", ti.Kind, err)
	}
}
