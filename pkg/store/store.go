// Package store is the one database that all five agent processes share: the context graph, check
// history, incidents, approvals and receipts. It is an embedded SQLite file by default (WAL mode, a
// busy timeout, foreign keys, every write transaction begun IMMEDIATE so two processes never
// deadlock upgrading a read lock) or, for a team, a PostgreSQL database named by a URL, where every
// write transaction first takes one transaction-scoped advisory lock, so writers are serialised
// exactly as SQLite serialises them. Callers see database/sql either way and write one SQL: `?`
// placeholders are rebound for PostgreSQL. Migrations are versioned per engine, embedded and safe
// when five processes start at once.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// Store is an open shared database. Reads go through DB; writes go through Write.
type Store struct {
	// DB is for reads (and for writes that need no transaction). It runs many connections in
	// parallel under WAL.
	DB *sql.DB
	// writer has one connection whose transactions begin IMMEDIATE: one writer per process,
	// serialised across processes by SQLite's lock and the busy timeout.
	writer  *sql.DB
	path    string
	dialect Dialect
	// where names the database in messages: the file, or the URL without its password.
	where string

	derivedMu sync.Mutex
	derived   map[string]any // guarded by derivedMu; see Derived

	behind behindQueue // writes queued behind an answer (behind.go)
}

// Derived returns the value kept under key for this handle, making it on first use. It is where a
// package keeps state derived from the database that must outlive one request but not the handle —
// the graph's in-memory adjacency — without a package-level cache. make runs at most once per key.
func (s *Store) Derived(key string, make func() any) any {
	s.derivedMu.Lock()
	defer s.derivedMu.Unlock()
	if v, ok := s.derived[key]; ok {
		return v
	}
	if s.derived == nil {
		s.derived = map[string]any{}
	}
	v := make()
	s.derived[key] = v
	return v
}

// Options tune Open; the zero value is fine.
type Options struct {
	// BusyTimeout is how long a writer waits for another writer's lock before failing.
	BusyTimeout time.Duration
	// URL, when set (postgres://… or postgresql://…), puts the store on that PostgreSQL database.
	// The path given to Open then only anchors the files kept beside the store on this machine
	// (the receipts key).
	URL string
}

// Dialect is the engine under a store, for the rare SQL that cannot be written once for both.
type Dialect int

// The engines a store runs on.
const (
	SQLite Dialect = iota
	PostgreSQL
)

func (d Dialect) String() string {
	if d == PostgreSQL {
		return "postgresql"
	}
	return "sqlite"
}

// Dialect is the engine this store runs on.
func (s *Store) Dialect() Dialect { return s.dialect }

// Where names the database for messages: the SQLite file, or the PostgreSQL URL without its password.
func (s *Store) Where() string { return s.where }

// Open opens (creating if needed) the store and brings its schema up to date: the SQLite file at
// path, or the PostgreSQL database at opts.URL.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 15 * time.Second
	}
	if opts.URL != "" {
		return openPostgres(ctx, path, opts)
	}
	if path == "" {
		return nil, errors.New("store: empty path; set store.path in the config")
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store %s: cannot create directory %s: %w (set store.path or DW_HOME to a writable place)", path, dir, err)
	}
	readDB, err := sql.Open("sqlite3", dsn(path, opts, "deferred"))
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	writeDB, err := sql.Open("sqlite3", dsn(path, opts, "immediate"))
	if err != nil {
		readDB.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	writeDB.SetMaxOpenConns(1)
	readDB.SetMaxOpenConns(8)
	s := &Store{DB: readDB, writer: writeDB, path: path, dialect: SQLite, where: path}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, explain(path, err)
	}
	return s, nil
}

func dsn(path string, opts Options, txlock string) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(opts.BusyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", txlock)
	// Each connection keeps its last 64 statements compiled: the history's writes and reads are a
	// few fixed texts sent on every check run.
	q.Set("_stmt_cache_size", "64")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// explain turns SQLite's terse failures into messages that say what to do.
func explain(path string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrNotADB, sqlite3.ErrCorrupt:
			return fmt.Errorf("store %s is not a valid SQLite database or is corrupt (%v): move it aside and restart, or point store.path elsewhere", path, err)
		case sqlite3.ErrCantOpen, sqlite3.ErrPerm, sqlite3.ErrReadonly, sqlite3.ErrAuth:
			return fmt.Errorf("store %s cannot be opened for writing (%v): check the file and directory permissions, or set store.path / DW_HOME", path, err)
		}
	}
	return fmt.Errorf("store %s: %w", path, err)
}

