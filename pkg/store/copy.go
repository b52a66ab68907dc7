package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CopyOptions tune Copy.
type CopyOptions struct {
	// Replace empties a target that already holds data instead of refusing it.
	Replace bool
}

// TableCount is how many rows of one table were copied.
type TableCount struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
}

// ErrTargetNotEmpty is returned (wrapped) by Copy for a target that already holds data.
var ErrTargetNotEmpty = errors.New("the target store already holds data")

// copyBatch is how many rows one INSERT carries (well under PostgreSQL's 65,535 parameters).
const copyBatch = 200

// Copy copies every table of src (but those dst's triggers keep, triggerKept) into dst, which must be at the same schema version: table by
// table in foreign-key order, inside one write transaction of dst, read from one snapshot of src,
// so the target ends with all of it or none of it. Every row keeps its id (receipt sequence
// numbers and MACs included, so the chain verifies afterwards with the same key), and dst's id
// counters are moved past the copied ids. A target that holds data is refused unless
// opts.Replace, which empties it first in the same transaction.
func Copy(ctx context.Context, src, dst *Store, opts CopyOptions) ([]TableCount, error) {
	sv, err := src.SchemaVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("store copy: read the source's schema version: %w", err)
	}
	dv, err := dst.SchemaVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("store copy: read the target's schema version: %w", err)
	}
	if sv != dv {
		return nil, fmt.Errorf("store copy: the source is at schema version %d, the target at %d: run the same Data Workers version on both", sv, dv)
	}
	rtx, err := src.ReadTx(ctx)
	if err != nil {
		return nil, err
	}
	defer rtx.Rollback()
	tables, err := copyOrder(ctx, src, rtx)
	if err != nil {
		return nil, err
	}
	tables = slices.DeleteFunc(tables, func(t string) bool { return triggerKept[t] })
	var out []TableCount
	err = dst.Write(ctx, func(tx *sql.Tx) error {
		out = nil
		dirty, err := holdsData(ctx, tx, tables)
		if err != nil {
			return err
		}
		if dirty != "" {
			if !opts.Replace {
				return fmt.Errorf("store copy: %w (table %s has rows): copy into an empty store, or pass --replace to overwrite it", ErrTargetNotEmpty, dirty)
			}
		}
		// Children first; the edge-delete trigger's bookkeeping (graph_generation and the
		// change log) is emptied after the edges it follows.
		for _, t := range slices.Backward(tables) {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+quoteIdent(t)); err != nil {
				return fmt.Errorf("store copy: empty %s: %w", t, err)
			}
		}
		for _, t := range tables {
			cols, err := columnsOf(ctx, dst, tx, t)
			if err != nil {
				return err
			}
			n, err := copyTable(ctx, rtx, tx, t, cols)
			if err != nil {
				return err
			}
			out = append(out, TableCount{Table: t, Rows: n})
		}
		if dst.dialect == PostgreSQL {
			return resetIdentities(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// triggerKept are the tables the target's own triggers write as the other tables are emptied and
// copied: copying them too would collide with those rows. Their values only mean something inside
// one store (quality_series_versions: a version that only ever grows, per asset, which processes
// attached to the target compare with what they cached from it), so the target's triggers are
// the right source.
var triggerKept = map[string]bool{"quality_series_versions": true}

// bookkeeping are the tables whose single row exists in a store that holds nothing yet, and the
// condition under which that row still says "nothing".
var bookkeeping = map[string]string{
	"graph_generation": "n <> 0",
	"receipt_chain":    "count <> 0",
}

// holdsData names the first table of tables that holds data in tx's store ("" when none does).
func holdsData(ctx context.Context, tx *sql.Tx, tables []string) (string, error) {
	for _, t := range tables {
		q := `SELECT EXISTS (SELECT 1 FROM ` + quoteIdent(t)
		if cond, ok := bookkeeping[t]; ok {
			q += ` WHERE ` + cond
		}
		q += `)`
		var has bool
		if err := tx.QueryRowContext(ctx, q).Scan(&has); err != nil {
			return "", fmt.Errorf("store copy: inspect target table %s: %w", t, err)
		}
		if has {
			return t, nil
		}
	}
	return "", nil
}

// copyOrder lists src's tables (not schema_migrations, which each store keeps for itself) so that
// every table comes after the tables its foreign keys reference; ties go by name.
func copyOrder(ctx context.Context, src *Store, tx *sql.Tx) ([]string, error) {
	var q, fkq string
	switch src.dialect {
	case PostgreSQL:
		q = `SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
		fkq = `SELECT tc.table_name::text, ccu.table_name::text FROM information_schema.table_constraints tc
			JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = tc.constraint_name AND ccu.constraint_schema = tc.constraint_schema
			WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema()`
	default:
		q = `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
		fkq = `SELECT m.name, f."table" FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table'`
	}
	names, err := pairsOrNames(ctx, tx, q, false)
	if err != nil {
		return nil, fmt.Errorf("store copy: list the source's tables: %w", err)
	}
	deps := map[string][]string{}
	pairs, err := pairsOrNames(ctx, tx, fkq, true)
	if err != nil {
		return nil, fmt.Errorf("store copy: read the source's foreign keys: %w", err)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != pairs[i+1] {
			deps[pairs[i]] = append(deps[pairs[i]], pairs[i+1])
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == "schema_migrations" })
	slices.Sort(names)
	var order []string
	placed := map[string]bool{}
	for len(order) < len(names) {
		progress := false
		for _, t := range names {
			if placed[t] {
				continue
			}
			ready := true
			for _, d := range deps[t] {
				ready = ready && placed[d]
			}
			if ready {
				placed[t], progress = true, true
				order = append(order, t)
			}
		}
		if !progress {
			return nil, errors.New("store copy: the source's foreign keys form a cycle")
		}
	}
	return order, nil
}

// pairsOrNames reads a one-column (or, with pairs, two-column) text result as one flat list.
func pairsOrNames(ctx context.Context, tx *sql.Tx, q string, pairs bool, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a, b string
		dest := []any{&a}
		if pairs {
			dest = append(dest, &b)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, a)
		if pairs {
			out = append(out, b)
		}
	}
	return out, rows.Err()
}

// columnsOf lists table's columns in the target, in order. A SQLite source gives up its implicit
// rowid for the PostgreSQL tables that carry it as a column.
func columnsOf(ctx context.Context, dst *Store, tx *sql.Tx, table string) ([]string, error) {
	q := `SELECT name FROM pragma_table_info(?) ORDER BY cid`
	if dst.dialect == PostgreSQL {
		q = `SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`
	}
	cols, err := pairsOrNames(ctx, tx, q, false, table)
	if err != nil {
		return nil, fmt.Errorf("store copy: columns of %s: %w", table, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("store copy: the target has no table %s: is it a Data Workers store at the same version?", table)
	}
	return cols, nil
}

// copyTable reads every row of table from src and inserts it into dst, copyBatch rows a statement.
func copyTable(ctx context.Context, src, dst *sql.Tx, table string, cols []string) (int64, error) {
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = quoteIdent(c)
	}
	list := strings.Join(quoted, ", ")
	rows, err := src.QueryContext(ctx, `SELECT `+list+` FROM `+quoteIdent(table))
	if err != nil {
		return 0, fmt.Errorf("store copy: read %s: %w", table, err)
	}
	// All rows are read before any is written: the target transaction is another connection, but
	// reading to the end first keeps the source snapshot's connection free of interleaving.
	var all [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			rows.Close()
			return 0, fmt.Errorf("store copy: read %s: %w", table, err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok { // every column is TEXT, INTEGER or REAL
				vals[i] = string(b)
			}
		}
		all = append(all, vals)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("store copy: read %s: %w", table, err)
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	for start := 0; start < len(all); start += copyBatch {
		batch := all[start:min(start+copyBatch, len(all))]
		args := make([]any, 0, len(batch)*len(cols))
		for _, r := range batch {
			args = append(args, r...)
		}
		q := `INSERT INTO ` + quoteIdent(table) + ` (` + list + `) VALUES ` + strings.TrimSuffix(strings.Repeat(row+", ", len(batch)), ", ")
		if _, err := dst.ExecContext(ctx, q, args...); err != nil {
			return 0, fmt.Errorf("store copy: write %s (rows %d–%d): %w; nothing was copied", table, start+1, start+len(batch), err)
		}
	}
	return int64(len(all)), nil
}

// resetIdentities moves every identity column's counter past the highest copied value, so the
// next row a team agent writes never reuses a copied id.
func resetIdentities(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND is_identity = 'YES'`)
	if err != nil {
		return fmt.Errorf("store copy: list id counters: %w", err)
	}
	var pairs [][2]string
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			rows.Close()
			return err
		}
		pairs = append(pairs, [2]string{t, c})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range pairs {
		t, c := quoteIdent(p[0]), quoteIdent(p[1])
		if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence(?, ?), COALESCE((SELECT max(`+c+`) FROM `+t+`), 0) + 1, false)`,
			p[0], p[1]); err != nil {
			return fmt.Errorf("store copy: move the id counter of %s.%s: %w", p[0], p[1], err)
		}
	}
	return nil
}

// quoteIdent quotes an identifier for both engines.
func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
