package warehouse

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// catalogTTL bounds how long a resolved table is trusted at all. Within it a cached table is
// still checked against the catalog's change marker on every use (see catalogMarker); the TTL
// covers what the marker cannot see, such as a new table of the same name earlier on
// PostgreSQL's search_path or in another attached SQLite database.
const catalogTTL = time.Minute

// catalogLimit bounds the cache; past it the cache starts over (a handle serves a few tables).
const catalogLimit = 1024

// catalogCache keeps what Resolve learnt per table name on one warehouse handle, so a check run
// again does not describe the table again: re-describing costs 5–10 catalog queries (about half a
// millisecond on SQLite, several round trips on PostgreSQL), the marker one.
type catalogCache struct {
	mu      sync.Mutex
	now     func() time.Time
	entries map[string]catalogEntry
}

type catalogEntry struct {
	info   *TableInfo
	marker string
	at     time.Time
	// readAhead says the marker may be read beside a snapshot rather than in it
	// (Snapshot.ResolveAhead): always on PostgreSQL; on SQLite only when the table's database
	// was in WAL mode when described (with a rollback journal, a writer waiting to commit would
	// refuse the second connection's read lock while the snapshot holds its own).
	readAhead bool
}

func newCatalogCache(now func() time.Time) *catalogCache {
	return &catalogCache{now: now, entries: map[string]catalogEntry{}}
}

// get returns the entry for name when it is younger than the TTL.
func (c *catalogCache) get(name string) (catalogEntry, bool) {
	if c == nil {
		return catalogEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[name]
	if !ok || c.now().Sub(e.at) >= catalogTTL {
		return catalogEntry{}, false
	}
	return e, true
}

func (c *catalogCache) put(name string, ti *TableInfo, marker string, readAhead bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= catalogLimit {
		clear(c.entries)
	}
	c.entries[name] = catalogEntry{info: ti.clone(), marker: marker, at: c.now(), readAhead: readAhead}
}

func (c *catalogCache) drop(name string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, name)
}

// cachedResolve answers Resolve from the cache when the table's change marker has not moved
// since it was described, and otherwise describes it and remembers it. The marker is read in sc
// (the handle, or a run's snapshot, where it costs one statement and no transaction of its own);
// a describe always runs on the handle. On a refresh the marker is read before the table is
// described again, so a change made meanwhile moves the marker past what is cached and the next
// call describes again (a snapshot's marker is older still, which errs the same safe way).
func (w *DB) cachedResolve(ctx context.Context, sc scope, table string) (*TableInfo, error) {
	if !w.Dialect.hasCatalogMarker() {
		return w.resolve(ctx, table)
	}
	marker := ""
	var cached *TableInfo
	if e, ok := w.catalog.get(table); ok {
		m, err := w.catalogMarker(ctx, sc, e.info)
		if err == nil && m == e.marker {
			return e.info.clone(), nil
		}
		marker, cached = m, e.info // "" after an error (the table may be gone): the describe below says why
	}
	ti, err := w.resolve(ctx, table)
	if err != nil {
		w.catalog.drop(table)
		return nil, err
	}
	// A marker read for the old description has the old one's terms: on SQLite a table that
	// gained statistics since (its first ANALYZE) is marked by its sqlite_stat1 rows too, and a
	// marker without them would never match again. Read it for the new description, as for a
	// table described for the first time.
	if marker == "" || cached.sqliteStats != ti.sqliteStats {
		if marker, err = w.catalogMarker(ctx, sc, ti); err != nil {
			return ti, nil // served, not cached
		}
	}
	w.catalog.put(table, ti, marker, w.markerReadAhead(ctx, ti))
	return ti, nil
}

// markerReadAhead says whether ti's marker may be read beside a snapshot (catalogEntry.readAhead).
// The journal mode is read on the handle when the table is described (again at least once per
// cache TTL). A pooled connection that last read before the file was switched to WAL may still
// answer the old mode, which only keeps the marker in the snapshot; an error answers no too.
func (w *DB) markerReadAhead(ctx context.Context, ti *TableInfo) bool {
	switch w.Dialect.Engine {
	case Postgres:
		return true
	case SQLite:
		var mode string
		err := w.queryRow(ctx, w, "PRAGMA "+w.Dialect.mustQuote(ti.Schema)+".journal_mode", nil, &mode)
		return err == nil && strings.EqualFold(mode, "wal")
	}
	return false
}

