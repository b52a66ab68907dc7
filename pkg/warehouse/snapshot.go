package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// Snapshot is one read-only view of the warehouse for statements that must agree with each other,
// such as a quality run's pass, its hourly counts and its newest timestamp:
//
//   - PostgreSQL: one READ ONLY, REPEATABLE READ transaction, so every statement sees the same
//     committed data, and the group pays one BEGIN and one ROLLBACK instead of a pair per
//     statement. It is always rolled back, so nothing a statement does to the session outlives
//     it; inside it no statement can make the transaction read-write (PostgreSQL refuses
//     transaction_read_only after the first query), but a statement can change a setting for
//     the ones after it (set_config(…, true)). Only statements the caller wrote itself belong in
//     a snapshot: SQL a user wrote goes through DB, each statement in its own transaction.
//   - SQLite: one deferred read transaction on one connection of the read-only pool; its first
//     read fixes what every later read sees.
//   - Snowflake, which has no read-only transactions: the pool, each statement as DB runs it.
//
// A statement that fails (or is cancelled mid-result) may leave the transaction unusable
// (PostgreSQL aborts it on any error); the statements after it then run as DB runs them, each in
// its own transaction, rather than failing with the first one's error. A Snapshot serves one
// goroutine at a time.
type Snapshot struct {
	w      *DB
	tx     *sql.Tx // nil on Snowflake
	mu     sync.Mutex
	broken bool
	// ran is set once a statement has returned in the snapshot (PostgreSQL takes its
	// snapshot at the first statement); ahead is the check ResolveAhead left to make then.
	ran   bool
	ahead *aheadCheck
}

// aheadCheck is ResolveAhead's deferred marker read: started once the snapshot is taken, its
// answer in err when done closes.
type aheadCheck struct {
	entry   catalogEntry
	table   string
	started bool
	done    chan struct{}
	err     error
}

// ErrCatalogChanged says a table served by ResolveAhead changed (or could not be checked) since
// it was described: whatever was planned from it must be planned again from a fresh Resolve.
var ErrCatalogChanged = errors.New("the table's definition changed since it was described")

