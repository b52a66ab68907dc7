package graph

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/dataworkers/dw/pkg/store"
)

// Graph is the context graph on the shared store.
type Graph struct {
	st  *store.Store
	now func() time.Time
	// scanCap bounds the rows one Search or Neighbours call reads; past it the result says Truncated.
	scanCap int
	// snapLimit: the most edges a traversal may hold in memory (see SetSnapshotLimit); 0 or less
	// walks in SQL.
	snapLimit int
}

// New wraps an open store. now is the clock used for observed_at defaults and next-run times.
func New(st *store.Store, now func() time.Time) *Graph {
	if now == nil {
		now = time.Now
	}
	return &Graph{st: st, now: now, scanCap: 5000, snapLimit: DefaultSnapshotMaxEdges}
}

// Now is the graph's clock.
func (g *Graph) Now() time.Time { return g.now() }

// cronParser accepts what Airflow and most schedulers accept: 5 fields, descriptors (@daily),
// and an optional CRON_TZ=/TZ= prefix.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a job's cron schedule.
func ParseSchedule(expr string) (cron.Schedule, error) {
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("bad cron schedule %q: %v (want 5 fields such as \"0 23 * * *\", or @daily; prefix CRON_TZ=Area/City for a time zone)", expr, err)
	}
	return s, nil
}

// Upsert records b's claims, fields and edges, reviving any that were stale. It marks nothing
// stale: use Import for a complete pass of a source, or MarkStale.
func (g *Graph) Upsert(ctx context.Context, b Batch) (ImportResult, error) {
	if err := validateBatch(&b); err != nil {
		return ImportResult{}, err
	}
	at := b.ObservedAt
	if at.IsZero() {
		at = g.now()
	}
	res := ImportResult{Source: b.Source, Assets: len(b.Assets), Fields: len(b.Fields), Edges: len(b.Edges), Warnings: b.Warnings}
	err := g.st.Write(ctx, func(tx *sql.Tx) error {
		w, err := newBatchWriter(ctx, tx, g.st.Dialect(), b.Source, store.Timestamp(at), false)
		if err != nil {
			return err
		}
		defer w.close()
		if err := w.put(ctx, b); err != nil {
			return err
		}
		return w.finish(ctx, &res)
	})
	if err != nil {
		return ImportResult{}, err
	}
	return res, nil
}

// Import records b as the complete current view of b.Source: everything b asserts is upserted and
// whatever b.Source asserted before but not now is marked stale (never deleted), in one transaction.
func (g *Graph) Import(ctx context.Context, b Batch) (ImportResult, error) {
	if strings.TrimSpace(b.Source) == "" {
		return ImportResult{}, errors.New("graph: import has no source; name who asserts it (e.g. dbt:manifest/billing)")
	}
	res := ImportResult{Source: b.Source}
	if err := checkImportBatch(b.Source, &b, &res); err != nil {
		return ImportResult{}, err
	}
	// Already decoded and checked: the write transaction is all that is left.
	err := g.writeImport(ctx, b.ObservedAt, &res, func(write func(Batch) error) error { return write(b) })
	if err != nil {
		return ImportResult{}, err
	}
	return res, nil
}

// overlapDepth is the most batches an overlapped import holds decoded but not yet written.
const overlapDepth = 2

// ImportBatches is Import for a view too large to hold as one Batch: fill hands the view to put
// batch by batch, and all of it is recorded in one transaction, as observed at observedAt (zero:
// the graph's clock; a batch's own ObservedAt is ignored). A batch's Source must be source or
// empty; a batch that fails its checks fails the import, which then writes nothing.
//
// The write transaction begins before fill is called, and fill runs on a goroutine of its own
// while the batches it has put are written on this one (at most overlapDepth wait), so decoding
// and writing share the machine's cores instead of taking turns: the import takes about as long as
// the longer of the two instead of their sum. The price is that the store's write lock is held
// while fill runs: another writer waits for the import's commit (or its failure), which takes
// about as long as writing the batches alone would, as long as fill produces them at least as fast
// as they are written. Whatever a caller can do before it has the first batch (such as
// dbt.Open's index pass) belongs before ImportBatches, where it holds no lock. fill must not write
// to the store itself (it would wait for this import's lock), nor call put after it has returned. What tells the rows this import
// asserted from those it did not is kept in a temporary table of the store's connection, so memory
// does not grow with the view.
func (g *Graph) ImportBatches(ctx context.Context, source string, observedAt time.Time, fill func(put func(Batch) error) error) (ImportResult, error) {
	if strings.TrimSpace(source) == "" {
		return ImportResult{}, errors.New("graph: import has no source; name who asserts it (e.g. dbt:manifest/billing)")
	}
	res := ImportResult{Source: source}
	err := g.writeImport(ctx, observedAt, &res, func(write func(Batch) error) error {
		return overlap(fill, func(b Batch) error {
			if err := checkImportBatch(source, &b, &res); err != nil {
				return err
			}
			return write(b)
		})
	})
	if err != nil {
		return ImportResult{}, err
	}
	return res, nil
}

