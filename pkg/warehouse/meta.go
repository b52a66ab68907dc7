package warehouse

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Table is one entry of ListTables.
type Table struct {
	Database string `json:"database,omitempty"`
	Schema   string `json:"schema"`
	Name     string `json:"name"`
	// Kind is "table", "view", "materialized view", "external table", … as the engine names it.
	Kind string `json:"kind"`
	// RowCount is the engine's metadata count when it has one without scanning: Snowflake's
	// ROW_COUNT (exact), PostgreSQL's planner estimate (pg_class.reltuples, after ANALYZE), SQLite's
	// sqlite_stat1 count once Resolve has described the table (after ANALYZE). Nil for views and
	// tables never analyzed: DescribeTable counts exactly.
	RowCount *int64 `json:"row_count,omitempty"`
	// RowCountExact says whether RowCount is exact rather than an estimate.
	RowCountExact bool `json:"row_count_exact,omitempty"`
}

// Ref is the table's reference.
func (t Table) Ref() TableRef { return TableRef{Database: t.Database, Schema: t.Schema, Name: t.Name} }

// Column is one column of a table as the catalog declares it.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	Position int    `json:"position"`
}

// TableInfo is a resolved table: its exact names, columns, enforced keys and row count.
type TableInfo struct {
	Table
	Columns []Column `json:"columns"`
	// PrimaryKey and UniqueKeys are the declared keys the engine enforces (never on Snowflake,
	// where UNIQUE and PRIMARY KEY are informational).
	PrimaryKey []string   `json:"primary_key,omitempty"`
	UniqueKeys [][]string `json:"unique_keys,omitempty"`
	// IndexedColumns lead an index (so max(col) or a range on col is cheap).
	IndexedColumns []string `json:"indexed_columns,omitempty"`
	// sqliteStats records that the schema held sqlite_stat1 when the table was described, so the
	// catalog cache also watches the table's statistics.
	sqliteStats bool
}

// Column finds a column by name: the exact name first, then a unique case-insensitive match (the
// way unquoted names fold). The error lists the table's columns.
func (ti *TableInfo) Column(name string) (Column, error) {
	if err := ValidateIdent(name); err != nil {
		return Column{}, fmt.Errorf("column: %w", err)
	}
	var folded []Column
	for _, c := range ti.Columns {
		if c.Name == name {
			return c, nil
		}
		if strings.EqualFold(c.Name, name) {
			folded = append(folded, c)
		}
	}
	if len(folded) == 1 {
		return folded[0], nil
	}
	names := make([]string, len(ti.Columns))
	for i, c := range ti.Columns {
		names[i] = c.Name
	}
	if len(folded) > 1 {
		return Column{}, fmt.Errorf("column %q is ambiguous in %s: quote the exact name (columns: %s)", name, ti.Ref(), strings.Join(names, ", "))
	}
	return Column{}, fmt.Errorf("%w: column %q is not in %s (columns: %s)", ErrNoSuchColumn, name, ti.Ref(), strings.Join(names, ", "))
}

// UniqueCovers reports whether an enforced unique key is contained in cols, so rows are unique on
// cols without a scan.
func (ti *TableInfo) UniqueCovers(cols []string) bool {
	for _, k := range ti.UniqueKeys {
		covered := len(k) > 0
		for _, c := range k {
			if !slices.Contains(cols, c) {
				covered = false
				break
			}
		}
		if covered {
			return true
		}
	}
	return false
}

// Indexed reports whether col leads an index.
func (ti *TableInfo) Indexed(col string) bool { return slices.Contains(ti.IndexedColumns, col) }

