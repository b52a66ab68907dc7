package graph

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/store"
)

// Traverse walks the graph breadth-first from start. Rules, downstream (upstream mirrors them):
//   - from field f of A, a field-level edge A#f → B#g reaches B#g (or B as a whole when g is empty);
//   - from field f of A, a table-level edge A → B of a field-preserving kind (schema_of,
//     materializes) reaches B#f;
//   - from field f of A, another table-level edge A → B reaches B as a whole only when no
//     field-level edge from A to B is known (then we cannot tell which fields B reads);
//   - from A as a whole, every edge out of A reaches its target as a whole.
//
// Field paths match case-insensitively (A–Z fold, as SQLite's lower(); warehouses fold identifier
// case). The walk runs over an in-memory adjacency of the edge table that this process keeps per
// store and reloads when the store's graph generation moves (see snapshot.go); evidence for the
// followed hops is read from the store in one batched query. When the edge table is larger than the
// Graph's snapshot limit the walk runs inside SQLite instead (traverseSQL). Both walks return the
// same Lineage, to the order of nodes, hops and evidence.
func (g *Graph) Traverse(ctx context.Context, start []FieldRef, opt TraverseOptions) (Lineage, error) {
	opt, err := normalize(start, opt)
	if err != nil {
		return Lineage{}, err
	}
	lin, _, err := g.traverse(ctx, start, opt)
	return lin, err
}

// traverse is Traverse for normalized options; it also returns the row id of each node's asset,
// in the order of Lineage.Nodes, so callers can read the assets without looking their URNs up.
func (g *Graph) traverse(ctx context.Context, start []FieldRef, opt TraverseOptions) (Lineage, []int64, error) {
	if g.snapLimit > 0 {
		lin, ids, ok, err := g.traverseMemory(ctx, start, opt)
		if err != nil || ok {
			return lin, ids, err
		}
	}
	return g.traverseSQL(ctx, start, opt)
}

func normalize(start []FieldRef, opt TraverseOptions) (TraverseOptions, error) {
	if opt.Direction == "" {
		opt.Direction = Downstream
	}
	if opt.Direction != Downstream && opt.Direction != Upstream {
		return opt, fmt.Errorf("direction %q: want downstream or upstream", opt.Direction)
	}
	if opt.MaxDepth <= 0 {
		opt.MaxDepth = DefaultMaxDepth
	}
	if opt.MaxDepth > MaxDepthLimit {
		opt.MaxDepth = MaxDepthLimit
	}
	if opt.MaxHops <= 0 {
		opt.MaxHops = 10000
	}
	if len(start) == 0 {
		return opt, fmt.Errorf("traverse: no start asset")
	}
	return opt, nil
}

// traverseSQL is the walk inside SQLite: the fallback when the edge table is too large to hold in
// memory. Within a level, nodes are expanded in the order they were reached and each node's edges
// in the order (far end, near field, far field, kind, stale, row id), so which parent and which
// spelling of a field reaches a node first is defined, and the in-memory walk repeats it exactly.
func (g *Graph) traverseSQL(ctx context.Context, start []FieldRef, opt TraverseOptions) (Lineage, []int64, error) {
	ids, err := assetIDs(ctx, g.st.DB, start)
	if err != nil {
		return Lineage{}, nil, err
	}
	conn, err := g.st.DB.Conn(ctx)
	if err != nil {
		return Lineage{}, nil, fmt.Errorf("graph: traverse: %w", err)
	}
	defer conn.Close()
	w := &walker{conn: conn, dialect: g.st.Dialect(), opt: opt}
	w.sql()
	if err := w.reset(ctx); err != nil {
		return Lineage{}, nil, err
	}
	// Leave the pooled connection's temporary table empty for its next user.
	defer conn.ExecContext(context.WithoutCancel(ctx), `DELETE FROM dw_reach; DELETE FROM dw_hops`)
	for i, s := range start {
		if _, err := conn.ExecContext(ctx, `INSERT INTO dw_reach(id, field, disp, depth, via_id, via_field) VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT DO NOTHING`,
			ids[i], lowerASCII(s.Path), s.Path, ids[i], lowerASCII(s.Path)); err != nil {
			return Lineage{}, nil, fmt.Errorf("graph: traverse: %w", err)
		}
	}
	out := Lineage{Direction: opt.Direction, Start: start}
	for depth := 1; ; depth++ {
		if err := ctx.Err(); err != nil {
			return Lineage{}, nil, err
		}
		if depth > opt.MaxDepth {
			var more bool
			if err := conn.QueryRowContext(ctx, w.moreQ, depth-1, opt.IncludeStale, opt.IncludeStale).Scan(&more); err != nil {
				return Lineage{}, nil, fmt.Errorf("graph: traverse: %w", err)
			}
			out.Truncated = more
			break
		}
		n, err := w.step(ctx, depth)
		if err != nil {
			return Lineage{}, nil, fmt.Errorf("graph: traverse level %d: %w", depth, err)
		}
		if n == 0 {
			break
		}
	}
	nodeIDs, err := w.nodes(ctx, &out)
	if err != nil {
		return Lineage{}, nil, err
	}
	if !opt.SkipHops {
		if err := w.hops(ctx, &out); err != nil {
			return Lineage{}, nil, err
		}
	}
	return out, nodeIDs, nil
}