// errOverlapStopped is what an overlapped fill's put returns once writing has failed.
var errOverlapStopped = errors.New("graph: import stopped: writing a batch failed")

// overlap runs fill on a goroutine of its own and hands each batch it puts to write on this one,
// in order, holding at most overlapDepth batches in between. Once write fails, fill's put returns
// errOverlapStopped and write is called no more; overlap returns write's error first, else fill's,
// and only after fill has returned. A panic in fill comes back as an error, so the transaction
// around overlap is rolled back; a put from another goroutine of fill's (a pipeline's merger) after
// fill has returned gets errOverlapStopped, never a send on a closed channel. A panic in write stops
// fill, waits for it and goes on up, so no goroutine is left blocked on a batch.
func overlap(fill func(put func(Batch) error) error, write func(Batch) error) (err error) {
	batches := make(chan Batch, overlapDepth)
	stop := make(chan struct{})
	finished := make(chan struct{}) // closed once fill has returned and filled holds its error
	filled := make(chan error, 1)
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	put := func(b Batch) error {
		select {
		case <-finished:
			return errOverlapStopped
		case <-stop:
			return errOverlapStopped
		default:
		}
		select {
		case batches <- b:
			return nil
		case <-stop:
			return errOverlapStopped
		case <-finished:
			return errOverlapStopped
		}
	}
	go func() {
		defer close(finished)
		defer func() {
			if p := recover(); p != nil {
				filled <- fmt.Errorf("graph: import fill panicked: %v\n%s", p, debug.Stack())
			}
		}()
		filled <- fill(put)
	}()
	defer func() {
		if p := recover(); p != nil {
			halt()
			<-finished
			panic(p)
		}
	}()
	var writeErr error
	take := func(b Batch) {
		if writeErr != nil {
			return // drop: fill sees the stop at its next put
		}
		if writeErr = write(b); writeErr != nil {
			halt()
		}
	}
	for done := false; !done; {
		select {
		case b := <-batches:
			take(b)
		case <-finished:
			for drained := false; !drained; { // what fill put before it returned
				select {
				case b := <-batches:
					take(b)
				default:
					drained = true
				}
			}
			done = true
		}
	}
	fillErr := <-filled
	if writeErr != nil {
		return writeErr
	}
	return fillErr
}

// writeImport records the batches each hands to write as the complete view of res.Source, in one
// write transaction; checking them and counting them into res is the caller's.
func (g *Graph) writeImport(ctx context.Context, observedAt time.Time, res *ImportResult, each func(write func(Batch) error) error) error {
	if observedAt.IsZero() {
		observedAt = g.now()
	}
	source := res.Source
	// Every asset id the batch writer puts in a claim, field or edge comes from graph_assets in
	// this transaction (idCache.resolve checks each one was found), so SQLite need not look each
	// reference up again.
	return g.st.WriteWithoutReferenceChecks(ctx, func(tx *sql.Tx) error {
		w, err := newBatchWriter(ctx, tx, g.st.Dialect(), source, store.Timestamp(observedAt), true)
		if err != nil {
			return err
		}
		defer w.close()
		// A source's first import inserts every row it writes; a re-import mostly updates rows in
		// place, which leaves the secondary indexes alone, so only the first defers them.
		var bulk *indexDeferrer
		if !w.track && g.st.Dialect() == store.SQLite {
			if bulk, err = newIndexDeferrer(ctx, tx, bulkIndexMinRows); err != nil {
				return err
			}
		}
		var claims, fields, edges int // rows put so far
		if err := each(func(b Batch) error {
			claims, fields, edges = claims+len(b.Assets), fields+len(b.Fields), edges+len(b.Edges)
			for _, t := range []struct {
				table string
				n     int
			}{{"graph_asset_claims", claims}, {"graph_fields", fields}, {"graph_edges", edges}} {
				if err := bulk.grow(ctx, t.table, t.n); err != nil {
					return err
				}
			}
			return w.put(ctx, b)
		}); err != nil {
			return err
		}
		if err := bulk.rebuild(ctx); err != nil {
			return err
		}
		return w.finish(ctx, res)
	})
}

