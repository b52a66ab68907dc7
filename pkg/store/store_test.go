package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dataworkers/dw/pkg/internal/pgtest"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	return openOn(t, SQLite)
}

// location is a fresh store on engine d (package store cannot use storetest, which imports it).
func location(t *testing.T, d Dialect) (string, Options) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dw.db")
	if d == PostgreSQL {
		return path, Options{URL: pgtest.Shared(t).NewDatabase(t)}
	}
	return path, Options{}
}

func openOn(t *testing.T, d Dialect) *Store {
	t.Helper()
	path, opts := location(t, d)
	st, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// engines runs fn on SQLite and on a real PostgreSQL (skipped without one outside CI).
func engines(t *testing.T, fn func(t *testing.T, d Dialect)) {
	for _, d := range []Dialect{SQLite, PostgreSQL} {
		t.Run(d.String(), func(t *testing.T) { fn(t, d) })
	}
}

func TestOpenAppliesEveryMigrationOnce(t *testing.T) { engines(t, testOpenAppliesEveryMigrationOnce) }

func testOpenAppliesEveryMigrationOnce(t *testing.T, d Dialect) {
	path, opts := location(t, d)
	for i := 0; i < 2; i++ {
		st, err := Open(context.Background(), path, opts)
		if err != nil {
			t.Fatal(err)
		}
		v, err := st.SchemaVersion(context.Background())
		if err != nil || v != LatestSchemaVersion() || v == 0 {
			t.Fatalf("schema version = %d, %v; want %d", v, err, LatestSchemaVersion())
		}
		var n int
		if err := st.DB.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		migs, _ := loadMigrations(migrationFiles, migrationDir(d))
		if n != len(migs) {
			t.Fatalf("%d migrations recorded, want %d", n, len(migs))
		}
		st.Close()
	}
}

func TestStoreUsesWALAndForeignKeys(t *testing.T) {
	st := openTemp(t)
	var mode string
	var fk int
	if err := st.DB.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v", mode, err)
	}
	if err := st.DB.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v", fk, err)
	}
}

func TestWriteRollsBackOnError(t *testing.T) { engines(t, testWriteRollsBackOnError) }

func testWriteRollsBackOnError(t *testing.T, d Dialect) {
	st := openOn(t, d)
	ctx := context.Background()
	boom := fmt.Errorf("boom")
	err := st.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO tool_calls(at, agent, tool, outcome, duration_ms, args_sha256) VALUES ('t','a','x','ok',1,'h')`); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("err = %v", err)
	}
	if n, _ := st.CountToolCalls(ctx, ""); n != 0 {
		t.Fatalf("%d rows after rollback", n)
	}
}

func TestWriteRollsBackOnPanic(t *testing.T) { engines(t, testWriteRollsBackOnPanic) }

// A panic inside a write (recovered above, as a server recovers a tool's) leaves no transaction
// open: its rows are gone and the next write gets the writer connection.
func testWriteRollsBackOnPanic(t *testing.T, d Dialect) {
	st := openOn(t, d)
	ctx := context.Background()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not reach the caller")
			}
		}()
		_ = st.Write(ctx, func(tx *sql.Tx) error {
			if _, err := tx.Exec(`INSERT INTO tool_calls(at, agent, tool, outcome, duration_ms, args_sha256) VALUES ('t','a','x','ok',1,'h')`); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if n, _ := st.CountToolCalls(ctx, ""); n != 0 {
		t.Fatalf("%d rows after the panic", n)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := st.Write(wctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO tool_calls(at, agent, tool, outcome, duration_ms, args_sha256) VALUES ('t','a','y','ok',1,'h')`)
		return err
	}); err != nil {
		t.Fatalf("write after the panic: %v", err)
	}
	if n, _ := st.CountToolCalls(ctx, ""); n != 1 {
		t.Fatalf("%d rows after the second write, want 1", n)
	}
}

func TestCorruptFileIsAClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dw.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("this is not sqlite ", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path, Options{})
	if err == nil || !strings.Contains(err.Error(), "not a valid SQLite database or is corrupt") || !strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("err = %v", err)
	}
}

