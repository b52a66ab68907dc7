package warehouse

import (
	"context"
	"database/sql"
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
}

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
	return s.tx, func() {}, nil
}

func (s *Snapshot) broke() {
	s.mu.Lock()
	s.broken = true
	s.mu.Unlock()
}