// checkImportBatch gives b the import's source (refusing another's), validates it and counts it.
func checkImportBatch(source string, b *Batch, res *ImportResult) error {
	if b.Source == "" {
		b.Source = source
	}
	if b.Source != source {
		return fmt.Errorf("graph: import of %s got a batch of %s", source, b.Source)
	}
	if err := validateBatch(b); err != nil {
		return err
	}
	res.Assets, res.Fields, res.Edges = res.Assets+len(b.Assets), res.Fields+len(b.Fields), res.Edges+len(b.Edges)
	res.Warnings = append(res.Warnings, b.Warnings...)
	return nil
}

// MarkStale marks stale every claim, field and edge of source that seen does not contain. Field
// level edges into seen.KeepFieldEdgesInto are kept.
func (g *Graph) MarkStale(ctx context.Context, source string, seen Seen) (Counts, error) {
	if source == "" {
		return Counts{}, errors.New("graph: mark stale: empty source")
	}
	var c Counts
	err := g.st.Write(ctx, func(tx *sql.Tx) error {
		var err error
		var changed []int64
		if c, changed, err = markStale(ctx, tx, source, seen); err != nil {
			return err
		}
		if c.Edges > 0 {
			return bumpGeneration(ctx, tx, g.st.Dialect(), changed, true)
		}
		return nil
	})
	return c, err
}

// batchWriter upserts batches of one source inside one write transaction. In a complete import of
// a source that has rows already it records the row ids it upserts in temp.graph_import_seen
// (kind 0 claims, 1 fields, 2 edges; 3 the assets whose field-level edges are kept), so finish can
// mark the rest stale in SQL.
type batchWriter struct {
	tx         *sql.Tx
	dialect    store.Dialect
	source, ts string
	complete   bool
	// track: a complete import of a source that already has rows records what it upserts, so
	// finish can mark the rest stale; a source's first import has nothing to mark.
	track          bool
	ids            idCache
	claims, fields *sql.Stmt
	edges          *sql.Stmt
	staleBefore    int64
	staleIDs       []int64 // the source's stale edges before (nil past maxLoggedChanges)
	seen           [4][]int64
	// rows is the JSON of the statement being built; its buffer is reused by every statement
	// (growing it afresh for each cost a large import as much garbage as its decoding).
	rows jsonRows
}

const (
	seenClaim = iota
	seenField
	seenEdge
	seenKeepInto
)

// upsertChunk is the most rows one upsert statement carries.
const upsertChunk = 2000

// seenFlush is how many row ids a complete import buffers before writing them to its temp table.
const seenFlush = 8192

