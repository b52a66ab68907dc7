package store

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
)

// plainName is what ReserveIDs accepts as a table name: it is written into the SQL.
var plainName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// ReserveIDs takes n ids of table's generated key (its AUTOINCREMENT or identity column "id")
// that no insert will be given by the store: a row can be named before it is written (WriteBehind)
// and inserted later with its id. An id reserved and never used is a gap, never reused. On SQLite
// the ids are consecutive and come from the table's sqlite_sequence row, moved on in one write
// transaction (any process's insert without an id then gets a later one); on PostgreSQL they are
// the table's sequence's next values, which no rollback returns.
func (s *Store) ReserveIDs(ctx context.Context, table string, n int) ([]int64, error) {
	if !plainName.MatchString(table) {
		return nil, fmt.Errorf("store: reserve ids: %q is not a table name", table)
	}
	if n < 1 {
		return nil, fmt.Errorf("store: reserve ids of %s: asked for %d", table, n)
	}
	if s.dialect == PostgreSQL {
		return s.reservePostgresIDs(ctx, table, n)
	}
	var last int64
	err := s.Write(ctx, func(tx *sql.Tx) error {
		// The sequence row exists once the table has had a row; it never lags the largest id
		// (SQLite moves it on every insert), but taking the larger of the two costs one seek.
		err := tx.QueryRowContext(ctx, `UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(id), 0) FROM `+table+`)) + ?
WHERE name = ? RETURNING seq`, n, table).Scan(&last)
		if err == sql.ErrNoRows {
			err = tx.QueryRowContext(ctx, `INSERT INTO sqlite_sequence (name, seq) SELECT ?, coalesce(max(id), 0) + ? FROM `+table+` RETURNING seq`,
				table, n).Scan(&last)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: reserve %d ids of %s: %w", n, table, err)
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = last - int64(n-1-i)
	}
	return ids, nil
}

// reservePostgresIDs reads n values of table's id sequence, outside any transaction (nextval is
// refused in a read-only one, and needs no write lock: no two calls get the same value).
func (s *Store) reservePostgresIDs(ctx context.Context, table string, n int) ([]int64, error) {
	rows, err := s.writer.QueryContext(ctx, `SELECT nextval(pg_get_serial_sequence(?, 'id')) FROM generate_series(1, ?)`, table, n)
	if err != nil {
		return nil, fmt.Errorf("store: reserve %d ids of %s: %w", n, table, err)
	}
	defer rows.Close()
	ids := make([]int64, 0, n)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: reserve %d ids of %s: %w", n, table, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reserve %d ids of %s: %w", n, table, err)
	}
	return ids, nil
}
