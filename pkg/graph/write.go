package graph

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
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
	return g.apply(ctx, b, false)
}

// Import records b as the complete current view of b.Source: everything b asserts is upserted and
// whatever b.Source asserted before but not now is marked stale (never deleted), in one transaction.
func (g *Graph) Import(ctx context.Context, b Batch) (ImportResult, error) {
	return g.apply(ctx, b, true)
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
			return bumpGeneration(ctx, tx, changed, true)
		}
		return nil
	})
	return c, err
}

func (g *Graph) apply(ctx context.Context, b Batch, complete bool) (ImportResult, error) {
	if err := validateBatch(&b); err != nil {
		return ImportResult{}, err
	}
	at := b.ObservedAt
	if at.IsZero() {
		at = g.now()
	}
	ts := store.Timestamp(at)
	res := ImportResult{Source: b.Source, Assets: len(b.Assets), Fields: len(b.Fields), Edges: len(b.Edges), Warnings: b.Warnings}
	err := g.st.Write(ctx, func(tx *sql.Tx) error {
		staleBefore, err := staleEdges(ctx, tx, b.Source)
		if err != nil {
			return err
		}
		// The ids of the stale edges, so the ones this batch revives can be logged for other
		// processes' adjacencies (see bumpGeneration); past maxLoggedChanges they are not read.
		var staleIDs []int64
		if staleBefore > 0 && staleBefore <= maxLoggedChanges {
			if staleIDs, err = staleEdgeIDs(ctx, tx, b.Source); err != nil {
				return err
			}
		}
		ids := idCache{tx: tx, ids: map[URN]int64{}, ts: ts}
		for _, a := range b.Assets {
			id, err := ids.get(ctx, a.URN)
			if err != nil {
				return err
			}
			owners, tags, attrs := jsonList(a.Owners), jsonList(a.Tags), jsonMap(a.Attrs)
			if _, err := tx.ExecContext(ctx, `INSERT INTO graph_asset_claims
				(asset_id, source, kind, name, description, owners, domain, tags, criticality, schedule, attrs, observed_at, stale)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
				ON CONFLICT (asset_id, source) DO UPDATE SET kind=excluded.kind, name=excluded.name,
				description=excluded.description, owners=excluded.owners, domain=excluded.domain, tags=excluded.tags,
				criticality=excluded.criticality, schedule=excluded.schedule, attrs=excluded.attrs,
				observed_at=excluded.observed_at, stale=0`,
				id, b.Source, a.Kind, a.Name, a.Description, owners, a.Domain, tags, a.Criticality, a.Schedule, attrs, ts); err != nil {
				return fmt.Errorf("graph: upsert asset %s: %w", a.URN, err)
			}
		}
		for _, f := range b.Fields {
			id, err := ids.get(ctx, f.Asset)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO graph_fields
				(asset_id, path, source, type, nullable, description, tags, ordinal, observed_at, stale)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
				ON CONFLICT (asset_id, path, source) DO UPDATE SET type=excluded.type, nullable=excluded.nullable,
				description=excluded.description, tags=excluded.tags, ordinal=excluded.ordinal,
				observed_at=excluded.observed_at, stale=0`,
				id, f.Path, b.Source, f.Type, f.Nullable, f.Description, jsonList(f.Tags), f.Ordinal, ts); err != nil {
				return fmt.Errorf("graph: upsert field %s: %w", f.Asset.Field(f.Path), err)
			}
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO graph_edges
			(from_id, from_field, to_id, to_field, kind, transformation, source, observed_at, stale)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)
			ON CONFLICT (from_id, from_field, to_id, to_field, kind, source) DO UPDATE SET
			transformation=excluded.transformation, observed_at=excluded.observed_at, stale=0`)
		if err != nil {
			return fmt.Errorf("graph: prepare edge upsert: %w", err)
		}
		defer stmt.Close()
		for _, e := range b.Edges {
			from, err := ids.get(ctx, e.From.Asset)
			if err != nil {
				return err
			}
			to, err := ids.get(ctx, e.To.Asset)
			if err != nil {
				return err
			}
			if _, err := stmt.ExecContext(ctx, from, e.From.Path, to, e.To.Path, string(e.Kind), e.Transformation, b.Source, ts); err != nil {
				return fmt.Errorf("graph: upsert edge %s → %s: %w", e.From, e.To, err)
			}
		}
		// New edges show in max(graph_edges.id); revived ones need the generation bumped.
		staleAfter, err := staleEdges(ctx, tx, b.Source)
		if err != nil {
			return err
		}
		bump, logged := staleAfter != staleBefore, true
		var changed []int64
		if bump {
			if staleIDs == nil {
				logged = false
			} else if changed, err = revived(ctx, tx, b.Source, staleIDs); err != nil {
				return err
			}
		}
		if complete {
			c, ids, err := markStale(ctx, tx, b.Source, SeenOf(b))
			if err != nil {
				return err
			}
			res.Stale = c
			bump = bump || c.Edges > 0
			changed = append(changed, ids...)
		}
		if bump {
			return bumpGeneration(ctx, tx, changed, logged)
		}
		return nil
	})
	if err != nil {
		return ImportResult{}, err
	}
	return res, nil
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
func bumpGeneration(ctx context.Context, tx *sql.Tx, changed []int64, logged bool) error {
	logged = logged && len(changed) <= maxLoggedChanges
	var n, from int64
	if err := tx.QueryRowContext(ctx, `UPDATE graph_generation SET n = n + 1, logged_from = CASE
		WHEN ? THEN n + 1 WHEN n + 1 - ? > logged_from THEN n + 1 - ? ELSE logged_from END
		WHERE id = 1 RETURNING n, logged_from`, !logged, changeLogWindow, changeLogWindow).Scan(&n, &from); err != nil {
		return fmt.Errorf("graph: bump generation: %w", err)
	}
	if logged && len(changed) > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO graph_edge_changes (gen, edge_id) SELECT ?, value FROM json_each(?)`,
			n, jsonIDs(changed)); err != nil {
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
	tx  *sql.Tx
	ids map[URN]int64
	ts  string
}

func (c *idCache) get(ctx context.Context, u URN) (int64, error) {
	if id, ok := c.ids[u]; ok {
		return id, nil
	}
	if _, err := c.tx.ExecContext(ctx, `INSERT INTO graph_assets(urn, system, first_seen) VALUES (?, ?, ?) ON CONFLICT (urn) DO NOTHING`,
		string(u), u.System(), c.ts); err != nil {
		return 0, fmt.Errorf("graph: create asset %s: %w", u, err)
	}
	var id int64
	if err := c.tx.QueryRowContext(ctx, `SELECT id FROM graph_assets WHERE urn = ?`, string(u)).Scan(&id); err != nil {
		return 0, fmt.Errorf("graph: find asset %s: %w", u, err)
	}
	c.ids[u] = id
	return id, nil
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