// hasCatalogMarker says whether the engine offers a cheap marker of a table's definition.
// Snowflake has none short of the INFORMATION_SCHEMA reads Resolve itself makes (LAST_ALTERED
// also moves on DML), so its tables are described on every call.
func (d Dialect) hasCatalogMarker() bool { return d.Engine == SQLite || d.Engine == Postgres }

// catalogMarker reads a value that changes whenever what Resolve reports about ti may have
// changed. SQLite: the schema's schema_version, which every CREATE, ALTER and DROP in that schema
// (attached databases have their own) increments, and which creating sqlite_stat1 moves too;
// once sqlite_stat1 exists, also the table's rows in it, which a later ANALYZE rewrites without
// moving schema_version.
// PostgreSQL: the xmin of the table's pg_class row (rewritten by ALTER TABLE, RENAME, a new
// column); of its pg_index rows, the count (DROP INDEX), the newest xmin (CREATE INDEX, a
// constraint's index, and any change to a row, such as a concurrent build becoming valid, which
// writes a new row version with the current transaction id) and whether all are valid; the
// newest xmin of its columns' pg_attribute rows (a retyped or dropped column, SET/DROP NOT NULL);
// plus reltuples, which VACUUM and ANALYZE update in place without a new xmin. Aggregates rather
// than the list of every index row: about 60 µs less a run, the same changes seen (a transaction
// id that wrapped around could hide one; the TTL bounds that). A dropped or renamed table fails
// the regclass cast: the caller then describes again and reports what the catalog says.
func (w *DB) catalogMarker(ctx context.Context, sc scope, ti *TableInfo) (string, error) {
	var marker string
	switch w.Dialect.Engine {
	case SQLite:
		schema := w.Dialect.mustQuote(ti.Schema)
		version := "(SELECT schema_version FROM " + schema + ".pragma_schema_version)"
		var v int64
		if !ti.sqliteStats {
			if err := w.queryRow(ctx, sc, "SELECT "+version, nil, &v); err != nil {
				return "", err
			}
			return ti.Schema + ":" + strconv.FormatInt(v, 10), nil
		}
		var stats sql.NullString
		if err := w.queryRow(ctx, sc, "SELECT "+version+", (SELECT group_concat(stat, ';') FROM "+schema+".sqlite_stat1 WHERE tbl = ?)", []any{ti.Name}, &v, &stats); err != nil {
			return "", err
		}
		return ti.Schema + ":" + strconv.FormatInt(v, 10) + ":" + stats.String, nil
	case Postgres:
		qt, err := w.Dialect.QuoteTable(TableRef{Schema: ti.Schema, Name: ti.Name})
		if err != nil {
			return "", err
		}
		err = w.queryRow(ctx, sc, `SELECT c.oid::text || ':' || c.xmin::text || ':' || c.reltuples::text
  || ':' || (SELECT count(*)::text || '/' || coalesce(max(i.xmin::text::bigint), 0)::text || '/' || coalesce(bool_and(i.indisvalid), true)::text
       FROM pg_index i WHERE i.indrelid = c.oid)
  || ':' || (SELECT coalesce(max(a.xmin::text::bigint), 0)::text FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0)
FROM pg_class c WHERE c.oid = $1::regclass`, []any{qt}, &marker)
		return marker, err
	}
	return "", nil
}

// clone copies ti deeply, so a caller changing its answer (DescribeTable sets the row count)
// never changes what the cache holds.
func (ti *TableInfo) clone() *TableInfo {
	out := *ti
	if ti.RowCount != nil {
		n := *ti.RowCount
		out.RowCount = &n
	}
	out.Columns = slices.Clone(ti.Columns)
	out.PrimaryKey = slices.Clone(ti.PrimaryKey)
	out.IndexedColumns = slices.Clone(ti.IndexedColumns)
	out.UniqueKeys = make([][]string, len(ti.UniqueKeys))
	for i, k := range ti.UniqueKeys {
		out.UniqueKeys[i] = slices.Clone(k)
	}
	if ti.UniqueKeys == nil {
		out.UniqueKeys = nil
	}
	return &out
}
