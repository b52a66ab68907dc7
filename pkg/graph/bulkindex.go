package graph

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// bulkIndexMinRows is the fewest rows an import must write into a table before its secondary
// indexes are dropped and built again (see sqliteDeferIndexes): below it, updating them row by row
// costs less than sorting the table.
const bulkIndexMinRows = 50_000

// sqliteDeferIndexes drops, inside tx, the secondary indexes of each table that a source's first
// import is about to write at least as many rows into as the table holds already (and at least
// minRows), and returns the function that creates them again from their own definitions, to be
// called in the same transaction after the rows are written and before anything reads through
// them. Building an index once from sorted keys costs a fraction of inserting a million rows into
// four B-trees. The unique constraints' automatic indexes stay: the upserts need them. It is
// SQLite's: the schema is read from sqlite_master, and DDL is transactional there, so a failed
// import rolls the indexes back with its rows, and readers in WAL mode keep seeing the committed
// indexes meanwhile.
func sqliteDeferIndexes(ctx context.Context, tx *sql.Tx, rows map[string]int, minRows int) (rebuild func(context.Context) error, err error) {
	var defs []string
	rebuild = func(ctx context.Context) error {
		if len(defs) == 0 {
			return nil
		}
		// The sorts behind CREATE INDEX may use a second core (nothing else runs meanwhile).
		if _, err := tx.ExecContext(ctx, `PRAGMA threads = 2`); err != nil {
			return fmt.Errorf("graph: rebuild index after bulk import: %w", err)
		}
		defer tx.ExecContext(ctx, `PRAGMA threads = 0`) //nolint:errcheck // best effort: the default again
		for _, def := range defs {
			if _, err := tx.ExecContext(ctx, def); err != nil {
				return fmt.Errorf("graph: rebuild index after bulk import: %w", err)
			}
		}
		return nil
	}
	for table, n := range rows {
		if n < minRows {
			continue
		}
		var held sql.NullInt64 // max(rowid): at least the rows held, read in O(1)
		if err := tx.QueryRowContext(ctx, `SELECT max(rowid) FROM `+table).Scan(&held); err != nil {
			return nil, fmt.Errorf("graph: size of %s: %w", table, err)
		}
		if held.Int64 > int64(n) {
			continue
		}
		list, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`, table)
		if err != nil {
			return nil, fmt.Errorf("graph: indexes of %s: %w", table, err)
		}
		var names []string
		for list.Next() {
			var name, def string
			if err := list.Scan(&name, &def); err != nil {
				list.Close()
				return nil, fmt.Errorf("graph: indexes of %s: %w", table, err)
			}
			names, defs = append(names, name), append(defs, def)
		}
		list.Close()
		if err := list.Err(); err != nil {
			return nil, fmt.Errorf("graph: indexes of %s: %w", table, err)
		}
		for _, name := range names {
			if _, err := tx.ExecContext(ctx, `DROP INDEX "`+strings.ReplaceAll(name, `"`, `""`)+`"`); err != nil {
				return nil, fmt.Errorf("graph: defer index %s: %w", name, err)
			}
		}
	}
	return rebuild, nil
}