// ListTables lists tables and views, in one schema when schema is non-empty.
func (w *DB) ListTables(ctx context.Context, schema string) ([]Table, error) {
	if schema != "" {
		if err := ValidateIdent(schema); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	switch w.Dialect.Engine {
	case SQLite:
		return w.sqliteTables(ctx, schema, "")
	case Postgres:
		return w.pgTables(ctx, schema, "")
	case Snowflake:
		return w.sfTables(ctx, "", schema, "")
	}
	return nil, fmt.Errorf("engine %s has no catalog reader", w.Dialect.Engine)
}

// DescribeTable resolves a table ("name", "schema.name" or "db.schema.name"; unquoted parts match
// case-insensitively) and returns its columns, enforced keys and row count (exact on SQLite and
// Snowflake; on PostgreSQL the planner estimate when the table has been analyzed, else exact).
func (w *DB) DescribeTable(ctx context.Context, table string) (*TableInfo, error) {
	ti, err := w.Resolve(ctx, table)
	if err != nil {
		return nil, err
	}
	if ti.RowCount == nil || !ti.RowCountExact && w.Dialect.Engine == SQLite {
		n, err := w.CountRows(ctx, ti.Ref())
		if err != nil {
			return nil, err
		}
		ti.RowCount, ti.RowCountExact = &n, true
	}
	return ti, nil
}

// CountRows counts a resolved table's rows exactly.
func (w *DB) CountRows(ctx context.Context, ref TableRef) (int64, error) {
	qt, err := w.Dialect.QuoteTable(ref)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := w.QueryRow(ctx, "SELECT count(*) FROM "+qt, nil, &n); err != nil {
		return 0, fmt.Errorf("count rows of %s: %w", ref, err)
	}
	return n, nil
}

// Resolve is DescribeTable without counting rows: what a check needs before it builds SQL. On
// SQLite and PostgreSQL the answer is cached per table name on this handle and reused while the
// catalog's change marker for the table stays the same (catalog_cache.go); the caller owns the
// copy it gets.
func (w *DB) Resolve(ctx context.Context, table string) (*TableInfo, error) {
	return w.cachedResolve(ctx, w, table)
}

// resolve reads the table's names, columns, keys, indexes and row estimate from the catalog.
func (w *DB) resolve(ctx context.Context, table string) (*TableInfo, error) {
	ref, err := ParseTableRef(table)
	if err != nil {
		return nil, err
	}
	var cands []Table
	switch w.Dialect.Engine {
	case SQLite:
		if ref.Database != "" {
			return nil, fmt.Errorf("table %q: SQLite tables are schema.name (schema = main or an attached database)", table)
		}
		cands, err = w.sqliteTables(ctx, ref.Schema, ref.Name)
	case Postgres:
		if ref.Database != "" {
			var cur string
			if err := w.QueryRow(ctx, "SELECT current_database()", nil, &cur); err != nil {
				return nil, err
			}
			if !strings.EqualFold(cur, ref.Database) {
				return nil, fmt.Errorf("table %q is in database %s but warehouse.dsn connects to %s: point the DSN at that database", table, ref.Database, cur)
			}
		}
		cands, err = w.pgTables(ctx, ref.Schema, ref.Name)
	case Snowflake:
		cands, err = w.sfTables(ctx, ref.Database, ref.Schema, ref.Name)
	}
	if err != nil {
		return nil, err
	}
	t, err := pick(cands, ref, table)
	if err != nil {
		return nil, err
	}
	ti := &TableInfo{Table: t}
	switch w.Dialect.Engine {
	case SQLite:
		err = w.sqliteDescribe(ctx, ti)
	case Postgres:
		err = w.pgDescribe(ctx, ti)
	case Snowflake:
		err = w.sfDescribe(ctx, ti)
	}
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", ti.Ref(), err)
	}
	return ti, nil
}

// pick chooses the exact-case match, else the only case-insensitive one.
func pick(cands []Table, ref TableRef, input string) (Table, error) {
	var exact []Table
	for _, c := range cands {
		if c.Name == ref.Name && (ref.Schema == "" || c.Schema == ref.Schema) {
			exact = append(exact, c)
		}
	}
	switch {
	case len(exact) == 1:
		return exact[0], nil
	case len(cands) == 1:
		return cands[0], nil
	case len(cands) == 0:
		return Table{}, fmt.Errorf("%w: table %q does not exist or is not visible to the warehouse user (list_tables shows what exists)", ErrNoSuchTable, input)
	}
	var names []string
	for _, c := range cands {
		names = append(names, c.Ref().String())
	}
	return Table{}, fmt.Errorf("table %q is ambiguous (%s): qualify it with its schema, quoting exact case", input, strings.Join(names, ", "))
}

// ---- SQLite ----

func (w *DB) sqliteTables(ctx context.Context, schema, name string) ([]Table, error) {
	q := `SELECT schema, name, type FROM pragma_table_list WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' AND schema <> 'temp'`
	var args []any
	if schema != "" {
		q += ` AND lower(schema) = lower(?)`
		args = append(args, schema)
	}
	if name != "" {
		q += ` AND lower(name) = lower(?)`
		args = append(args, name)
	}
	rows, err := w.QueryAll(ctx, q+` ORDER BY schema, name`, args, 100000)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	var out []Table
	for _, r := range rows.Rows {
		out = append(out, Table{Schema: str(r[0]), Name: str(r[1]), Kind: str(r[2])})
	}
	return out, nil
}

