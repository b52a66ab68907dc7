// Package store is the one SQLite database that all five agent processes share: the context graph,
// check history, incidents, approvals and receipts. It is opened in WAL mode with a busy timeout and
// foreign keys, every write transaction begins IMMEDIATE (so two processes never deadlock upgrading
// a read lock), and migrations are versioned, embedded and safe when five processes start at once.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Store is an open shared database. Reads go through DB; writes go through Write.
type Store struct {
	// DB is for reads (and for writes that need no transaction). It runs many connections in
	// parallel under WAL.
	DB *sql.DB
	// writer has one connection whose transactions begin IMMEDIATE: one writer per process,
	// serialised across processes by SQLite's lock and the busy timeout.
	writer *sql.DB
	path   string

	derivedMu sync.Mutex
	derived   map[string]any // guarded by derivedMu; see Derived
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
	BusyTimeout time.Duration
}

// Open opens (creating if needed) the database at path and brings its schema up to date.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 15 * time.Second
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
	s := &Store{DB: readDB, writer: writeDB, path: path}
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

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes both pools.
func (s *Store) Close() error {
	return errors.Join(s.DB.Close(), s.writer.Close())
}

// Write runs fn in one IMMEDIATE transaction, committing when fn returns nil. SQLite's busy
// timeout handles contention from other processes; a lock still held after it is reported as such.
func (s *Store) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return s.wrapBusy(fmt.Errorf("store: begin write: %w", err))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.wrapBusy(fmt.Errorf("store: commit: %w", err))
	}
	return nil
}

func (s *Store) wrapBusy(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return fmt.Errorf("%w (another process held the write lock longer than store.busy_timeout; raise it or find the long writer)", err)
	}
	return err
}

// IsUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY constraint failure.
func IsUniqueViolation(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrConstraint &&
		(se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
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
