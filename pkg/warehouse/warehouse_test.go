package warehouse_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/warehouse"
)

func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

const fixtureDDL = `CREATE TABLE usage_hourly (
  usage_id TEXT NOT NULL UNIQUE,
  account_id INTEGER,
  hour TIMESTAMP NOT NULL,
  egress_bytes BIGINT
);
CREATE INDEX usage_hourly_hour ON usage_hourly (hour);
CREATE TABLE "Odd ""Name""." ("we""ird col" INTEGER PRIMARY KEY, note TEXT)`

// engines yields a writable handle (for setup) and the read-only warehouse on SQLite and on a real
// PostgreSQL, so every metadata behaviour is asserted on both.
func engines(t *testing.T) map[string]func(t *testing.T) (*sql.DB, *warehouse.DB) {
	return map[string]func(t *testing.T) (*sql.DB, *warehouse.DB){
		"sqlite": func(t *testing.T) (*sql.DB, *warehouse.DB) {
			path := filepath.Join(t.TempDir(), "wh.db")
			rw, err := sql.Open("sqlite3", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rw.Close() })
			if _, err := rw.Exec(fixtureDDL); err != nil {
				t.Fatal(err)
			}
			w, err := warehouse.Connect(&config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 5 * time.Second, MaxSampleRows: 3})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			return rw, w
		},
		"postgres": func(t *testing.T) (*sql.DB, *warehouse.DB) {
			dsn := pgtest.Shared(t).NewDatabase(t)
			rw, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rw.Close() })
			for _, stmt := range strings.Split(fixtureDDL, ";") {
				if _, err := rw.Exec(stmt); err != nil {
					t.Fatal(err)
				}
			}
			w, err := warehouse.Connect(&config.Warehouse{Engine: "postgres", DSN: dsn, StatementTimeout: 5 * time.Second, MaxSampleRows: 3})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			return rw, w
		},
	}
}

func TestDescribeTableReportsColumnsKeysAndRowCount(t *testing.T) {
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			rw, w := open(t)
			if _, err := rw.Exec(`INSERT INTO usage_hourly VALUES ('u-1', 1, '2025-12-01 00:00:00', 10), ('u-2', 2, '2025-12-01 01:00:00', NULL)`); err != nil {
				t.Fatal(err)
			}
			ti, err := w.DescribeTable(context.Background(), "USAGE_HOURLY")
			if err != nil {
				t.Fatal(err)
			}
			if ti.Name != "usage_hourly" || ti.RowCount == nil || *ti.RowCount != 2 || !ti.RowCountExact {
				t.Fatalf("table = %+v, row count %v", ti.Table, ti.RowCount)
			}
			var got []string
			for _, c := range ti.Columns {
				got = append(got, c.Name+":"+map[bool]string{true: "null", false: "notnull"}[c.Nullable])
			}
			want := "usage_id:notnull account_id:null hour:notnull egress_bytes:null"
			if strings.Join(got, " ") != want {
				t.Errorf("columns = %v, want %s", got, want)
			}
			if !ti.UniqueCovers([]string{"usage_id"}) || ti.UniqueCovers([]string{"account_id"}) {
				t.Errorf("unique keys = %v", ti.UniqueKeys)
			}
			if !ti.Indexed("hour") || ti.Indexed("egress_bytes") {
				t.Errorf("indexed = %v", ti.IndexedColumns)
			}
			if _, err := ti.Column("Egress_Bytes"); err != nil {
				t.Errorf("case-insensitive column lookup: %v", err)
			}
			if _, err := ti.Column("egress_kib"); !errors.Is(err, warehouse.ErrNoSuchColumn) || !strings.Contains(err.Error(), "egress_bytes") {
				t.Errorf("missing column error = %v", err)
			}
		})
	}
}

func TestListTablesIncludesHostileNamesQuotedSafely(t *testing.T) {
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			_, w := open(t)
			tables, err := w.ListTables(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tb := range tables {
				names = append(names, tb.Name)
			}
			if strings.Join(names, "|") != `Odd "Name".|usage_hourly` {
				t.Fatalf("tables = %q", names)
			}
			// The odd table resolves through its quoted form, and its odd column is usable.
			ti, err := w.DescribeTable(context.Background(), `"Odd ""Name""."`)
			if err != nil {
				t.Fatal(err)
			}
			if ti.Columns[0].Name != `we"ird col` || len(ti.PrimaryKey) != 1 {
				t.Errorf("odd table = %+v", ti)
			}
		})
	}
}

func TestHostileAndMissingTablesAreClearErrors(t *testing.T) {
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			_, w := open(t)
			ctx := context.Background()
			for _, in := range []string{`usage_hourly"; DROP TABLE usage_hourly; --`, `nope`, `x.y.z.w`, "bad\x00name", `"unterminated`, ``} {
				_, err := w.DescribeTable(ctx, in)
				if err == nil {
					t.Errorf("DescribeTable(%q) succeeded", in)
				}
			}
			if _, err := w.DescribeTable(ctx, "nope"); !errors.Is(err, warehouse.ErrNoSuchTable) {
				t.Errorf("missing table error = %v, want ErrNoSuchTable", err)
			}
			if _, err := w.DescribeTable(ctx, "usage_hourly"); err != nil {
				t.Errorf("the table survived the hostile names: %v", err)
			}
		})
	}
}

