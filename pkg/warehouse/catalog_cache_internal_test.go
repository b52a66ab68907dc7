package warehouse

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
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

// BenchmarkResolve times a repeated Resolve answered from the cache (one marker read) beside the
// full description it replaces, on SQLite and PostgreSQL.
func BenchmarkResolve(b *testing.B) {
	ctx := context.Background()
	const ddl = `CREATE TABLE events (id BIGINT PRIMARY KEY, account TEXT UNIQUE, at TIMESTAMP, amount BIGINT)`
	open := map[string]func(b *testing.B) *DB{
		"sqlite": func(b *testing.B) *DB {
			path := filepath.Join(b.TempDir(), "wh.db")
			rw, err := sql.Open("sqlite3", path)
			if err != nil {
				b.Fatal(err)
			}
			defer rw.Close()
			if _, err := rw.Exec(ddl + `; CREATE INDEX events_at ON events (at); ANALYZE`); err != nil {
				b.Fatal(err)
			}
			w, err := Connect(&config.Warehouse{Engine: "sqlite", DSN: path})
			if err != nil {
				b.Fatal(err)
			}
			return w
		},
		"postgres": func(b *testing.B) *DB {
			dsn := pgtest.Shared(b).NewDatabase(b)
			rw, err := sql.Open("pgx", dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer rw.Close()
			for _, s := range []string{ddl, `CREATE INDEX events_at ON events (at)`, `ANALYZE events`} {
				if _, err := rw.Exec(s); err != nil {
					b.Fatal(err)
				}
			}
			w, err := Connect(&config.Warehouse{Engine: "postgres", DSN: dsn})
			if err != nil {
				b.Fatal(err)
			}
			return w
		},
	}
	for _, eng := range []string{"sqlite", "postgres"} {
		b.Run(eng, func(b *testing.B) {
			w := open[eng](b)
			defer w.Close()
			b.Run("cached", func(b *testing.B) {
				for b.Loop() {
					if _, err := w.Resolve(ctx, "events"); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("described", func(b *testing.B) {
				for b.Loop() {
					if _, err := w.resolve(ctx, "events"); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