// Snapshot begins a snapshot; Close ends it. ctx bounds the whole snapshot (database/sql rolls
// the transaction back when it ends); each statement still has the statement timeout.
func (w *DB) Snapshot(ctx context.Context) (*Snapshot, error) {
	s := &Snapshot{w: w}
	if w.Dialect.Engine == Snowflake {
		return s, nil
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if w.Dialect.Engine == Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := w.sql.BeginTx(ctx, opts)
	if err != nil {
		return nil, w.explain(ctx, err)
	}
	s.tx = tx
	return s, nil
}

// Close rolls the snapshot back (it never wrote anything; rolling back also undoes any setting
// a statement changed).
func (s *Snapshot) Close() error {
	if s == nil || s.tx == nil {
		return nil
	}
	if err := s.tx.Rollback(); err != nil && err != sql.ErrTxDone {
		return err
	}
	return nil
}

// Resolve is DB.Resolve with the cached answer's change marker read inside the snapshot: a run
// that resolves, plans and measures in one snapshot pays no transaction of its own for the
// catalog (on PostgreSQL that was a BEGIN, the marker and a COMMIT, about half a millisecond).
// A table not cached is described on the handle, as DB.Resolve does.
func (s *Snapshot) Resolve(ctx context.Context, table string) (*TableInfo, error) {
	return s.w.cachedResolve(ctx, s, table)
}

// ResolveAhead is Resolve without waiting for the change marker, which is otherwise a statement
// (on PostgreSQL a round trip and a catalog query) before the run's first one. A table cached on
// the handle is served as cached, and its marker is read on another pooled connection once the
// snapshot's first statement has returned. Both engines fix what a snapshot reads at its first
// statement (PostgreSQL's REPEATABLE READ snapshot, SQLite's read transaction), and the other
// connection reads a state at least as new, so a marker that still matches the cache shows the
// table was not changed from its description to the moment the snapshot was taken, which is the
// state every statement of the snapshot reads (what a marker says of the table's definition only
// moves forward: PostgreSQL's transaction ids, SQLite's schema_version; its statistics parts can
// return to an old value, which changes only row estimates). A change committed after that moment also fails
// the check, which only costs the caller a second plan. Verify waits for that answer; until it
// returns nil, nothing measured through the snapshot may be reported. Snowflake, a table not
// cached, a SQLite database not in WAL mode (with a rollback journal a writer waiting to commit
// refuses the second connection's read lock while the snapshot holds its own, and the run would
// wait out the busy timeout), and a handle whose pool is bounded (the marker's connection could
// wait for the snapshot's own) are resolved as Resolve does (Verify then returns nil at once).
func (s *Snapshot) ResolveAhead(ctx context.Context, table string) (*TableInfo, error) {
	if s.tx == nil || !s.w.Dialect.hasCatalogMarker() || s.w.sql.Stats().MaxOpenConnections != 0 {
		return s.Resolve(ctx, table)
	}
	e, ok := s.w.catalog.get(table)
	if !ok || !e.readAhead {
		return s.Resolve(ctx, table)
	}
	s.mu.Lock()
	s.ahead = &aheadCheck{entry: e, table: table, done: make(chan struct{})}
	ran := s.ran
	s.mu.Unlock()
	if ran {
		s.startAhead(ctx)
	}
	return e.info.clone(), nil
}

// Verify is ResolveAhead's answer: nil when the table was unchanged when the snapshot was
// taken, ErrCatalogChanged (wrapping why) when it changed or could not be checked, in which case
// the cached description is dropped. A snapshot with no statement run yet reads the marker in
// the snapshot itself, which takes it.
func (s *Snapshot) Verify(ctx context.Context) error {
	s.mu.Lock()
	a := s.ahead
	s.mu.Unlock()
	if a == nil {
		return nil
	}
	s.startAhead(ctx)
	select {
	case <-a.done:
		return a.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startAhead starts the deferred marker read once. Before any statement it reads in the
// snapshot (taking it); after one, on the pool, beside the snapshot's later statements.
func (s *Snapshot) startAhead(ctx context.Context) {
	s.mu.Lock()
	a := s.ahead
	if a == nil || a.started {
		s.mu.Unlock()
		return
	}
	a.started = true
	ran := s.ran
	s.mu.Unlock()
	check := func(sc scope) {
		defer close(a.done)
		m, err := s.w.catalogMarker(ctx, sc, a.entry.info)
		switch {
		case err != nil:
			a.err = fmt.Errorf("%w: %s: the change marker could not be read: %w", ErrCatalogChanged, a.table, err)
		case m != a.entry.marker:
			a.err = fmt.Errorf("%w: %s", ErrCatalogChanged, a.table)
		}
		if a.err != nil {
			s.w.catalog.drop(a.table)
		}
	}
	if !ran {
		check(s)
		return
	}
	go check(poolScope{s.w})
}

// statementReturned notes that a statement has returned in the snapshot, so its snapshot is
// taken, and starts a deferred marker read waiting for that.
func (s *Snapshot) statementReturned(ctx context.Context) {
	s.mu.Lock()
	first := !s.ran
	s.ran = true
	s.mu.Unlock()
	if first {
		s.startAhead(context.WithoutCancel(ctx))
	}
}

// poolScope runs one statement of our own on the pool, outside any transaction: the deferred
// marker read, one round trip (the session is read-only by default, and the statement is fixed
// catalog SQL, not a caller's).
type poolScope struct{ w *DB }

func (p poolScope) begin(context.Context) (querier, func(), error) { return p.w.sql, func() {}, nil }
func (p poolScope) broke()                                         {}

// QueryRow is DB.QueryRow inside the snapshot.
func (s *Snapshot) QueryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return s.w.queryRow(ctx, s, query, args, dest...)
}

// QueryAll is DB.QueryAll inside the snapshot.
func (s *Snapshot) QueryAll(ctx context.Context, query string, args []any, max int) (Rows, error) {
	return s.w.query(ctx, s, query, args, max)
}

func (s *Snapshot) begin(ctx context.Context) (querier, func(), error) {
	s.mu.Lock()
	broken := s.broken
	s.mu.Unlock()
	if s.tx == nil || broken {
		return s.w.begin(ctx)
	}
	return s.tx, func() { s.statementReturned(ctx) }, nil
}

func (s *Snapshot) broke() {
	s.mu.Lock()
	s.broken = true
	s.mu.Unlock()
}