type walker struct {
	conn                                     *sql.Conn
	dialect                                  store.Dialect
	opt                                      TraverseOptions
	stepQ, hopStepQ, hopReachQ, moreQ, hopsQ string
	near, far, nearF, farF                   string
}

// step reaches the nodes at depth. For lineage the followed edges are first recorded in dw_hops
// (one evaluation of the rules), and the new nodes copied from there.
func (w *walker) step(ctx context.Context, depth int) (int64, error) {
	if w.opt.SkipHops {
		res, err := w.conn.ExecContext(ctx, w.stepQ, depth, depth-1, w.opt.IncludeStale, w.opt.IncludeStale)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	if _, err := w.conn.ExecContext(ctx, w.hopStepQ, depth, depth-1, w.opt.IncludeStale, w.opt.IncludeStale); err != nil {
		return 0, err
	}
	res, err := w.conn.ExecContext(ctx, w.hopReachQ, depth, depth)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sql builds the direction's statements. For upstream the edge is read backwards: its to_id is the
// near end.
func (w *walker) sql() {
	w.near, w.far, w.nearF, w.farF = "from_id", "to_id", "from_field", "to_field"
	if w.opt.Direction == Upstream {
		w.near, w.far, w.nearF, w.farF = "to_id", "from_id", "to_field", "from_field"
	}
	// The rules of Traverse, as a join condition between a reached node f and an edge e.
	rule := fmt.Sprintf(`(e.stale = 0 OR ? = 1) AND (
		f.field = ''
		OR (e.%[1]s <> '' AND lower(e.%[1]s) = f.field)
		OR (e.%[1]s = '' AND e.kind IN ('schema_of', 'materializes'))
		OR (e.%[1]s = '' AND NOT EXISTS (SELECT 1 FROM graph_edges x WHERE x.%[2]s = f.id AND x.%[3]s = e.%[3]s
			AND x.%[1]s <> '' AND (x.stale = 0 OR ? = 1))))`, w.nearF, w.near, w.far)
	toField := fmt.Sprintf(`CASE WHEN f.field = '' THEN '' WHEN e.%[1]s = '' AND e.kind IN ('schema_of', 'materializes') THEN f.field ELSE lower(e.%[2]s) END`, w.nearF, w.farF)
	toDisp := fmt.Sprintf(`CASE WHEN f.field = '' THEN '' WHEN e.%[1]s = '' AND e.kind IN ('schema_of', 'materializes') THEN f.disp ELSE e.%[2]s END`, w.nearF, w.farF)
	order := fmt.Sprintf(`ORDER BY f.rowid, e.%s, e.%s, e.%s, e.kind, e.stale, e.id`, w.far, w.nearF, w.farF)
	w.stepQ = fmt.Sprintf(`INSERT INTO dw_reach(id, field, disp, depth, via_id, via_field)
		SELECT e.%s, %s, %s, CAST(? AS INTEGER), f.id, f.field
		FROM dw_reach f JOIN graph_edges e ON e.%s = f.id
		WHERE f.depth = ? AND %s %s ON CONFLICT DO NOTHING`, w.far, toField, toDisp, w.near, rule, order)
	w.hopStepQ = fmt.Sprintf(`INSERT INTO dw_hops(from_id, from_field, to_id, to_field, to_disp, edge_id, depth)
		SELECT f.id, f.field, e.%s, %s, %s, e.id, CAST(? AS INTEGER)
		FROM dw_reach f JOIN graph_edges e ON e.%s = f.id
		WHERE f.depth = ? AND %s %s`, w.far, toField, toDisp, w.near, rule, order)
	w.hopReachQ = `INSERT INTO dw_reach(id, field, disp, depth, via_id, via_field)
		SELECT to_id, to_field, to_disp, CAST(? AS INTEGER), from_id, from_field FROM dw_hops WHERE depth = ? ORDER BY rowid
		ON CONFLICT DO NOTHING`
	// More lies beyond MaxDepth only when an edge the rules would follow reaches a node not yet seen.
	w.moreQ = fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM dw_reach f JOIN graph_edges e ON e.%s = f.id
		WHERE f.depth = ? AND %s
		AND NOT EXISTS (SELECT 1 FROM dw_reach r WHERE r.id = e.%s AND r.field = %s))`, w.near, rule, w.far, toField)
	w.hopsQ = `SELECT h.from_id, h.from_field, h.depth, h.to_id, h.to_field, e.kind, e.source, e.transformation, e.observed_at, e.stale
		FROM dw_hops h JOIN graph_edges e ON e.id = h.edge_id ORDER BY h.rowid LIMIT ?`
}

func (w *walker) reset(ctx context.Context) error {
	var qs []string
	// Rows are read back in insertion order (rowid): SQLite numbers every row; on PostgreSQL the
	// temporary tables carry that number as a column.
	rowid := ""
	if w.dialect == store.SQLite {
		// Per-connection tuning for walks over large graphs: the reached set lives in memory, and
		// index pages are cached and memory-mapped instead of read through syscalls page by page.
		qs = append(qs, `PRAGMA temp_store = MEMORY`, `PRAGMA cache_size = -65536`, `PRAGMA mmap_size = 268435456`)
	} else {
		rowid = "rowid BIGINT GENERATED ALWAYS AS IDENTITY, "
	}
	for _, q := range append(qs,
		`CREATE TEMP TABLE IF NOT EXISTS dw_reach (`+rowid+`id BIGINT NOT NULL, field TEXT NOT NULL, disp TEXT NOT NULL,
			depth INTEGER NOT NULL, via_id BIGINT NOT NULL, via_field TEXT NOT NULL, PRIMARY KEY (id, field))`,
		`CREATE INDEX IF NOT EXISTS dw_reach_depth ON dw_reach (depth)`,
		`CREATE TEMP TABLE IF NOT EXISTS dw_hops (`+rowid+`from_id BIGINT NOT NULL, from_field TEXT NOT NULL, to_id BIGINT NOT NULL,
			to_field TEXT NOT NULL, to_disp TEXT NOT NULL, edge_id BIGINT NOT NULL, depth INTEGER NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS dw_hops_depth ON dw_hops (depth)`,
		`DELETE FROM dw_reach`,
		`DELETE FROM dw_hops`,
	) {
		if _, err := w.conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("graph: traverse: %w", err)
		}
	}
	return nil
}

type rnode struct {
	urn  URN
	disp string
}

func (w *walker) nodes(ctx context.Context, out *Lineage) ([]int64, error) {
	rows, err := w.conn.QueryContext(ctx, `SELECT r.id, a.urn, r.disp, r.depth, va.urn, v.disp
		FROM dw_reach r JOIN graph_assets a ON a.id = r.id
		JOIN dw_reach v ON v.id = r.via_id AND v.field = r.via_field
		JOIN graph_assets va ON va.id = v.id
		WHERE r.depth > 0 ORDER BY r.depth, a.urn, r.field`)
	if err != nil {
		return nil, fmt.Errorf("graph: traverse: %w", err)
	}
	defer rows.Close()
	out.Nodes = []Reached{}
	var ids []int64
	for rows.Next() {
		var n Reached
		var id int64
		var urn, via string
		if err := rows.Scan(&id, &urn, &n.Node.Path, &n.Depth, &via, &n.Via.Path); err != nil {
			return nil, err
		}
		n.Node.Asset, n.Via.Asset = URN(urn), URN(via)
		if w.keep(n.Node.Asset) {
			out.Nodes = append(out.Nodes, n)
			ids = append(ids, id)
		}
	}
	return ids, rows.Err()
}

func (w *walker) keep(u URN) bool {
	return len(w.opt.Systems) == 0 || contains(w.opt.Systems, u.System())
}

// hops lists every followed edge between reached nodes, grouped per (from, to, kind) with the
// evidence of each source that asserted it.
func (w *walker) hops(ctx context.Context, out *Lineage) error {
	rows, err := w.conn.QueryContext(ctx, w.hopsQ, w.opt.MaxHops+1)
	if err != nil {
		return fmt.Errorf("graph: traverse hops: %w", err)
	}
	type key struct {
		fromID, toID       int64
		fromField, toField string
		kind               string
	}
	idx := map[key]int{}
	var keys []key
	var depths []int
	var evs [][]Evidence
	n := 0
	for rows.Next() {
		var k key
		var depth int
		var ev Evidence
		var at string
		if err := rows.Scan(&k.fromID, &k.fromField, &depth, &k.toID, &k.toField, &k.kind, &ev.Source, &ev.Transformation, &at, &ev.Stale); err != nil {
			rows.Close()
			return err
		}
		n++
		if n > w.opt.MaxHops {
			out.Truncated = true
			break
		}
		ev.ObservedAt, _ = store.ParseTimestamp(at)
		i, ok := idx[k]
		if !ok {
			i = len(keys)
			idx[k] = i
			keys = append(keys, k)
			depths = append(depths, depth) // the depth of the node the hop reaches
			evs = append(evs, nil)
		}
		evs[i] = append(evs[i], ev)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// Name the nodes the hops touch.
	names := map[[2]any]rnode{}
	nrows, err := w.conn.QueryContext(ctx, `SELECT r.id, r.field, a.urn, r.disp FROM dw_reach r JOIN graph_assets a ON a.id = r.id`)
	if err != nil {
		return fmt.Errorf("graph: traverse: %w", err)
	}
	for nrows.Next() {
		var id int64
		var field, urn, disp string
		if err := nrows.Scan(&id, &field, &urn, &disp); err != nil {
			nrows.Close()
			return err
		}
		names[[2]any{id, field}] = rnode{URN(urn), disp}
	}
	nrows.Close()
	if err := nrows.Err(); err != nil {
		return err
	}
	groups := make([]hopGroup, len(keys))
	for i, k := range keys {
		groups[i] = hopGroup{from: names[[2]any{k.fromID, k.fromField}], to: names[[2]any{k.toID, k.toField}],
			kind: k.kind, depth: depths[i], evidence: evs[i]}
	}
	w.opt.finishHops(groups, out)
	return nil
}

// hopGroup is one (from, to, kind) step of a walk with the evidence rows of every edge behind it, in
// the order the walk followed them.
type hopGroup struct {
	from, to rnode
	kind     string
	depth    int
	evidence []Evidence
}

// finishHops turns the groups into the reported hops, the same way for both walks: hops into
// systems outside opt.Systems dropped, evidence by source, ends in the caller's direction.
func (opt TraverseOptions) finishHops(groups []hopGroup, out *Lineage) {
	out.Hops = slices.Grow(out.Hops, len(groups))
	for _, gr := range groups {
		if !(len(opt.Systems) == 0 || contains(opt.Systems, gr.to.urn.System())) {
			continue
		}
		h := Hop{Depth: gr.depth, From: FieldRef{Asset: gr.from.urn, Path: gr.from.disp}, To: FieldRef{Asset: gr.to.urn, Path: gr.to.disp},
			Kind: EdgeKind(gr.kind), System: gr.to.urn.System(), Evidence: gr.evidence}
		if len(h.Evidence) > 1 {
			slices.SortStableFunc(h.Evidence, func(a, b Evidence) int { return strings.Compare(a.Source, b.Source) })
		}
		if opt.Direction == Upstream {
			h.From, h.To = h.To, h.From
			h.System = h.From.Asset.System()
		}
		out.Hops = append(out.Hops, h)
	}
}
