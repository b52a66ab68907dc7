package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxBulkTables bounds one DescribeColumns call; a catalog harvest passes at most its own bound.
const MaxBulkTables = 10000

// maxBulkColumns bounds the rows one bulk column read returns (a wide estate, not a runaway).
const maxBulkColumns = 2_000_000

// sfBulkChunk is how many table names one Snowflake COLUMNS query binds.
const sfBulkChunk = 1000

// DescribeColumns reads the columns and primary keys of listed tables (as ListTables returned
// them) in bulk, instead of one Resolve per table: SQLite one query per schema (sqlite_schema
// joined with pragma_table_info), PostgreSQL one query for the columns and one for the primary
// keys of the connected database, Snowflake one INFORMATION_SCHEMA.COLUMNS query per schema (per
// 1000 tables). The result is in the order of tables, with Columns and PrimaryKey filled as
// Resolve fills them (Snowflake declares no enforced keys); UniqueKeys and IndexedColumns are
// left empty. A table whose columns are not visible comes back with none.
func (w *DB) DescribeColumns(ctx context.Context, tables []Table) ([]TableInfo, error) {
	if len(tables) > MaxBulkTables {
		return nil, fmt.Errorf("%d tables: describe at most %d at once", len(tables), MaxBulkTables)
	}
	out := make([]TableInfo, len(tables))
	index := map[TableRef]int{}
	for i, t := range tables {
		for _, p := range []string{t.Database, t.Schema, t.Name} {
			if p == "" {
				continue
			}
			if err := ValidateIdent(p); err != nil {
				return nil, fmt.Errorf("table %s: %w", t.Ref(), err)
			}
		}
		out[i] = TableInfo{Table: t}
		index[t.Ref()] = i
	}
	// group lists table names per (database, schema), in first-seen order.
	type group struct {
		db, schema string
		names      []string
	}
	var groups []*group
	byKey := map[[2]string]*group{}
	for _, t := range tables {
		k := [2]string{t.Database, t.Schema}
		g := byKey[k]
		if g == nil {
			g = &group{db: t.Database, schema: t.Schema}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.names = append(g.names, t.Name)
	}
	add := func(ref TableRef, c Column) {
		if i, ok := index[ref]; ok {
			out[i].Columns = append(out[i].Columns, c)
		}
	}
	var err error
	switch w.Dialect.Engine {
	case SQLite:
		for _, g := range groups {
			if err = w.sqliteBulk(ctx, g.schema, g.names, out, index); err != nil {
				break
			}
		}
	case Postgres:
		err = w.pgBulk(ctx, tables, out, index, add)
	case Snowflake:
		for _, g := range groups {
			for start := 0; start < len(g.names) && err == nil; start += sfBulkChunk {
				err = w.sfBulk(ctx, g.db, g.schema, g.names[start:min(start+sfBulkChunk, len(g.names))], add)
			}
			if err != nil {
				break
			}
		}
	default:
		err = fmt.Errorf("engine %s has no catalog reader", w.Dialect.Engine)
	}
	if err != nil {
		return nil, fmt.Errorf("describe tables: %w", err)
	}
	for i := range out {
		slices.SortStableFunc(out[i].Columns, func(a, b Column) int { return a.Position - b.Position })
	}
	return out, nil
}

// sqliteBulk reads one schema's columns and primary keys in one statement. The schema is quoted
// (it came from the catalog); the table names are bound as one JSON array.
func (w *DB) sqliteBulk(ctx context.Context, schema string, names []string, out []TableInfo, index map[TableRef]int) error {
	if schema == "" {
		schema = "main"
	}
	qs, err := w.Dialect.Quote(schema)
	if err != nil {
		return err
	}
	list, err := json.Marshal(names)
	if err != nil {
		return err
	}
	q := `SELECT m.name, p.cid, p.name, p.type, p."notnull", p.pk FROM ` + qs + `.sqlite_schema AS m JOIN pragma_table_info(m.name, ?) AS p
WHERE m.type IN ('table', 'view') AND m.name IN (SELECT value FROM json_each(?)) ORDER BY m.name, p.cid`
	rows, err := w.QueryAll(ctx, q, []any{schema, string(list)}, maxBulkColumns)
	if err != nil {
		return err
	}
	if len(rows.Rows) == maxBulkColumns {
		return fmt.Errorf("more than %d columns in schema %s", maxBulkColumns, schema)
	}
	type pkcol struct {
		name string
		pos  int64
	}
	pks := map[int][]pkcol{}
	for _, r := range rows.Rows {
		i, ok := index[TableRef{Schema: schema, Name: str(r[0])}]
		if !ok {
			continue
		}
		ti := &out[i]
		ti.Columns = append(ti.Columns, Column{Name: str(r[2]), Type: str(r[3]), Nullable: Int(r[4]) == 0, Position: int(Int(r[1])) + 1})
		if p := Int(r[5]); p > 0 {
			pks[i] = append(pks[i], pkcol{str(r[2]), p})
		}
	}
	for i, cols := range pks {
		slices.SortFunc(cols, func(a, b pkcol) int { return int(a.pos - b.pos) })
		for _, c := range cols {
			out[i].PrimaryKey = append(out[i].PrimaryKey, c.name)
		}
	}
	return nil
}

// pgBulk reads the columns of every listed table of the connected database in one statement and
// their primary keys in another; (schema, name) pairs are bound as two arrays. Types come from
// format_type, as pgDescribe reads them, so a bulk read and a per-table describe agree.
func (w *DB) pgBulk(ctx context.Context, tables []Table, out []TableInfo, index map[TableRef]int, add func(TableRef, Column)) error {
	var schemas, names []string
	db := ""
	for _, t := range tables {
		if db == "" {
			db = t.Database
		}
		if t.Database != db {
			return fmt.Errorf("table %s is in database %s, not %s: one PostgreSQL connection reads one database", t.Ref(), t.Database, db)
		}
		schemas, names = append(schemas, t.Schema), append(names, t.Name)
	}
	if len(tables) == 0 {
		return nil
	}
	const wanted = `SELECT c.oid, n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN unnest($1::text[], $2::text[]) AS w(schema, name) ON w.schema = n.nspname AND w.name = c.relname`
	cols, err := w.QueryAll(ctx, `WITH t AS (`+wanted+`)
SELECT current_database(), t.nspname, t.relname, a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, a.attnum
FROM t JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY t.nspname, t.relname, a.attnum`, []any{schemas, names}, maxBulkColumns)
	if err != nil {
		return err
	}
	if len(cols.Rows) == maxBulkColumns {
		return fmt.Errorf("more than %d columns", maxBulkColumns)
	}
	for _, r := range cols.Rows {
		add(TableRef{Database: str(r[0]), Schema: str(r[1]), Name: str(r[2])},
			Column{Name: str(r[3]), Type: str(r[4]), Nullable: r[5] == true, Position: int(Int(r[6]))})
	}
	pks, err := w.QueryAll(ctx, `WITH t AS (`+wanted+`)
SELECT current_database(), t.nspname, t.relname,
  array_to_string(ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY k(attnum, ord)
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.ord), chr(31))
FROM t JOIN pg_index i ON i.indrelid = t.oid AND i.indisprimary AND i.indisvalid`, []any{schemas, names}, maxBulkColumns)
	if err != nil {
		return err
	}
	for _, r := range pks.Rows {
		if i, ok := index[TableRef{Database: str(r[0]), Schema: str(r[1]), Name: str(r[2])}]; ok && str(r[3]) != "" {
			out[i].PrimaryKey = strings.Split(str(r[3]), "\x1f")
		}
	}
	return nil
}

// sfBulk reads the columns of some tables of one schema in one INFORMATION_SCHEMA.COLUMNS query.
// The database came from the catalog and is quoted exactly; the schema and names are bound.
func (w *DB) sfBulk(ctx context.Context, database, schema string, names []string, add func(TableRef, Column)) error {
	is := "INFORMATION_SCHEMA"
	if database != "" {
		q, err := w.Dialect.Quote(database)
		if err != nil {
			return err
		}
		is = q + ".INFORMATION_SCHEMA"
	}
	if schema == "" || len(names) == 0 {
		return errors.New("snowflake tables are listed with their schema")
	}
	args := []any{schema}
	marks := make([]string, len(names))
	for i, n := range names {
		marks[i] = "?"
		args = append(args, n)
	}
	rows, err := w.QueryAll(ctx, `SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, IS_NULLABLE, ORDINAL_POSITION FROM `+is+
		`.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (`+strings.Join(marks, ", ")+`) ORDER BY TABLE_NAME, ORDINAL_POSITION`, args, maxBulkColumns)
	if err != nil {
		return err
	}
	if len(rows.Rows) == maxBulkColumns {
		return fmt.Errorf("more than %d columns in schema %s", maxBulkColumns, schema)
	}
	for _, r := range rows.Rows {
		ref := TableRef{Database: str(r[0]), Schema: str(r[1]), Name: str(r[2])}
		if database == "" {
			ref.Database = "" // listed without a database: key it the same way
		}
		add(ref, Column{Name: str(r[3]), Type: str(r[4]), Nullable: strings.EqualFold(str(r[5]), "YES"), Position: int(Int(r[6]))})
	}
	return nil
}