func (w *DB) sqliteDescribe(ctx context.Context, ti *TableInfo) error {
	cols, err := w.QueryAll(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?, ?) ORDER BY cid`, []any{ti.Name, ti.Schema}, 100000)
	if err != nil {
		return err
	}
	type pkcol struct {
		name string
		pos  int64
	}
	var pks []pkcol
	for i, r := range cols.Rows {
		ti.Columns = append(ti.Columns, Column{Name: str(r[0]), Type: str(r[1]), Nullable: Int(r[2]) == 0, Position: i + 1})
		if p := Int(r[3]); p > 0 {
			pks = append(pks, pkcol{str(r[0]), p})
		}
	}
	slices.SortFunc(pks, func(a, b pkcol) int { return int(a.pos - b.pos) })
	for _, p := range pks {
		ti.PrimaryKey = append(ti.PrimaryKey, p.name)
	}
	if len(ti.PrimaryKey) > 0 {
		ti.UniqueKeys = append(ti.UniqueKeys, ti.PrimaryKey)
		if len(ti.PrimaryKey) == 1 {
			ti.IndexedColumns = append(ti.IndexedColumns, ti.PrimaryKey[0])
		}
	}
	idx, err := w.QueryAll(ctx, `SELECT name, "unique", partial FROM pragma_index_list(?, ?)`, []any{ti.Name, ti.Schema}, 100000)
	if err != nil {
		return err
	}
	for _, r := range idx.Rows {
		ic, err := w.QueryAll(ctx, `SELECT name FROM pragma_index_info(?, ?) ORDER BY seqno`, []any{str(r[0]), ti.Schema}, 1000)
		if err != nil {
			return err
		}
		var names []string
		expr := false
		for _, c := range ic.Rows {
			if c[0] == nil {
				expr = true
				break
			}
			names = append(names, str(c[0]))
		}
		if expr || len(names) == 0 {
			continue
		}
		if Int(r[2]) == 0 {
			ti.IndexedColumns = appendUnique(ti.IndexedColumns, names[0])
			if Int(r[1]) == 1 {
				ti.UniqueKeys = append(ti.UniqueKeys, names)
			}
		}
	}
	return w.sqliteRowEstimate(ctx, ti)
}

// sqliteRowEstimate reads the row count ANALYZE left in sqlite_stat1 (the first number of a
// table's or a non-partial index's stat is its row count) as an estimate; a database never
// analyzed has no such table, and then the count stays unknown.
func (w *DB) sqliteRowEstimate(ctx context.Context, ti *TableInfo) error {
	schema := w.Dialect.mustQuote(ti.Schema)
	var has int64
	if err := w.QueryRow(ctx, "SELECT count(*) FROM "+schema+".sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'", nil, &has); err != nil || has == 0 {
		return err
	}
	ti.sqliteStats = true
	rows, err := w.QueryAll(ctx, "SELECT stat FROM "+schema+".sqlite_stat1 WHERE tbl = ? AND (idx IS NULL OR idx IN (SELECT name FROM pragma_index_list(?, ?) WHERE partial = 0))",
		[]any{ti.Name, ti.Name, ti.Schema}, 1000)
	if err != nil {
		return fmt.Errorf("sqlite_stat1: %w", err)
	}
	for _, r := range rows.Rows {
		first, _, _ := strings.Cut(str(r[0]), " ")
		if n, err := strconv.ParseInt(first, 10, 64); err == nil && n >= 0 {
			ti.RowCount, ti.RowCountExact = &n, false
			return nil
		}
	}
	return nil
}

// ---- PostgreSQL ----

var pgKinds = map[string]string{"r": "table", "p": "table", "v": "view", "m": "materialized view", "f": "foreign table"}

func (w *DB) pgTables(ctx context.Context, schema, name string) ([]Table, error) {
	a := w.Dialect.NewArgs()
	q := `SELECT current_database(), n.nspname, c.relname, c.relkind::text, c.reltuples::bigint, c.oid::bigint
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'
  AND has_schema_privilege(n.oid, 'USAGE')`
	switch {
	case schema != "":
		q += ` AND lower(n.nspname) = lower(` + a.Add(schema) + `)`
	case name != "":
		q += ` AND n.nspname = ANY (current_schemas(false))`
	}
	if name != "" {
		q += ` AND lower(c.relname) = lower(` + a.Add(name) + `)`
	}
	rows, err := w.QueryAll(ctx, q+` ORDER BY 2, 3`, a.Vals, 100000)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	var out []Table
	for _, r := range rows.Rows {
		t := Table{Database: str(r[0]), Schema: str(r[1]), Name: str(r[2]), Kind: pgKinds[str(r[3])]}
		if n := Int(r[4]); n >= 0 && t.Kind != "view" {
			t.RowCount = &n
		}
		out = append(out, t)
	}
	return out, nil
}

func (w *DB) pgDescribe(ctx context.Context, ti *TableInfo) error {
	qt, err := w.Dialect.QuoteTable(TableRef{Schema: ti.Schema, Name: ti.Name})
	if err != nil {
		return err
	}
	cols, err := w.QueryAll(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, a.attnum
FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, []any{qt}, 100000)
	if err != nil {
		return err
	}
	for _, r := range cols.Rows {
		ti.Columns = append(ti.Columns, Column{Name: str(r[0]), Type: str(r[1]), Nullable: r[2] == true, Position: int(Int(r[3]))})
	}
	// Keys: valid, non-partial, non-expression unique indexes (constraints are enforced through them).
	idx, err := w.QueryAll(ctx, `SELECT i.indisunique, i.indisprimary, (i.indpred IS NULL AND i.indexprs IS NULL),
  array_to_string(ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY k(attnum, ord)
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.ord), chr(31)),
  (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = i.indkey[0])