func newBatchWriter(ctx context.Context, tx *sql.Tx, d store.Dialect, source, ts string, complete bool) (*batchWriter, error) {
	w := &batchWriter{tx: tx, dialect: d, source: source, ts: ts, complete: complete, ids: idCache{tx: tx, ids: map[URN]int64{}, ts: ts}}
	var err error
	if w.staleBefore, err = staleEdges(ctx, tx, source); err != nil {
		return nil, err
	}
	// The ids of the stale edges, so the ones this import revives can be logged for other
	// processes' adjacencies (see bumpGeneration); past maxLoggedChanges they are not read.
	if w.staleBefore > 0 && w.staleBefore <= maxLoggedChanges {
		if w.staleIDs, err = staleEdgeIDs(ctx, tx, source); err != nil {
			return nil, err
		}
	}
	if complete {
		if d == store.SQLite {
			// A complete import writes every row of its source: a page cache of 64 MB (default
			// 2 MB) keeps the edge indexes' pages in memory for its length; close restores it.
			if _, err := tx.ExecContext(ctx, `PRAGMA cache_size = -65536`); err != nil {
				return nil, fmt.Errorf("graph: import %s: %w", source, err)
			}
		}
		if w.track, err = hasRows(ctx, tx, source); err != nil {
			return nil, err
		}
	}
	if w.track {
		for _, q := range []string{
			`CREATE TEMP TABLE IF NOT EXISTS graph_import_seen (kind INTEGER NOT NULL, id BIGINT NOT NULL, PRIMARY KEY (kind, id))`,
			`DELETE FROM graph_import_seen`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return nil, fmt.Errorf("graph: import %s: %w", source, err)
			}
		}
	}
	// Only a writer that tracks what it upserts needs the row ids back.
	returning := func(col string) string {
		if w.track {
			return " RETURNING " + col
		}
		return ""
	}
	prepare := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = tx.PrepareContext(ctx, q)
		return st
	}
	// Each batch's rows go to SQLite as one JSON array per table, one statement for all of them:
	// per-row statements cost more in the driver than SQLite spends on the rows.
	w.claims = prepare(`INSERT INTO graph_asset_claims
		(asset_id, source, kind, name, description, owners, domain, tags, criticality, schedule, attrs, observed_at, stale)
		SELECT CAST(j.value->>0 AS BIGINT), ?1, j.value->>1, j.value->>2, j.value->>3, j.value->>4, j.value->>5, j.value->>6, j.value->>7, j.value->>8, j.value->>9, ?2, 0
		FROM ` + d.JSONRows("?3", "j") + ` WHERE true
		ON CONFLICT (asset_id, source) DO UPDATE SET kind=excluded.kind, name=excluded.name,
		description=excluded.description, owners=excluded.owners, domain=excluded.domain, tags=excluded.tags,
		criticality=excluded.criticality, schedule=excluded.schedule, attrs=excluded.attrs,
		observed_at=excluded.observed_at, stale=0` + returning("rowid"))
	w.fields = prepare(`INSERT INTO graph_fields
		(asset_id, path, source, type, nullable, description, tags, ordinal, observed_at, stale)
		SELECT CAST(j.value->>0 AS BIGINT), j.value->>1, ?1, j.value->>2, CAST(j.value->>3 AS INTEGER), j.value->>4, j.value->>5, CAST(j.value->>6 AS INTEGER), ?2, 0
		FROM ` + d.JSONRows("?3", "j") + ` WHERE true
		ON CONFLICT (asset_id, path, source) DO UPDATE SET type=excluded.type, nullable=excluded.nullable,
		description=excluded.description, tags=excluded.tags, ordinal=excluded.ordinal,
		observed_at=excluded.observed_at, stale=0` + returning("rowid"))
	w.edges = prepare(`INSERT INTO graph_edges
		(from_id, from_field, to_id, to_field, kind, transformation, source, observed_at, stale)
		SELECT CAST(j.value->>0 AS BIGINT), j.value->>1, CAST(j.value->>2 AS BIGINT), j.value->>3, j.value->>4, j.value->>5, ?1, ?2, 0
		FROM ` + d.JSONRows("?3", "j") + ` WHERE true
		ON CONFLICT (from_id, from_field, to_id, to_field, kind, source) DO UPDATE SET
		transformation=excluded.transformation, observed_at=excluded.observed_at, stale=0` + returning("id"))
	w.ids.create = prepare(`INSERT INTO graph_assets(urn, system, first_seen) SELECT j.value->>0, j.value->>1, ?1 FROM ` + d.JSONRows("?2", "j") + ` WHERE true
		ON CONFLICT (urn) DO NOTHING`)
	w.ids.find = prepare(`SELECT a.id, a.urn FROM ` + d.JSONValues("?", "j", "TEXT") + ` JOIN graph_assets a ON a.urn = j.value`)
	if err != nil {
		w.close()
		return nil, fmt.Errorf("graph: prepare upserts: %w", err)
	}
	return w, nil
}

func (w *batchWriter) close() {
	if w.complete && w.dialect == store.SQLite {
		w.tx.Exec(`PRAGMA cache_size = -2000`) //nolint:errcheck // best effort: only memory is at stake
	}
	for _, st := range []*sql.Stmt{w.claims, w.fields, w.edges, w.ids.find, w.ids.create} {
		if st != nil {
			st.Close()
		}
	}
}