// Path is the configured store.path: the SQLite file, and on PostgreSQL the place beside which
// this machine keeps the store's local files (the receipts key).
func (s *Store) Path() string { return s.path }

// Close writes what is still queued behind an answer (WriteBehind), then closes both pools. A
// queued write that fails is lost, and its error is returned.
func (s *Store) Close() error {
	var lost error
	if err := s.Flush(context.Background()); err != nil {
		lost = fmt.Errorf("store %s: a write queued behind an answer was lost: %w", s.where, err)
	}
	s.behind.closeQueue()
	if s.writer == s.DB {
		return errors.Join(lost, s.DB.Close())
	}
	return errors.Join(lost, s.DB.Close(), s.writer.Close())
}

// ReadTx begins a read-only transaction that sees one consistent state of the store for all its
// statements (SQLite: a deferred transaction's snapshot; PostgreSQL: REPEATABLE READ, since its
// default isolation takes a new snapshot per statement). Roll it back when done.
func (s *Store) ReadTx(ctx context.Context) (*sql.Tx, error) {
	var opts *sql.TxOptions
	if s.dialect == PostgreSQL {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	tx, err := s.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("store: begin read: %w", err)
	}
	return tx, nil
}

// writeLockKey is the PostgreSQL advisory lock every write transaction takes first ("dw-write").
// One fixed key for every writer gives PostgreSQL the semantics SQLite's single write lock has:
// dispatch claims, approval decisions, the receipt chain's head and the graph generation are each
// read and advanced by one writer at a time, on every machine, with no retry loop to get wrong.
const writeLockKey int64 = 0x64772d7772697465

// Write runs fn in one write transaction, committing when fn returns nil. On SQLite the transaction
// begins IMMEDIATE and the busy timeout handles contention from other processes; on PostgreSQL it
// first takes the store's write lock (pg_advisory_xact_lock, released at commit or rollback) and
// lock_timeout bounds the wait. A lock still held after the timeout is reported as such.
func (s *Store) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return s.wrapBusy(fmt.Errorf("store: begin write: %w", err))
	}
	return s.run(ctx, tx, fn)
}

// WriteWithoutReferenceChecks is Write for a bulk writer that sets every foreign key it writes from rows
// it read in the same transaction (pkg/graph's imports take each asset id from graph_assets), so
// the references are right by construction: on SQLite, enforcement is off for this transaction,
// which spares a lookup in the parent table per reference (about 0.8 s in a 1.75-million-row
// import). SQLite can only switch enforcement outside a transaction, so it is switched on the
// writer connection around it, and a connection that cannot be switched back is discarded. On
// PostgreSQL it is Write.
func (s *Store) WriteWithoutReferenceChecks(ctx context.Context, fn func(*sql.Tx) error) error {
	if s.dialect != SQLite {
		return s.Write(ctx, fn)
	}
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return s.wrapBusy(fmt.Errorf("store: begin write: %w", err))
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return fmt.Errorf("store: begin write: %w", err)
	}
	defer func() {
		// Never hand the pool a connection that does not check references. SQLite ignores the
		// pragma, without an error, while a transaction is still open on the connection (a commit
		// cancelled by its context leaves the rollback to database/sql, on its own time), so
		// what counts is the setting read back.
		on := 0
		_, err := conn.ExecContext(context.Background(), `PRAGMA foreign_keys = ON`)
		if err == nil {
			err = conn.QueryRowContext(context.Background(), `PRAGMA foreign_keys`).Scan(&on)
		}
		if err != nil || on != 1 {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.wrapBusy(fmt.Errorf("store: begin write: %w", err))
	}
	return s.run(ctx, tx, fn)
}