FROM pg_index i WHERE i.indrelid = $1::regclass AND i.indisvalid`, []any{qt}, 10000)
	if err != nil {
		return err
	}
	for _, r := range idx.Rows {
		if lead, ok := r[4].(string); ok && lead != "" {
			ti.IndexedColumns = appendUnique(ti.IndexedColumns, lead)
		}
		if r[0] != true || r[2] != true {
			continue
		}
		key := strings.Split(str(r[3]), "\x1f")
		ti.UniqueKeys = append(ti.UniqueKeys, key)
		if r[1] == true {
			ti.PrimaryKey = key
		}
	}
	return nil
}

// ---- Snowflake ----

// sfName applies Snowflake's unquoted-identifier rule for the one place we must name an object
// before resolving it (the database prefix of INFORMATION_SCHEMA): plain names fold to upper case.
func sfName(s string) string {
	for _, r := range s {
		if !(r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return s
		}
	}
	return strings.ToUpper(s)
}

func (w *DB) sfInfoSchema(database string) (string, error) {
	if database == "" {
		return "INFORMATION_SCHEMA", nil
	}
	q, err := w.Dialect.Quote(sfName(database))
	if err != nil {
		return "", err
	}
	return q + ".INFORMATION_SCHEMA", nil
}

func (w *DB) sfTables(ctx context.Context, database, schema, name string) ([]Table, error) {
	is, err := w.sfInfoSchema(database)
	if err != nil {
		return nil, err
	}
	// LAST_ALTERED is deliberately not read: it moves on DDL, no-op DML and background maintenance,
	// so it says nothing about data freshness (docs/reference/backends.md, Snowflake metadata).
	q := `SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ROW_COUNT FROM ` + is + `.TABLES WHERE TABLE_SCHEMA <> 'INFORMATION_SCHEMA'`
	var args []any
	switch {
	case schema != "":
		q += ` AND UPPER(TABLE_SCHEMA) = UPPER(?)`
		args = append(args, schema)
	case name != "":
		q += ` AND TABLE_SCHEMA = CURRENT_SCHEMA()`
	}
	if name != "" {
		q += ` AND UPPER(TABLE_NAME) = UPPER(?)`
		args = append(args, name)
	}
	rows, err := w.QueryAll(ctx, q+` ORDER BY TABLE_SCHEMA, TABLE_NAME`, args, 100000)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	var out []Table
	for _, r := range rows.Rows {
		t := Table{Database: str(r[0]), Schema: str(r[1]), Name: str(r[2]), Kind: strings.ToLower(str(r[3]))}
		if t.Kind == "base table" {
			t.Kind = "table"
		}
		if r[4] != nil {
			n := Int(r[4])
			t.RowCount, t.RowCountExact = &n, true
		}
		out = append(out, t)
	}
	return out, nil
}

func (w *DB) sfDescribe(ctx context.Context, ti *TableInfo) error {
	// The database name came from the catalog: quote it exactly, without case folding.
	is := "INFORMATION_SCHEMA"
	if ti.Database != "" {
		is = w.Dialect.mustQuote(ti.Database) + ".INFORMATION_SCHEMA"
	}
	cols, err := w.QueryAll(ctx, `SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE, ORDINAL_POSITION FROM `+is+
		`.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, []any{ti.Schema, ti.Name}, 100000)
	if err != nil {
		return err
	}
	for _, r := range cols.Rows {
		ti.Columns = append(ti.Columns, Column{Name: str(r[0]), Type: str(r[1]), Nullable: strings.EqualFold(str(r[2]), "YES"), Position: int(Int(r[3]))})
	}
	if len(ti.Columns) == 0 {
		return errors.New("no columns visible: the role may lack privileges on the table")
	}
	return nil
}

// ---- value helpers ----

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

// Int reads an integer the way drivers return them (int64, float64, or text for Snowflake NUMBER).
func Int(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case float64:
		return int64(x)
	case bool:
		if x {
			return 1
		}
		return 0
	case string, []byte:
		var n float64
		if _, err := fmt.Sscan(str(x), &n); err == nil {
			return int64(n)
		}
	}
	return 0
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