// upsert runs one of the prepared batch upserts over n rows, add writing row i, upsertChunk rows
// a statement, and, in an import that tracks them, records the rows it wrote.
func (w *batchWriter) upsert(ctx context.Context, st *sql.Stmt, kind int, rows []int, add func(i int, r *jsonRows)) error {
	r := &w.rows
	for k, i := range rows {
		add(i, r.row())
		if r.n == upsertChunk || k == len(rows)-1 {
			if err := w.upsertRows(ctx, st, kind, r.take()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *batchWriter) upsertRows(ctx context.Context, st *sql.Stmt, kind int, list string) error {
	if !w.track {
		_, err := st.ExecContext(ctx, w.source, w.ts, list)
		return err
	}
	res, err := st.QueryContext(ctx, w.source, w.ts, list)
	if err != nil {
		return err
	}
	// The ids are read to the end before any is recorded: recording may write through the same
	// transaction, and PostgreSQL runs one statement at a time on a connection.
	var ids []int64
	for res.Next() {
		var id int64
		if err := res.Scan(&id); err != nil {
			res.Close()
			return err
		}
		ids = append(ids, id)
	}
	res.Close()
	if err := res.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if err := w.saw(ctx, kind, id); err != nil {
			return err
		}
	}
	return nil
}

func (w *batchWriter) saw(ctx context.Context, kind int, id int64) error {
	w.seen[kind] = append(w.seen[kind], id)
	if len(w.seen[kind]) >= seenFlush {
		return w.flush(ctx)
	}
	return nil
}

func (w *batchWriter) flush(ctx context.Context) error {
	for kind, ids := range w.seen {
		if len(ids) == 0 {
			continue
		}
		if _, err := w.tx.ExecContext(ctx, `INSERT INTO graph_import_seen (kind, id) SELECT CAST(? AS INTEGER), j.value FROM `+w.dialect.JSONValues("?", "j", "BIGINT")+`
			WHERE true ON CONFLICT DO NOTHING`, kind, jsonIDs(ids)); err != nil {
			return fmt.Errorf("graph: import %s: %w", w.source, err)
		}
		w.seen[kind] = ids[:0]
	}
	return nil
}

func (w *batchWriter) put(ctx context.Context, b Batch) error {
	// Every asset the batch names, in order of first reference (which orders new assets' ids).
	var urns []URN
	for _, a := range b.Assets {
		urns = append(urns, a.URN)
	}
	for _, f := range b.Fields {
		urns = append(urns, f.Asset)
	}
	for _, e := range b.Edges {
		urns = append(urns, e.From.Asset, e.To.Asset)
	}
	if err := w.ids.resolve(ctx, urns, true); err != nil {
		return err
	}
	ids := w.ids.ids
	claims := lastWins(len(b.Assets), func(i int) URN { return b.Assets[i].URN })
	if err := w.upsert(ctx, w.claims, seenClaim, claims, func(i int, r *jsonRows) {
		a := &b.Assets[i]
		r.int(ids[a.URN]).str(a.Kind).str(a.Name).str(a.Description).str(jsonList(a.Owners)).str(a.Domain).
			str(jsonList(a.Tags)).str(a.Criticality).str(a.Schedule).str(jsonMap(a.Attrs))
	}); err != nil {
		return fmt.Errorf("graph: upsert %d assets of %s: %w", len(claims), w.source, err)
	}
	// Duplicates within a batch merge first (see lastWins): PostgreSQL refuses an upsert that
	// touches one row twice.
	type fieldKey struct {
		asset URN
		path  string
	}
	type edgeKey struct {
		from, to         URN
		fromPath, toPath string
		kind             EdgeKind
	}
	fields := lastWins(len(b.Fields), func(i int) fieldKey { return fieldKey{b.Fields[i].Asset, b.Fields[i].Path} })
	if err := w.upsert(ctx, w.fields, seenField, fields, func(i int, r *jsonRows) {
		f := &b.Fields[i]
		r.int(ids[f.Asset]).str(f.Path).str(f.Type).int(flag(f.Nullable)).str(f.Description).str(jsonList(f.Tags)).int(int64(f.Ordinal))
	}); err != nil {
		return fmt.Errorf("graph: upsert %d fields of %s: %w", len(fields), w.source, err)
	}
	edges := lastWins(len(b.Edges), func(i int) edgeKey {
		e := &b.Edges[i]
		return edgeKey{e.From.Asset, e.To.Asset, e.From.Path, e.To.Path, e.Kind}
	})
	if err := w.upsert(ctx, w.edges, seenEdge, edges, func(i int, r *jsonRows) {
		e := &b.Edges[i]
		r.int(ids[e.From.Asset]).str(e.From.Path).int(ids[e.To.Asset]).str(e.To.Path).str(string(e.Kind)).str(e.Transformation)
	}); err != nil {
		return fmt.Errorf("graph: upsert %d edges of %s: %w", len(edges), w.source, err)
	}
	if w.track && len(b.KeepFieldEdgesInto) > 0 {
		if err := w.ids.resolve(ctx, b.KeepFieldEdgesInto, false); err != nil {
			return err
		}
		for _, u := range b.KeepFieldEdgesInto {
			if id, ok := w.ids.ids[u]; ok {
				if err := w.saw(ctx, seenKeepInto, id); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// finish marks stale, in a complete import, what the source asserted before but not in this one
// (field-level edges into KeepFieldEdgesInto excepted), and moves the graph generation when edges
// went stale or came back.
func (w *batchWriter) finish(ctx context.Context, res *ImportResult) error {
	// New edges show in max(graph_edges.id); revived ones need the generation bumped.
	staleAfter, err := staleEdges(ctx, w.tx, w.source)
	if err != nil {
		return err
	}
	bump, logged := staleAfter != w.staleBefore, true
	var changed []int64
	if bump {
		if w.staleIDs == nil {
			logged = false
		} else if changed, err = revived(ctx, w.tx, w.source, w.staleIDs); err != nil {
			return err
		}
	}
	if w.track {
		if err := w.flush(ctx); err != nil {
			return err
		}
		for _, q := range []struct {
			n   *int
			sql string
		}{
			{&res.Stale.Assets, `UPDATE graph_asset_claims SET stale = 1 WHERE source = ? AND stale = 0
				AND rowid NOT IN (SELECT id FROM graph_import_seen WHERE kind = 0)`},
			{&res.Stale.Fields, `UPDATE graph_fields SET stale = 1 WHERE source = ? AND stale = 0
				AND rowid NOT IN (SELECT id FROM graph_import_seen WHERE kind = 1)`},
		} {
			r, err := w.tx.ExecContext(ctx, q.sql, w.source)
			if err != nil {
				return fmt.Errorf("graph: mark stale: %w", err)
			}
			n, err := r.RowsAffected()
			if err != nil {
				return fmt.Errorf("graph: mark stale: %w", err)
			}
			*q.n = int(n)
		}
		rows, err := w.tx.QueryContext(ctx, `UPDATE graph_edges SET stale = 1 WHERE source = ? AND stale = 0
			AND id NOT IN (SELECT id FROM graph_import_seen WHERE kind = 2)
			AND NOT ((from_field <> '' OR to_field <> '') AND to_id IN (SELECT id FROM graph_import_seen WHERE kind = 3))
			RETURNING id`, w.source)
		if err != nil {
			return fmt.Errorf("graph: mark edges stale: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("graph: mark edges stale: %w", err)
			}
			changed = append(changed, id)
			res.Stale.Edges++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("graph: mark edges stale: %w", err)
		}
		bump = bump || res.Stale.Edges > 0
		if _, err := w.tx.ExecContext(ctx, `DELETE FROM graph_import_seen`); err != nil {
			return fmt.Errorf("graph: import %s: %w", w.source, err)
		}
	}
	if bump {
		return bumpGeneration(ctx, w.tx, w.dialect, changed, logged)
	}
	return nil
}

// hasRows says whether source has any claim, field or edge yet (through the by-source indexes).
func hasRows(ctx context.Context, tx *sql.Tx, source string) (bool, error) {
	var has bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM graph_asset_claims WHERE source = ?1)
		OR EXISTS (SELECT 1 FROM graph_fields WHERE source = ?1) OR EXISTS (SELECT 1 FROM graph_edges WHERE source = ?1)`,
		source).Scan(&has); err != nil {
		return false, fmt.Errorf("graph: rows of %s: %w", source, err)
	}
	return has, nil
}

// staleEdges counts source's stale edges (through the partial index graph_edges_stale).
func staleEdges(ctx context.Context, tx *sql.Tx, source string) (int64, error) {
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM graph_edges WHERE source = ? AND stale = 1`, source).Scan(&n); err != nil {
		return 0, fmt.Errorf("graph: count stale edges of %s: %w", source, err)
	}
	return n, nil
}

// staleEdgeIDs lists source's stale edges, in id order.
func staleEdgeIDs(ctx context.Context, tx *sql.Tx, source string) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM graph_edges WHERE source = ? AND stale = 1 ORDER BY id`, source)
	if err != nil {
		return nil, fmt.Errorf("graph: list stale edges of %s: %w", source, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("graph: list stale edges of %s: %w", source, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("graph: list stale edges of %s: %w", source, err)
	}
	return ids, nil
}

// revived is the edges of before (source's stale edges, in id order) that are live now.
func revived(ctx context.Context, tx *sql.Tx, source string, before []int64) ([]int64, error) {
	after, err := staleEdgeIDs(ctx, tx, source)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, id := range before {
		if _, still := slices.BinarySearch(after, id); !still {
			out = append(out, id)
		}
	}
	return out, nil
}

// Bounds of the edge change log (migration 0012): the generations kept, and the most edge ids one
// write logs. A process whose adjacency is older than the window, or that a larger write skipped,
// reads the edge table afresh, which then costs less than patching would.
const (
	changeLogWindow  = 64
	maxLoggedChanges = 50_000
)

// bumpGeneration tells every process's in-memory adjacency that edges changed state (migrations
// 0011 and 0012, snapshot.go), logging the changed edges under the new generation so that the
// adjacency can be patched. logged false says changed is incomplete: adjacencies before this
// generation are then loaded afresh. Edges added with new ids need no log entry: the highest id
// says which they are.
func bumpGeneration(ctx context.Context, tx *sql.Tx, d store.Dialect, changed []int64, logged bool) error {
	logged = logged && len(changed) <= maxLoggedChanges
	var n, from int64
	if err := tx.QueryRowContext(ctx, `UPDATE graph_generation SET n = n + 1, logged_from = CASE
		WHEN ? = 1 THEN n + 1 WHEN n + 1 - ? > logged_from THEN n + 1 - ? ELSE logged_from END
		WHERE id = 1 RETURNING n, logged_from`, !logged, changeLogWindow, changeLogWindow).Scan(&n, &from); err != nil {
		return fmt.Errorf("graph: bump generation: %w", err)
	}
	if logged && len(changed) > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO graph_edge_changes (gen, edge_id) SELECT CAST(? AS BIGINT), j.value FROM `+d.JSONValues("?", "j", "BIGINT")+`
			WHERE true ON CONFLICT DO NOTHING`, n, jsonIDs(changed)); err != nil {
			return fmt.Errorf("graph: log edge changes: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM graph_edge_changes WHERE gen <= ?`, from); err != nil {
		return fmt.Errorf("graph: prune edge change log: %w", err)
	}
	return nil
}

func validateBatch(b *Batch) error {
	if strings.TrimSpace(b.Source) == "" {
		return errors.New("graph: batch has no source; name who asserts it (e.g. dbt:manifest/billing)")
	}
	check := func(u URN) error { _, err := ParseURN(string(u)); return err }
	for i := range b.Assets {
		a := &b.Assets[i]
		if err := check(a.URN); err != nil {
			return err
		}
		if a.System != "" && a.System != a.URN.System() {
			return fmt.Errorf("graph: asset %s: system %q does not match the URN's %q", a.URN, a.System, a.URN.System())
		}
		if !ValidCriticality(a.Criticality) {
			return fmt.Errorf("graph: asset %s: criticality %q must be low, medium, high or critical", a.URN, a.Criticality)
		}
		if a.Schedule != "" {
			if _, err := ParseSchedule(a.Schedule); err != nil {
				return fmt.Errorf("graph: asset %s: %w", a.URN, err)
			}
		}
	}
	for _, f := range b.Fields {
		if err := check(f.Asset); err != nil {
			return err
		}
		if f.Path == "" {
			return fmt.Errorf("graph: field of %s has an empty path", f.Asset)
		}
	}
	for _, e := range b.Edges {
		if err := check(e.From.Asset); err != nil {
			return err
		}
		if err := check(e.To.Asset); err != nil {
			return err
		}
		if e.Kind == "" {
			return fmt.Errorf("graph: edge %s → %s has no kind", e.From, e.To)
		}
		if e.From == e.To {
			return fmt.Errorf("graph: edge %s → itself", e.From)
		}
	}
	return nil
}

// idCache creates graph_assets rows on first reference, so an edge may name an asset no source has
// described yet (it shows as referenced_only until one does).
type idCache struct {
	tx           *sql.Tx
	ids          map[URN]int64
	ts           string
	find, create *sql.Stmt
}

// resolve puts the ids of urns into c.ids, creating the assets that do not exist when create is
// set (in the order urns first names them).
func (c *idCache) resolve(ctx context.Context, urns []URN, create bool) error {
	var missing []string
	var rows [][2]string
	queued := map[URN]bool{}
	for _, u := range urns {
		if _, ok := c.ids[u]; ok || queued[u] {
			continue
		}
		queued[u] = true
		missing = append(missing, string(u))
		rows = append(rows, [2]string{string(u), u.System()})
	}
	if len(missing) == 0 {
		return nil
	}
	if create {
		list, err := json.Marshal(rows)
		if err != nil {
			return err
		}
		if _, err := c.create.ExecContext(ctx, c.ts, string(list)); err != nil {
			return fmt.Errorf("graph: create %d assets: %w", len(rows), err)
		}
	}
	list, err := json.Marshal(missing)
	if err != nil {
		return err
	}
	found, err := c.find.QueryContext(ctx, string(list))
	if err != nil {
		return fmt.Errorf("graph: find %d assets: %w", len(missing), err)
	}
	defer found.Close()
	for found.Next() {
		var id int64
		var urn string
		if err := found.Scan(&id, &urn); err != nil {
			return fmt.Errorf("graph: find assets: %w", err)
		}
		c.ids[URN(urn)] = id
	}
	if err := found.Err(); err != nil {
		return fmt.Errorf("graph: find assets: %w", err)
	}
	if create {
		for _, u := range missing {
			if _, ok := c.ids[URN(u)]; !ok {
				return fmt.Errorf("graph: asset %s not found after creating it", u)
			}
		}
	}
	return nil
}

// markStale also returns the ids of the edges it marked stale.
func markStale(ctx context.Context, tx *sql.Tx, source string, seen Seen) (Counts, []int64, error) {
	var c Counts
	var stale []int64
	rows, err := tx.QueryContext(ctx, `SELECT c.asset_id, a.urn FROM graph_asset_claims c JOIN graph_assets a ON a.id = c.asset_id
		WHERE c.source = ? AND c.stale = 0`, source)
	if err != nil {
		return c, nil, fmt.Errorf("graph: mark stale: %w", err)
	}
	for rows.Next() {
		var id int64
		var urn string
		if err := rows.Scan(&id, &urn); err != nil {
			rows.Close()
			return c, nil, err
		}
		if !seen.Assets[URN(urn)] {
			stale = append(stale, id)
		}
	}
	rows.Close()
	for _, id := range stale {
		if _, err := tx.ExecContext(ctx, `UPDATE graph_asset_claims SET stale = 1 WHERE asset_id = ? AND source = ?`, id, source); err != nil {
			return c, nil, fmt.Errorf("graph: mark asset stale: %w", err)
		}
	}
	c.Assets = len(stale)

	type fieldKey struct {
		id   int64
		path string
	}
	var staleFields []fieldKey
	rows, err = tx.QueryContext(ctx, `SELECT f.asset_id, a.urn, f.path FROM graph_fields f JOIN graph_assets a ON a.id = f.asset_id
		WHERE f.source = ? AND f.stale = 0`, source)
	if err != nil {
		return c, nil, fmt.Errorf("graph: mark stale: %w", err)
	}
	for rows.Next() {
		var k fieldKey
		var urn string
		if err := rows.Scan(&k.id, &urn, &k.path); err != nil {
			rows.Close()
			return c, nil, err
		}
		if !seen.Fields[URN(urn).Field(k.path)] {
			staleFields = append(staleFields, k)
		}
	}
	rows.Close()
	for _, k := range staleFields {
		if _, err := tx.ExecContext(ctx, `UPDATE graph_fields SET stale = 1 WHERE asset_id = ? AND path = ? AND source = ?`, k.id, k.path, source); err != nil {
			return c, nil, fmt.Errorf("graph: mark field stale: %w", err)
		}
	}
	c.Fields = len(staleFields)

	var staleEdges []int64
	rows, err = tx.QueryContext(ctx, `SELECT e.id, fa.urn, e.from_field, ta.urn, e.to_field, e.kind FROM graph_edges e
		JOIN graph_assets fa ON fa.id = e.from_id JOIN graph_assets ta ON ta.id = e.to_id
		WHERE e.source = ? AND e.stale = 0`, source)
	if err != nil {
		return c, nil, fmt.Errorf("graph: mark stale: %w", err)
	}
	for rows.Next() {
		var id int64
		var e Edge
		var from, to, kind string
		if err := rows.Scan(&id, &from, &e.From.Path, &to, &e.To.Path, &kind); err != nil {
			rows.Close()
			return c, nil, err
		}
		e.From.Asset, e.To.Asset, e.Kind = URN(from), URN(to), EdgeKind(kind)
		if seen.Edges[e.Key()] || (e.FieldLevel() && seen.KeepFieldEdgesInto[e.To.Asset]) {
			continue
		}
		staleEdges = append(staleEdges, id)
	}
	rows.Close()
	for _, id := range staleEdges {
		if _, err := tx.ExecContext(ctx, `UPDATE graph_edges SET stale = 1 WHERE id = ?`, id); err != nil {
			return c, nil, fmt.Errorf("graph: mark edge stale: %w", err)
		}
	}
	c.Edges = len(staleEdges)
	return c, staleEdges, nil
}

func jsonList(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	s := append([]string(nil), v...)
	sort.Strings(s)
	b, _ := json.Marshal(s)
	return string(b)
}

func jsonMap(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// flag is a bool as the 0/1 our INTEGER flag columns hold, for values bound inside a JSON batch
// (where the driver cannot convert them).
func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// lastWins returns the indexes of n rows to write, one per key: each key at its first row's place,
// carrying its last row's index. That is what SQLite's upsert makes of duplicates in one statement
// (insert, then update in order), and what PostgreSQL needs done beforehand, since it refuses a
// statement that updates one row twice.
func lastWins[K comparable](n int, key func(i int) K) []int {
	at := make(map[K]int, n)
	out := make([]int, 0, n)
	for i := 0; i < n; i++ {
		k := key(i)
		if j, dup := at[k]; dup {
			out[j] = i
			continue
		}
		at[k] = len(out)
		out = append(out, i)
	}
	return out
}