func TestSessionsAreReadOnly(t *testing.T) {
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			_, w := open(t)
			_, err := w.Query(context.Background(), `DELETE FROM usage_hourly`, nil, 1)
			if !errors.Is(err, warehouse.ErrReadOnly) {
				t.Fatalf("DELETE through the warehouse session: err = %v, want ErrReadOnly", err)
			}
		})
	}
}

func TestQueryReturnsAtMostTheSampleBound(t *testing.T) {
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			rw, w := open(t)
			for i := 0; i < 10; i++ {
				if _, err := rw.Exec(`INSERT INTO usage_hourly VALUES ('u-` + string(rune('a'+i)) + `', 1, '2025-12-01 00:00:00', NULL)`); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := w.Query(context.Background(), `SELECT usage_id FROM usage_hourly ORDER BY usage_id`, nil, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows.Rows) != 3 || rows.Columns[0] != "usage_id" {
				t.Fatalf("rows = %+v, want 3 (max_sample_rows)", rows)
			}
		})
	}
}

// TestPostgresSessionSettingsDoNotCarryOver proves the set_config trick is refused by the guard and,
// even if such a statement reached the server, cannot turn the session read-write: every statement
// runs in its own READ ONLY transaction that is rolled back, so the next statement is read-only.
func TestPostgresSessionSettingsDoNotCarryOver(t *testing.T) {
	_, w := engines(t)["postgres"](t)
	ctx := context.Background()
	trick := `SELECT set_config('default_transaction_read_only','off',false)`
	if _, err := warehouse.CheckReadOnlySQL(trick); !errors.Is(err, warehouse.ErrNotReadOnlySQL) {
		t.Fatalf("guard accepted %q: err = %v", trick, err)
	}
	// Bypass the guard on purpose, several times, so every pooled connection has seen it.
	for i := 0; i < 3; i++ {
		rows, err := w.Query(ctx, trick, nil, 1)
		if err != nil {
			t.Fatalf("set_config inside the read-only transaction: %v", err)
		}
		if rows.Rows[0][0] != "off" {
			t.Fatalf("set_config returned %v", rows.Rows)
		}
	}
	for i := 0; i < 3; i++ {
		var ro string
		if err := w.QueryRow(ctx, `SHOW transaction_read_only`, nil, &ro); err != nil || ro != "on" {
			t.Fatalf("later statement: transaction_read_only = %q, %v; want on", ro, err)
		}
		if err := w.QueryRow(ctx, `SHOW default_transaction_read_only`, nil, &ro); err != nil || ro != "on" {
			t.Fatalf("later statement: default_transaction_read_only = %q, %v; want on (the setting carried over)", ro, err)
		}
		if _, err := w.Query(ctx, `DELETE FROM usage_hourly`, nil, 1); !errors.Is(err, warehouse.ErrReadOnly) {
			t.Fatalf("DELETE after the set_config trick: err = %v, want ErrReadOnly", err)
		}
	}
}

// A bounded sample of an unbounded PostgreSQL query must stop the statement once the bound is
// reached: closing the cursor would otherwise read and discard every remaining row (here a
// billion, so the old behaviour never returns under the generous hang guard). The pool must stay
// usable afterwards.
func TestBoundedQueryStopsPostgresStatement(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	w, err := warehouse.Connect(&config.Warehouse{Engine: "postgres", DSN: dsn, StatementTimeout: 30 * time.Minute, MaxSampleRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	const marker = "dw_bounded_sample_marker"
	type result struct {
		rows warehouse.Rows
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := w.Query(context.Background(), "SELECT generate_series(1, 1000000000) AS "+marker, nil, 2)
		done <- result{rows, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Minute): // a hang guard, not a timing assertion
		t.Fatal("Query is still reading rows past its bound")
	}
	if r.err != nil || len(r.rows.Rows) != 2 {
		t.Fatalf("rows = %v, err = %v; want 2 rows", r.rows.Rows, r.err)
	}
	// The server backend must end too (it notices the dropped connection on its next write).
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for i := 0; ; i++ {
		var n int
		if err := admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid() AND state = 'active'`, marker).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if i == 600 {
			t.Fatalf("%d backends still run the sampled statement", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// An exhausted result keeps working, and the pool recovers from the dropped connection.
	for range 3 {
		rows, err := w.Query(context.Background(), "SELECT generate_series(1, 2)", nil, 2)
		if err != nil || len(rows.Rows) != 2 {
			t.Fatalf("after a cancelled sample: rows = %v, err = %v", rows.Rows, err)
		}
	}
}
