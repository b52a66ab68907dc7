// Package storetest gives tests a fresh store on the engine under test: SQLite by default, or a
// real PostgreSQL (a fresh database on one pgtest cluster per test binary) when DW_TEST_STORE is
// postgres. CI runs the store-backed suites once per engine; under CI=true a missing PostgreSQL
// fails the run instead of skipping it.
package storetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/store"
)

// EngineEnv selects the engine: "postgres" for PostgreSQL, anything else for SQLite.
const EngineEnv = "DW_TEST_STORE"

// Engine is the engine the store-backed tests run on.
func Engine() store.Dialect {
	if os.Getenv(EngineEnv) == "postgres" {
		return store.PostgreSQL
	}
	return store.SQLite
}

// Location is a fresh, not yet opened store on the engine under test: open it as many times as a
// test needs handles or processes. path is always a file in a fresh temporary directory (the SQLite
// file, or on PostgreSQL the anchor of the receipts key).
func Location(t testing.TB) (path string, opts store.Options) {
	t.Helper()
	return LocationOn(t, Engine())
}

// LocationOn is Location on a given engine, for tests that always cover both.
func LocationOn(t testing.TB, d store.Dialect) (path string, opts store.Options) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "dw.db")
	if d == store.PostgreSQL {
		opts.URL = pgtest.Shared(t).NewDatabase(t)
	}
	return path, opts
}

// Open opens a fresh store on the engine under test, closed when the test ends.
func Open(t testing.TB) *store.Store {
	t.Helper()
	return OpenOn(t, Engine())
}

// OpenOn is Open on a given engine.
func OpenOn(t testing.TB, d store.Dialect) *store.Store {
	t.Helper()
	path, opts := LocationOn(t, d)
	st, err := store.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Engines runs fn once per engine as subtests, for the tests that must cover both in every run;
// the PostgreSQL one skips without a server outside CI.
func Engines(t *testing.T, fn func(t *testing.T, d store.Dialect)) {
	for _, d := range []store.Dialect{store.SQLite, store.PostgreSQL} {
		t.Run(d.String(), func(t *testing.T) { fn(t, d) })
	}
}

// ExplainSQLite is SQLite's plan of q on st (EXPLAIN QUERY PLAN), its steps joined by " | ", for
// tests that hold a read to the index it must use. It skips the test on another engine.
func ExplainSQLite(t testing.TB, st *store.Store, q string, args ...any) string {
	t.Helper()
	if st.Dialect() != store.SQLite {
		t.Skip("EXPLAIN QUERY PLAN is SQLite's")
	}
	rows, err := st.DB.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, " | ")
}
