package warehouse_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// Every statement of a snapshot sees the data as of its first read, whatever is committed
// meanwhile; after Close the handle sees the new rows.
func TestSnapshotSeesOneStateOfTheData(t *testing.T) {
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			rw, w := open(t)
			if name == "sqlite" {
				// A writer commits while the snapshot reads: WAL lets it (a rollback journal
				// would make it wait for the reader).
				if _, err := rw.Exec(`PRAGMA journal_mode=WAL`); err != nil {
					t.Fatal(err)
				}
			}
			insert := func(id string) {
				t.Helper()
				if _, err := rw.Exec(`INSERT INTO usage_hourly VALUES ('` + id + `', 1, '2025-12-01 00:00:00', NULL)`); err != nil {
					t.Fatal(err)
				}
			}
			insert("u-1")
			ctx := context.Background()
			snap, err := w.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			if err := snap.QueryRow(ctx, `SELECT count(*) FROM usage_hourly`, nil, &n); err != nil || n != 1 {
				t.Fatalf("first read: %d rows, %v", n, err)
			}
			insert("u-2")
			rows, err := snap.QueryAll(ctx, `SELECT count(*) FROM usage_hourly`, nil, 1)
			if err != nil || len(rows.Rows) != 1 || warehouse.Int(rows.Rows[0][0]) != 1 {
				t.Fatalf("second read in the snapshot: %v, %v; want the first read's 1 row", rows.Rows, err)
			}
			if err := snap.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.QueryRow(ctx, `SELECT count(*) FROM usage_hourly`, nil, &n); err != nil || n != 2 {
				t.Fatalf("after the snapshot: %d rows, %v; want 2", n, err)
			}
		})
	}
}