func TestUnwritableDirectoryIsAClearError(t *testing.T) {
	if os.Geteuid() == 0 {
		// root ignores directory permissions; use a path under a regular file instead.
		file := filepath.Join(t.TempDir(), "file")
		os.WriteFile(file, nil, 0o600)
		_, err := Open(context.Background(), filepath.Join(file, "dw.db"), Options{})
		if err == nil || !strings.Contains(err.Error(), "cannot create directory") || !strings.Contains(err.Error(), "DW_HOME") {
			t.Fatalf("err = %v", err)
		}
		return
	}
	dir := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(dir, 0o500)
	_, err := Open(context.Background(), filepath.Join(dir, "dw.db"), Options{})
	if err == nil || !strings.Contains(err.Error(), "cannot be opened for writing") {
		t.Fatalf("err = %v", err)
	}
}

func TestNewerSchemaThanBinaryIsRefused(t *testing.T) { engines(t, testNewerSchemaThanBinaryIsRefused) }

func testNewerSchemaThanBinaryIsRefused(t *testing.T, d Dialect) {
	path, opts := location(t, d)
	st, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO schema_migrations(version, name, applied_at) VALUES (9999, 'future', 'now')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = Open(ctx, path, opts)
	if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("err = %v", err)
	}
}

func TestMigrationNamesAreChecked(t *testing.T) {
	bad := fstest.MapFS{"migrations/1.sql": {Data: []byte("SELECT 1")}}
	if _, err := loadMigrations(bad, "migrations"); err == nil {
		t.Error("want error for a badly named migration")
	}
	dup := fstest.MapFS{"migrations/0001_a.sql": {}, "migrations/0001_b.sql": {}}
	if _, err := loadMigrations(dup, "migrations"); err == nil || !strings.Contains(err.Error(), "share version") {
		t.Errorf("err = %v", err)
	}
}

// The concurrency test: five OS processes open one fresh store at the same moment (so the
// migrations race too) and each writes 1,000 rows in 1,000 transactions.
const (
	writerEnv  = "DW_STORE_TEST_WRITER"
	writerRows = 1000
	writers    = 5
)

func TestMain(m *testing.M) {
	if path := os.Getenv(writerEnv); path != "" {
		os.Exit(writerProcess(path, os.Getenv("DW_STORE_TEST_URL")))
	}
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

func writerProcess(path, url string) int {
	agent := os.Getenv("DW_STORE_TEST_AGENT")
	start, _ := strconv.ParseInt(os.Getenv("DW_STORE_TEST_START"), 10, 64)
	time.Sleep(time.Until(time.Unix(0, start)))
	ctx := context.Background()
	st, err := Open(ctx, path, Options{BusyTimeout: 30 * time.Second, URL: url})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	defer st.Close()
	for i := 0; i < writerRows; i++ {
		if err := st.RecordToolCall(ctx, ToolCall{At: time.Now(), Agent: agent, Tool: "t", Outcome: "ok", ArgsSHA256: strconv.Itoa(i)}); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			return 4
		}
	}
	return 0
}

func TestFiveProcessesWriteConcurrentlyWithoutLockErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	engines(t, testFiveProcessesWriteConcurrently)
}

