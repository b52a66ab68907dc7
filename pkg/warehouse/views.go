package warehouse

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// IsView reports whether a listed relation is a view (plain or materialized): its rows come from
// SQL over other tables, which ViewDefinitions reads.
func (t Table) IsView() bool { return t.Kind == "view" || t.Kind == "materialized view" }

// ViewDefinitions reads the SQL of the listed views, keyed by their reference as listed: SQLite's
// sqlite_master.sql (the CREATE VIEW as written), PostgreSQL's pg_views / pg_matviews definition
// (the SELECT, given a CREATE VIEW head here so it reads as one statement), Snowflake's
// INFORMATION_SCHEMA.VIEWS.VIEW_DEFINITION (the CREATE VIEW as written). A view whose definition
// the engine withholds (a Snowflake secure view the role does not own) is missing from the map,
// and hidden names it. Nothing is queried when no view is listed.
func (w *DB) ViewDefinitions(ctx context.Context, tables []Table) (defs map[TableRef]string, hidden []TableRef, err error) {
	defs = map[TableRef]string{}
	byKey := map[string]TableRef{}
	var scopes []string // schemas (SQLite) or databases (Snowflake) holding views, in order
	for _, t := range tables {
		if !t.IsView() {
			continue
		}
		byKey[viewKey(t.Database, t.Schema, t.Name)] = t.Ref()
		scope := t.Schema
		if w.Dialect.Engine == Snowflake {
			scope = t.Database
		}
		if !slices.Contains(scopes, scope) {
			scopes = append(scopes, scope)
		}
	}
	if len(byKey) == 0 {
		return defs, nil, nil
	}
	keep := func(db, schema, name string, sql any) {
		ref, ok := byKey[viewKey(db, schema, name)]
		if !ok {
			return
		}
		if s := strings.TrimSpace(str(sql)); s != "" {
			defs[ref] = s
			return
		}
		hidden = append(hidden, ref)
	}
	switch w.Dialect.Engine {
	case SQLite:
		for _, schema := range scopes {
			q, err := w.Dialect.Quote(schema)
			if err != nil {
				return nil, nil, err
			}
			rows, err := w.QueryAll(ctx, `SELECT name, sql FROM `+q+`.sqlite_master WHERE type = 'view'`, nil, 100000)
			if err != nil {
				return nil, nil, fmt.Errorf("read view definitions of %s: %w", schema, err)
			}
			for _, r := range rows.Rows {
				keep("", schema, str(r[0]), r[1])
			}
		}
	case Postgres:
		rows, err := w.QueryAll(ctx, `SELECT current_database(), schemaname::text, viewname::text, definition FROM pg_views
WHERE schemaname NOT IN ('pg_catalog', 'information_schema')
UNION ALL SELECT current_database(), schemaname::text, matviewname::text, definition FROM pg_matviews`, nil, 100000)
		if err != nil {
			return nil, nil, fmt.Errorf("read view definitions: %w", err)
		}
		for _, r := range rows.Rows {
			var sql any
			schema, errS := w.Dialect.Quote(str(r[1]))
			name, errN := w.Dialect.Quote(str(r[2]))
			if body := strings.TrimSuffix(strings.TrimSpace(str(r[3])), ";"); body != "" && errS == nil && errN == nil {
				sql = "CREATE VIEW " + schema + "." + name + " AS " + body
			}
			keep(str(r[0]), str(r[1]), str(r[2]), sql)
		}
	case Snowflake:
		for _, db := range scopes {
			is, err := w.sfInfoSchema(db)
			if err != nil {
				return nil, nil, err
			}
			rows, err := w.QueryAll(ctx, `SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM `+is+`.VIEWS WHERE TABLE_SCHEMA <> 'INFORMATION_SCHEMA'`, nil, 100000)
			if err != nil {
				return nil, nil, fmt.Errorf("read view definitions of %s: %w", db, err)
			}
			for _, r := range rows.Rows {
				keep(str(r[0]), str(r[1]), str(r[2]), r[3])
			}
		}
	}
	return defs, hidden, nil
}

func viewKey(db, schema, name string) string { return db + "\x00" + schema + "\x00" + name }