// A PostgreSQL snapshot stays read-only and leaves the session as it found it: a statement cannot
// make its transaction read-write, a failed statement does not fail the ones after it (they run in
// transactions of their own), and a setting changed inside it is gone once it is closed.
func TestPostgresSnapshotStaysReadOnlyAndLeavesTheSession(t *testing.T) {
	_, w := engines(t)["postgres"](t)
	ctx := context.Background()
	var before string
	if err := w.QueryRow(ctx, `SHOW statement_timeout`, nil, &before); err != nil {
		t.Fatal(err)
	}
	snap, err := w.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var iso, set string
	if err := snap.QueryRow(ctx, `SHOW transaction_isolation`, nil, &iso); err != nil || iso != "repeatable read" {
		t.Fatalf("isolation = %q, %v", iso, err)
	}
	if err := snap.QueryRow(ctx, `SELECT set_config('statement_timeout', '0', false)`, nil, &set); err != nil || set != "0" {
		t.Fatalf("set_config inside the snapshot: %q, %v", set, err)
	}
	if err := snap.QueryRow(ctx, `SELECT set_config('transaction_read_only', 'off', false)`, nil, &set); err == nil {
		t.Fatal("a statement made the snapshot's transaction read-write")
	}
	// The transaction is aborted now; the next statements run each in their own, still read-only.
	var n int64
	if err := snap.QueryRow(ctx, `SELECT count(*) FROM usage_hourly`, nil, &n); err != nil {
		t.Fatalf("a statement after the failed one: %v", err)
	}
	if _, err := snap.QueryAll(ctx, `DELETE FROM usage_hourly RETURNING 1`, nil, 1); !errors.Is(err, warehouse.ErrReadOnly) {
		t.Fatalf("DELETE in the snapshot after the failure: %v, want ErrReadOnly", err)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	for range 3 { // every pooled connection
		var after string
		if err := w.QueryRow(ctx, `SHOW statement_timeout`, nil, &after); err != nil || after != before {
			t.Fatalf("statement_timeout after the snapshot = %q, %v; want %q", after, err, before)
		}
	}
}

// A description served ahead of its marker is verified against the state the snapshot reads: a
// change before the snapshot's first statement fails Verify (and the next Resolve describes the
// table again). On SQLite a change may also commit after it (WAL): the snapshot still reads the
// state described. PostgreSQL lets no change come after the first statement: it holds the
// table's ACCESS SHARE lock until the snapshot ends.
func TestResolveAheadIsVerifiedAgainstTheSnapshot(t *testing.T) {
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			rw, w := open(t)
			change, column := `ALTER TABLE usage_hourly ALTER COLUMN account_id SET NOT NULL`, "account_id"
			if name == "sqlite" {
				// WAL lets a writer commit while the snapshot reads.
				if _, err := rw.Exec(`PRAGMA journal_mode=WAL`); err != nil {
					t.Fatal(err)
				}
				change, column = `ALTER TABLE usage_hourly ADD COLUMN region TEXT`, "region"
			}
			ctx := context.Background()
			if _, err := w.Resolve(ctx, "usage_hourly"); err != nil { // cached
				t.Fatal(err)
			}
			attempt := func(beforeFirst, afterFirst string) error {
				t.Helper()
				snap, err := w.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer snap.Close()
				if _, err := snap.ResolveAhead(ctx, "usage_hourly"); err != nil {
					t.Fatal(err)
				}
				if beforeFirst != "" {
					if _, err := rw.Exec(beforeFirst); err != nil {
						t.Fatal(err)
					}
				}
				var n int64
				if err := snap.QueryRow(ctx, `SELECT count(*) FROM usage_hourly`, nil, &n); err != nil {
					return err
				}
				if afterFirst != "" {
					if _, err := rw.Exec(afterFirst); err != nil {
						t.Fatal(err)
					}
				}
				return snap.Verify(ctx)
			}
			if err := attempt("", ""); err != nil {
				t.Fatalf("unchanged table: %v", err)
			}
			if err := attempt(change, ""); !errors.Is(err, warehouse.ErrCatalogChanged) {
				t.Fatalf("changed before the first statement: %v, want ErrCatalogChanged", err)
			}
			ti, err := w.Resolve(ctx, "usage_hourly") // described again: the change is seen
			if err != nil {
				t.Fatal(err)
			}
			c, err := ti.Column(column)
			if err != nil || (name == "postgres" && c.Nullable) {
				t.Fatalf("%q not seen after ErrCatalogChanged: %+v", change, ti.Columns)
			}
			if err := attempt("", ""); err != nil {
				t.Fatalf("unchanged since described again: %v", err)
			}
			if name == "sqlite" {
				// A change committed after the first statement: the snapshot reads the state
				// described, and the marker's read, which runs as soon as that statement returns,
				// saw either that state (nil) or the newer one (plan again): both are right.
				for _, after := range []string{`CREATE INDEX usage_hourly_region ON usage_hourly (region)`,
					`INSERT INTO usage_hourly VALUES ('u-1', 1, '2025-12-01 00:00:00', 10, 'eu'); ANALYZE`} {
					if err := attempt("", after); err != nil && !errors.Is(err, warehouse.ErrCatalogChanged) {
						t.Fatalf("%s after the first statement: %v, want nil or ErrCatalogChanged", after, err)
					}
					if _, err := w.Resolve(ctx, "usage_hourly"); err != nil {
						t.Fatal(err)
					}
				}
				if err := attempt("", ""); err != nil {
					t.Fatalf("unchanged since described again: %v", err)
				}
			}
			// Nothing run before Verify: the marker is read in the snapshot.
			snap, err := w.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := snap.ResolveAhead(ctx, "usage_hourly"); err != nil {
				t.Fatal(err)
			}
			if err := snap.Verify(ctx); err != nil {
				t.Fatalf("verify with no statement run: %v", err)
			}
			snap.Close()
			if err := attempt(`DROP TABLE usage_hourly`, ""); err == nil {
				t.Fatalf("table dropped before the first statement: %v", err)
			}
		})
	}
}

// A SQLite database with a rollback journal has its marker read in the snapshot: a writer
// waiting to commit would refuse a second connection's read lock while the snapshot holds its
// own, and the run would wait out the busy timeout. In WAL mode, and on PostgreSQL, it is read
// beside the snapshot.
func TestTheMarkerIsReadAheadOnlyWhereNoLockCanBlockIt(t *testing.T) {
	ctx := context.Background()
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			rw, w := open(t)
			if _, err := w.Resolve(ctx, "usage_hourly"); err != nil {
				t.Fatal(err)
			}
			if got := warehouse.MarkerReadAhead(w, "usage_hourly"); got != (name == "postgres") {
				t.Fatalf("read ahead = %v as first described", got)
			}
			if name != "sqlite" {
				return
			}
			// WAL, and a schema change so that the table is described again.
			if _, err := rw.Exec(`PRAGMA journal_mode=WAL; CREATE INDEX usage_hourly_account ON usage_hourly (account_id)`); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Resolve(ctx, "usage_hourly"); err != nil {
				t.Fatal(err)
			}
			if !warehouse.MarkerReadAhead(w, "usage_hourly") {
				t.Fatal("a WAL database's marker is not read ahead")
			}
		})
	}
}