func testFiveProcessesWriteConcurrently(t *testing.T, d Dialect) {
	path, opts := location(t, d)
	start := time.Now().Add(300 * time.Millisecond).UnixNano()
	var wg sync.WaitGroup
	errs := make([]string, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), writerEnv+"="+path, "DW_STORE_TEST_URL="+opts.URL, fmt.Sprintf("DW_STORE_TEST_AGENT=agent-%d", w),
				fmt.Sprintf("DW_STORE_TEST_START=%d", start))
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs[w] = fmt.Sprintf("writer %d: %v: %s", w, err, out)
			} else if strings.Contains(string(out), "lock") {
				errs[w] = fmt.Sprintf("writer %d saw a lock error: %s", w, out)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	st, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The five opened a fresh store at once: each migration ran exactly once.
	var recorded, distinct int
	if err := st.DB.QueryRow(`SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&recorded, &distinct); err != nil {
		t.Fatal(err)
	}
	if recorded != distinct || distinct != LatestSchemaVersion() {
		t.Errorf("schema_migrations has %d rows for %d versions, want %d once each", recorded, distinct, LatestSchemaVersion())
	}
	total, err := st.CountToolCalls(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if total != writers*writerRows {
		t.Fatalf("%d rows landed, want exactly %d", total, writers*writerRows)
	}
	for w := 0; w < writers; w++ {
		if n, _ := st.CountToolCalls(context.Background(), fmt.Sprintf("agent-%d", w)); n != writerRows {
			t.Errorf("agent-%d wrote %d rows, want %d", w, n, writerRows)
		}
	}
}

func TestAMigrationAddedBelowTheHighestAppliedStillRuns(t *testing.T) {
	engines(t, testAMigrationAddedBelowTheHighestAppliedStillRuns)
}

func testAMigrationAddedBelowTheHighestAppliedStillRuns(t *testing.T, d Dialect) {
	path, opts := location(t, d)
	ctx := context.Background()
	st, err := Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Pretend the store predates migration 1: forget it and drop its table.
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM schema_migrations WHERE version = 1`); err != nil {
			return err
		}
		_, err := tx.Exec(`DROP TABLE tool_calls`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st2, err := Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if _, err := st2.CountToolCalls(ctx, ""); err != nil {
		t.Fatalf("migration 1 was not re-applied: %v", err)
	}
}

func TestDerivedIsMadeOncePerHandle(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dw.db")
	a, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	made := 0
	mk := func() any { made++; return new(int) }
	if a.Derived("k", mk) != a.Derived("k", mk) || made != 1 {
		t.Fatalf("made %d times on one handle", made)
	}
	if b.Derived("k", mk) == a.Derived("k", mk) || made != 2 {
		t.Fatalf("two handles shared a derived value (made %d)", made)
	}
}

// A write without reference checks does not check foreign keys inside it, and every write after it
// checks them again (on the same single writer connection).
func TestWriteWithoutReferenceChecksIsConfinedToItsTransaction(t *testing.T) {
	st := openTemp(t)
	ctx := context.Background()
	bad := `INSERT INTO graph_fields (asset_id, path, source, observed_at) VALUES (424242, 'c', 's', 't')`
	if err := st.WriteWithoutReferenceChecks(ctx, func(tx *sql.Tx) error {
		var fk int
		if err := tx.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 0 {
			return fmt.Errorf("foreign_keys inside = %d, %v; want 0", fk, err)
		}
		_, err := tx.ExecContext(ctx, bad)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err := st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, strings.Replace(bad, "'c'", "'d'", 1))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("a write after it with a dangling reference: %v, want a FOREIGN KEY failure", err)
	}
}

// However a write without reference checks ends (an error, a panic, its context cancelled around
// the commit), the next write checks references.
func TestReferenceChecksComeBackAfterEveryEnding(t *testing.T) {
	st := openTemp(t)
	ctx := context.Background()
	writerChecks := func(when string) {
		t.Helper()
		if err := st.Write(ctx, func(tx *sql.Tx) error {
			var fk int
			if err := tx.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil {
				return err
			}
			if fk != 1 {
				return fmt.Errorf("foreign_keys = %d", fk)
			}
			return nil
		}); err != nil {
			t.Fatalf("after %s: %v", when, err)
		}
	}
	_ = st.WriteWithoutReferenceChecks(ctx, func(*sql.Tx) error { return errors.New("boom") })
	writerChecks("an error")
	func() {
		defer func() { _ = recover() }()
		_ = st.WriteWithoutReferenceChecks(ctx, func(*sql.Tx) error { panic("boom") })
	}()
	writerChecks("a panic")
	for i := 0; i < 300; i++ {
		cctx, cancel := context.WithCancel(ctx)
		_ = st.WriteWithoutReferenceChecks(cctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(cctx, `INSERT INTO tool_calls(at, agent, tool, outcome, duration_ms, args_sha256) VALUES ('t','a','x','ok',1,'h')`)
			go cancel() // races the commit, as a client hanging up does
			return err
		})
		cancel()
		writerChecks(fmt.Sprintf("cancellation %d", i))
	}
}
