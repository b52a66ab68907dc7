package store

import (
	"context"
	"database/sql"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestRebindNumbersPlaceholdersOutsideQuotesAndComments(t *testing.T) {
	cases := []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT * FROM t WHERE a = ? AND b = ?`, `SELECT * FROM t WHERE a = $1 AND b = $2`},
		{`SELECT ?2, ?1, ?`, `SELECT $2, $1, $3`},
		{`SELECT '?', "a?b", ? -- what?` + "\n" + `, ?`, `SELECT '?', "a?b", $1 -- what?` + "\n" + `, $2`},
		{`SELECT 'it''s ?', ? /* ? */`, `SELECT 'it''s ?', $1 /* ? */`},
		{`SELECT $$ ? $$, $tag$ ?' $tag$, ?`, `SELECT $$ ? $$, $tag$ ?' $tag$, $1`},
		{`SELECT $1, ?`, `SELECT $1, $1`},
	}
	for _, c := range cases {
		got, err := rebind(c.in)
		if err != nil || got != c.want {
			t.Errorf("rebind(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`SELECT ?0`, `SELECT ?99999`, `SELECT ? /* open`, `SELECT $x$ ? `} {
		if _, err := rebind(bad); err == nil {
			t.Errorf("rebind(%q): want an error", bad)
		}
	}
}

// FuzzRebind: rebinding never panics, never touches text without a question mark, and leaves no
// `?` outside quotes and comments.
func FuzzRebind(f *testing.F) {
	for _, s := range []string{`SELECT ?`, `'?' ? "?"`, `?1 ?2 ?`, `-- ?` + "\n?", `/* ? */ ?`, `$a$ ? $a$ ?`, `'unterminated ?`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		out, err := rebind(q)
		if err != nil {
			return
		}
		if !strings.ContainsRune(q, '?') && out != q {
			t.Fatalf("rebind changed %q to %q", q, out)
		}
		// No placeholder is left to rebind: a second pass changes nothing (or, on input that
		// only became a dollar quote by the rewrite, refuses it).
		if again, err := rebind(out); err == nil && again != out {
			t.Fatalf("rebind left a placeholder in %q: %q then %q", q, out, again)
		}
	})
}

// Every migration exists for both engines under the same number and name.
func TestMigrationsPairAcrossEngines(t *testing.T) {
	lite, err := loadMigrations(migrationFiles, migrationDir(SQLite))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := loadMigrations(migrationFiles, migrationDir(PostgreSQL))
	if err != nil {
		t.Fatal(err)
	}
	if len(lite) != len(pg) {
		t.Fatalf("%d SQLite migrations, %d PostgreSQL ones: add the missing twin under migrations/postgres/", len(lite), len(pg))
	}
	for i := range lite {
		if lite[i].version != pg[i].version || lite[i].name != pg[i].name {
			t.Errorf("migration %04d_%s has no PostgreSQL twin (found %04d_%s)", lite[i].version, lite[i].name, pg[i].version, pg[i].name)
		}
	}
}

// Migrated, both engines hold the same tables with the same columns and the same indexes (the
// PostgreSQL graph claim and field tables add the rowid SQLite has implicitly).
func TestMigratedSchemasMatchAcrossEngines(t *testing.T) {
	lite, pg := openOn(t, SQLite), openOn(t, PostgreSQL)
	read := func(st *Store, q string) []string {
		rows, err := st.DB.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var a, b string
			if err := rows.Scan(&a, &b); err != nil {
				t.Fatal(err)
			}
			out = append(out, a+"."+b)
		}
		sort.Strings(out)
		return out
	}
	liteCols := read(lite, `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`)
	pgCols := read(pg, `SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema = 'public' AND NOT (column_name = 'rowid' AND table_name IN ('graph_asset_claims', 'graph_fields'))`)
	if strings.Join(liteCols, " ") != strings.Join(pgCols, " ") {
		t.Errorf("columns differ:\nsqlite:   %v\npostgres: %v", liteCols, pgCols)
	}
	liteIdx := read(lite, `SELECT tbl_name, name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`)
	pgIdx := read(pg, `SELECT tablename::text, indexname::text FROM pg_indexes WHERE schemaname = 'public'
		AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key'`)
	if strings.Join(liteIdx, " ") != strings.Join(pgIdx, " ") {
		t.Errorf("indexes differ:\nsqlite:   %v\npostgres: %v", liteIdx, pgIdx)
	}
}

func TestRedactURLHidesThePassword(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://dw:s3cret@db.internal:5432/dw?sslmode=require": "postgres://dw:xxxxx@db.internal:5432/dw?sslmode=require",
		"postgres://dw@db/dw?password=s3cret":                      "postgres://dw@db/dw?password=xxxxx",
		"postgres://db/dw":                                         "postgres://db/dw",
		"::not a url":                                              "(unparseable store URL)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnreachablePostgresIsAClearErrorWithoutThePassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10e9)
	defer cancel()
	_, err := Open(ctx, t.TempDir()+"/dw.db", Options{URL: "postgres://dw:hunter2hunter2@127.0.0.1:1/dw?connect_timeout=2"})
	if err == nil || strings.Contains(err.Error(), "hunter2hunter2") || !strings.Contains(err.Error(), "DW_STORE_URL") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Open(ctx, "x", Options{URL: "mysql://h/db"}); err == nil || !strings.Contains(err.Error(), "want postgres://") {
		t.Fatalf("err = %v", err)
	}
}

func TestEngineAndVersion(t *testing.T) {
	engines(t, func(t *testing.T, d Dialect) {
		st := openOn(t, d)
		if st.Dialect() != d {
			t.Fatalf("dialect = %v, want %v", st.Dialect(), d)
		}
		v, err := st.ServerVersion(context.Background())
		if err != nil || v == "" {
			t.Fatalf("version = %q, %v", v, err)
		}
	})
}

// On PostgreSQL a write holds the store's advisory lock until it commits: a second writer waits.
func TestPostgresWritesAreSerialised(t *testing.T) {
	st := openOn(t, PostgreSQL)
	ctx := context.Background()
	inside := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- st.Write(ctx, func(tx *sql.Tx) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	second := make(chan error, 1)
	go func() { second <- st.Write(ctx, func(tx *sql.Tx) error { return nil }) }()
	select {
	case err := <-second:
		t.Fatalf("second writer ran while the first held the lock: %v", err)
	case <-timeAfter(300):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
}

func timeAfter(ms int) <-chan time.Time { return time.After(time.Duration(ms) * time.Millisecond) }