// run runs fn in the write transaction tx, committing when fn returns nil. A panic in fn rolls
// the transaction back before it goes on up: a server that recovers a tool's panic must not be
// left holding the single writer connection in an open transaction that every later write waits on.
func (s *Store) run(ctx context.Context, tx *sql.Tx, fn func(*sql.Tx) error) (err error) {
	ended := false // set once fn has returned: from then on each path ends the transaction itself
	defer func() {
		if !ended {
			_ = tx.Rollback() // only reached by a panic; the error paths below roll back themselves
		}
	}()
	if s.dialect == PostgreSQL {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, writeLockKey); err != nil {
			_ = tx.Rollback()
			return s.wrapBusy(fmt.Errorf("store: take the write lock: %w", err))
		}
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	ended = true
	if err := tx.Commit(); err != nil {
		return s.wrapBusy(fmt.Errorf("store: commit: %w", err))
	}
	return nil
}

func (s *Store) wrapBusy(err error) error {
	var se sqlite3.Error
	var pe *pgconn.PgError
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) ||
		errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available: lock_timeout passed
		return fmt.Errorf("%w (another process held the write lock longer than store.busy_timeout; raise it or find the long writer)", err)
	}
	return err
}

// IsUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY constraint failure.
func IsUniqueViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrConstraint &&
			(se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" // unique_violation
}

// isUndefinedTable reports whether err says a table does not exist (a store not yet migrated).
func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "42P01"
	}
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// IsPostgresURL reports whether u names a PostgreSQL store.
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// RedactURL is u without its password, for messages and logs (a URL that does not parse is not
// shown at all, since where its password is cannot be known).
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" && p.Path == "" {
		return "(unparseable store URL)"
	}
	q := p.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		p.RawQuery = q.Encode()
	}
	return p.Redacted()
}

// openPostgres opens the store on the PostgreSQL database at opts.URL. One pool serves reads and
// writes: writes are serialised by the advisory lock, not by a dedicated connection.
func openPostgres(ctx context.Context, path string, opts Options) (*Store, error) {
	where := RedactURL(opts.URL)
	if !IsPostgresURL(opts.URL) {
		return nil, fmt.Errorf("store.url %s: want postgres://user@host:port/database", where)
	}
	cfg, err := pgx.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("store.url %s: %s", where, scrub(err, cfg, opts.URL))
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "data-workers"
	}
	db := sql.OpenDB(newPGConnector(cfg))
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(8)
	s := &Store{DB: db, writer: db, path: path, dialect: PostgreSQL, where: where}
	if err := s.DB.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: cannot connect: %s (check store.url / DW_STORE_URL and that the server accepts this user)", where, scrub(err, cfg, opts.URL))
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %s", where, scrub(err, cfg, opts.URL))
	}
	return s, nil
}

// scrub is err's text with the URL's password removed, for errors that may quote the connection
// string back.
func scrub(err error, cfg *pgx.ConnConfig, raw string) string {
	msg := err.Error()
	if cfg != nil && cfg.Password != "" {
		msg = strings.ReplaceAll(msg, cfg.Password, "xxxxx")
	}
	if p, perr := url.Parse(raw); perr == nil {
		if pw, ok := p.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

// ServerVersion is the engine's version: SQLite's library version or PostgreSQL's server_version.
func (s *Store) ServerVersion(ctx context.Context) (string, error) {
	q := `SELECT sqlite_version()`
	if s.dialect == PostgreSQL {
		q = `SHOW server_version`
	}
	var v string
	if err := s.DB.QueryRowContext(ctx, q).Scan(&v); err != nil {
		return "", fmt.Errorf("store: read the engine version: %w", err)
	}
	return v, nil
}

// Timestamp formats t the way every table stores time: UTC RFC 3339 with nanoseconds, which sorts
// as text.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}

// ParseOptionalTimestamp reads a nullable time column ("" for NULL) as nil or a time.
func ParseOptionalTimestamp(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := ParseTimestamp(s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// ParseTimestamp reads a value written by Timestamp.
func ParseTimestamp(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: bad timestamp %q: %w", s, err)
	}
	return t, nil
}
