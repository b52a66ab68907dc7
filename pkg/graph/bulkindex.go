package graph

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// bulkIndexMinRows is the fewest rows an import must write into a table before its secondary
// indexes are dropped and built again (see indexDeferrer): below it, updating them row by row
// costs less than sorting the table.
const bulkIndexMinRows = 50_000

// indexDeferrer drops, inside a source's first import, the secondary indexes of each table the
// import has put at least as many rows into as the table held before it (and at least minRows),
// and creates them again from their own definitions once the rows are in, before anything reads
// through them. Building an index once from sorted keys costs a fraction of inserting a million
// rows into four B-trees. The decision is taken as the rows come (an overlapped import does not
// know its size in advance): the rows written before the drop were indexed one by one, and the
// rebuild covers them with the rest. The unique constraints' automatic indexes stay: the upserts
// need them. It is SQLite's: the schema is read from sqlite_master, and DDL is transactional
// there, so a failed import rolls the indexes back with its rows, and readers in WAL mode keep
// seeing the committed indexes meanwhile. A nil *indexDeferrer defers nothing.
type indexDeferrer struct {
	tx      *sql.Tx
	minRows int
	held    map[string]int64 // max(rowid) of each table when the import began: at least its rows
	dropped map[string]bool
	defs    []string // the dropped indexes' definitions, in the order they were dropped
}

// newIndexDeferrer reads, in tx, how many rows each table an import writes holds before it.
func newIndexDeferrer(ctx context.Context, tx *sql.Tx, minRows int) (*indexDeferrer, error) {
	d := &indexDeferrer{tx: tx, minRows: minRows, held: map[string]int64{}, dropped: map[string]bool{}}
	for _, table := range []string{"graph_asset_claims", "graph_fields", "graph_edges"} {
		var held sql.NullInt64 // max(rowid): at least the rows held, read in O(1)
		if err := tx.QueryRowContext(ctx, `SELECT max(rowid) FROM `+table).Scan(&held); err != nil {
			return nil, fmt.Errorf("graph: size of %s: %w", table, err)
		}
		d.held[table] = held.Int64
	}
	return d, nil
}

// grow says the import has now put n rows into table; once that is enough, the table's secondary
// indexes are dropped (once).
func (d *indexDeferrer) grow(ctx context.Context, table string, n int) error {
	if d == nil || d.dropped[table] || n < d.minRows || int64(n) < d.held[table] {
		return nil
	}
	d.dropped[table] = true
	list, err := d.tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name`, table)
	if err != nil {
		return fmt.Errorf("graph: indexes of %s: %w", table, err)
	}
	var names []string
	for list.Next() {
		var name, def string
		if err := list.Scan(&name, &def); err != nil {
			list.Close()
			return fmt.Errorf("graph: indexes of %s: %w", table, err)
		}
		names, d.defs = append(names, name), append(d.defs, def)
	}
	list.Close()
	if err := list.Err(); err != nil {
		return fmt.Errorf("graph: indexes of %s: %w", table, err)
	}
	for _, name := range names {
		if _, err := d.tx.ExecContext(ctx, `DROP INDEX "`+strings.ReplaceAll(name, `"`, `""`)+`"`); err != nil {
			return fmt.Errorf("graph: defer index %s: %w", name, err)
		}
	}
	return nil
}

// rebuild creates the dropped indexes again, in the same transaction.
func (d *indexDeferrer) rebuild(ctx context.Context) error {
	if d == nil || len(d.defs) == 0 {
		return nil
	}
	// The sorts behind CREATE INDEX may use a second core.
	if _, err := d.tx.ExecContext(ctx, `PRAGMA threads = 2`); err != nil {
		return fmt.Errorf("graph: rebuild index after bulk import: %w", err)
	}
	defer d.tx.ExecContext(ctx, `PRAGMA threads = 0`) //nolint:errcheck // best effort: the default again
	for _, def := range d.defs {
		if _, err := d.tx.ExecContext(ctx, def); err != nil {
			return fmt.Errorf("graph: rebuild index after bulk import: %w", err)
		}
	}
	d.defs = nil
	return nil
}
