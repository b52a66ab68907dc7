package graph

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dataworkers/dw/pkg/store"
)

// traverseMemory walks the process's in-memory adjacency (loading it if the store's graph changed
// since), with the rules and visiting order of traverseSQL, so both give the same Lineage. The
// generation check, the start lookup and the evidence of the followed edges all read in one
// transaction, so a concurrent write is either wholly seen or not at all. ok is false when the
// edge table is over the Graph's limit: the caller walks in SQL.
func (g *Graph) traverseMemory(ctx context.Context, start []FieldRef, opt TraverseOptions) (lin Lineage, nodeIDs []int64, ok bool, err error) {
	tx, err := g.st.ReadTx(ctx)
	if err != nil {
		return Lineage{}, nil, false, fmt.Errorf("graph: traverse: %w", err)
	}
	defer tx.Rollback()
	gen, err := generation(ctx, tx)
	if err != nil {
		return Lineage{}, nil, false, err
	}
	ids, err := assetIDs(ctx, tx, start)
	if err != nil {
		return Lineage{}, nil, false, err
	}
	snap, err := cacheFor(g.st).get(ctx, tx, gen, g.snapLimit)
	if err != nil || snap == nil {
		return Lineage{}, nil, false, err
	}
	w := newMemWalk(snap, opt)
	out := Lineage{Direction: opt.Direction, Start: start}
	if out.Truncated, err = w.run(ctx, start, ids); err != nil {
		return Lineage{}, nil, false, err
	}
	if opt.SkipHops {
		return out, w.nodesInto(&out), true, nil
	}
	// The hops' evidence is read (SQLite's work) while the reached nodes are sorted (Go's): both
	// only read the walk.
	type hops struct {
		groups    []hopGroup
		truncated bool
		err       error
	}
	read := make(chan hops, 1)
	go func() {
		var h hops
		h.groups, h.truncated, h.err = w.hopGroups(ctx, tx, g.st.Dialect())
		read <- h
	}()
	nodeIDs = w.nodesInto(&out)
	h := <-read
	if h.err != nil {
		return Lineage{}, nil, false, h.err
	}
	if h.truncated {
		out.Truncated = true
	}
	opt.finishHops(h.groups, &out)
	return out, nodeIDs, true, nil
}

// mnode is a reached node. Field ids are lower-cased paths; disp is the path as first spelled.
type mnode struct {
	asset       int32
	field, disp int32
	depth       int32
	via         int32 // index of the node it was first reached from (itself for a start)
}

// mhop is one followed edge.
type mhop struct {
	from, to int32 // node indexes
	edge     int32
	kind     int32
	depth    int32
	stale    bool
}

type memWalk struct {
	s    *snapshot
	opt  TraverseOptions
	adj  *adjacency
	urns map[int32]string // start assets, which may have no edges and so no URN in the snapshot
	// extra holds start paths the snapshot has never seen, as ids len(s.strs)+i.
	extra    []string
	extraIdx map[string]int32
	nodes    []mnode
	seen     map[uint64]int32
	hops     []mhop // at most MaxHops+1
}

func newMemWalk(s *snapshot, opt TraverseOptions) *memWalk {
	w := &memWalk{s: s, opt: opt, adj: &s.out, urns: map[int32]string{}, seen: map[uint64]int32{}}
	if opt.Direction == Upstream {
		w.adj = &s.in
	}
	return w
}

func (w *memWalk) str(id int32) string {
	if int(id) < len(w.s.strs) {
		return w.s.strs[id]
	}
	return w.extra[int(id)-len(w.s.strs)]
}

func (w *memWalk) id(v string) int32 {
	if id, ok := w.s.lookup(v); ok {
		return id
	}
	if id, ok := w.extraIdx[v]; ok {
		return id
	}
	if w.extraIdx == nil {
		w.extraIdx = map[string]int32{}
	}
	id := int32(len(w.s.strs) + len(w.extra))
	w.extra = append(w.extra, v)
	w.extraIdx[v] = id
	return id
}

func (w *memWalk) urn(asset int32) URN {
	if int(asset) < len(w.s.urns) && w.s.urns[asset] != "" {
		return URN(w.s.urns[asset])
	}
	return URN(w.urns[asset])
}

// reach records (asset, field) unless already reached; it returns the node's index and whether it
// is new.
func (w *memWalk) reach(asset, field, disp, depth, via int32) (int32, bool) {
	k := uint64(uint32(asset))<<32 | uint64(uint32(field))
	if i, ok := w.seen[k]; ok {
		return i, false
	}
	i := int32(len(w.nodes))
	if via < 0 {
		via = i
	}
	w.nodes = append(w.nodes, mnode{asset: asset, field: field, disp: disp, depth: depth, via: via})
	w.seen[k] = i
	return i, true
}

// follow applies the rules of Traverse to edge h out of node n: the node it reaches (field and
// display ids) and whether it is followed at all.
func (w *memWalk) follow(n mnode, h half) (field, disp int32, ok bool) {
	s := w.s
	if h.flags&flagStale != 0 && !w.opt.IncludeStale {
		return 0, 0, false
	}
	switch {
	case n.field == s.empty:
		return s.empty, s.empty, true
	case h.nearF != s.empty:
		if s.lower[h.nearF] == n.field {
			return s.lower[h.farF], h.farF, true
		}
		return 0, 0, false
	case h.flags&flagPreserving != 0:
		return n.field, n.disp, true
	case h.flags&flagLinkedLive != 0 || (w.opt.IncludeStale && h.flags&flagLinkedAny != 0):
		return 0, 0, false
	}
	return s.lower[h.farF], h.farF, true
}

// run walks level by level from start; truncated says MaxDepth stopped it before the edges ran out.
func (w *memWalk) run(ctx context.Context, start []FieldRef, ids []int64) (truncated bool, err error) {
	var frontier []int32
	for i, st := range start {
		if ids[i] >= 1<<31-1 {
			return false, fmt.Errorf("graph: traverse: asset id %d out of range", ids[i])
		}
		a := int32(ids[i])
		w.urns[a] = string(st.Asset)
		if n, isNew := w.reach(a, w.id(lowerASCII(st.Path)), w.id(st.Path), 0, -1); isNew {
			frontier = append(frontier, n)
		}
	}
	recordHops := !w.opt.SkipHops
	for depth := int32(1); ; depth++ {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if int(depth) > w.opt.MaxDepth {
			return w.more(frontier), nil
		}
		var next []int32
		for _, fi := range frontier {
			n := w.nodes[fi]
			for _, h := range w.adj.of(n.asset) {
				field, disp, ok := w.follow(n, h)
				if !ok {
					continue
				}
				ti, isNew := w.reach(h.far, field, disp, depth, fi)
				if isNew {
					next = append(next, ti)
				}
				if recordHops && len(w.hops) <= w.opt.MaxHops {
					w.hops = append(w.hops, mhop{from: fi, to: ti, edge: h.edge, kind: h.kind, depth: depth, stale: h.flags&flagStale != 0})
				}
			}
		}
		if len(next) == 0 {
			return false, nil
		}
		frontier = next
	}
}

// more reports whether an edge the rules would follow leads from frontier to a node not reached.
func (w *memWalk) more(frontier []int32) bool {
	for _, fi := range frontier {
		n := w.nodes[fi]
		for _, h := range w.adj.of(n.asset) {
			field, _, ok := w.follow(n, h)
			if !ok {
				continue
			}
			if _, seen := w.seen[uint64(uint32(h.far))<<32|uint64(uint32(field))]; !seen {
				return true
			}
		}
	}
	return false
}

// nodesInto lists the reached nodes by depth, URN and (lower-case) field, as traverseSQL does, and
// returns their asset ids in that order.
func (w *memWalk) nodesInto(out *Lineage) []int64 {
	type row struct {
		urn   URN
		field string
		i     int32
	}
	rows := make([]row, 0, len(w.nodes))
	for i, n := range w.nodes {
		if n.depth == 0 {
			continue
		}
		u := w.urn(n.asset)
		if len(w.opt.Systems) > 0 && !contains(w.opt.Systems, u.System()) {
			continue
		}
		rows = append(rows, row{urn: u, field: w.str(n.field), i: int32(i)})
	}
	slices.SortFunc(rows, func(a, b row) int {
		da, db := w.nodes[a.i].depth, w.nodes[b.i].depth
		if da != db {
			return int(da - db)
		}
		if c := strings.Compare(string(a.urn), string(b.urn)); c != 0 {
			return c
		}
		return strings.Compare(a.field, b.field)
	})
	out.Nodes = make([]Reached, len(rows))
	var ids []int64
	for i, r := range rows {
		n := w.nodes[r.i]
		v := w.nodes[n.via]
		out.Nodes[i] = Reached{Node: FieldRef{Asset: r.urn, Path: w.str(n.disp)}, Depth: int(n.depth),
			Via: FieldRef{Asset: w.urn(v.asset), Path: w.str(v.disp)}}
		ids = append(ids, int64(n.asset))
	}
	return ids
}

// hopGroups groups the first MaxHops followed edges by (from, to, kind), reading each edge's
// evidence (source, transformation, time, stale) through tx in one batched query. truncated says
// more edges were followed than MaxHops.
func (w *memWalk) hopGroups(ctx context.Context, tx *sql.Tx, d store.Dialect) (groups []hopGroup, truncated bool, err error) {
	hops := w.hops
	if len(hops) > w.opt.MaxHops {
		hops, truncated = hops[:w.opt.MaxHops], true
	}
	ids := make([]int64, 0, len(hops))
	for _, h := range hops {
		ids = append(ids, w.s.rowID[h.edge])
	}
	// One row per followed edge, placed by its index in the list (the key of JSONValues), all of
	// them returned as one JSON array: a row through database/sql costs more than the engine spends
	// finding it. Stale comes from the snapshot: its changes move the generation this transaction read.
	var list []byte
	if err := tx.QueryRowContext(ctx, `SELECT `+d.JSONArrayAgg("j.key", "e.source", "e.transformation", "e.observed_at")+`
		FROM `+d.JSONValues("?", "j", "BIGINT")+` JOIN graph_edges e ON e.id = j.value`, jsonIDs(ids)).Scan(&list); err != nil {
		return nil, false, fmt.Errorf("graph: traverse hops: %w", err)
	}
	evidence := make([]Evidence, len(ids))
	found, err := readEvidence(list, hops, evidence)
	if err != nil {
		return nil, false, fmt.Errorf("graph: traverse hops: %w", err)
	}
	if found != len(hops) {
		// The generation read in this transaction covers every edge of the snapshot.
		return nil, false, fmt.Errorf("graph: traverse hops: %d of %d followed edges not found under an unchanged generation", len(hops)-found, len(hops))
	}
	type key struct{ from, to, kind int32 }
	idx := map[key]int{}
	for i, h := range hops {
		ev := evidence[i]
		k := key{h.from, h.to, h.kind}
		gi, ok := idx[k]
		if !ok {
			gi = len(groups)
			idx[k] = gi
			from, to := w.nodes[h.from], w.nodes[h.to]
			groups = append(groups, hopGroup{
				from: rnode{urn: w.urn(from.asset), disp: w.str(from.disp)}, to: rnode{urn: w.urn(to.asset), disp: w.str(to.disp)},
				kind: w.str(h.kind), depth: int(h.depth)})
		}
		groups[gi].evidence = append(groups[gi].evidence, ev)
	}
	return groups, truncated, nil
}

// readEvidence fills evidence from list, hopGroups' JSON array of [index, source, transformation,
// observed_at], and counts the entries. Sources and times repeat across the edges of one import,
// so each is kept and parsed once.
func readEvidence(list []byte, hops []mhop, evidence []Evidence) (int, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(list))
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '[' {
		return 0, fmt.Errorf("evidence is not a JSON array (%v)", err)
	}
	sources := map[string]string{}
	var lastAt string
	var lastTime time.Time
	found := 0
	filled := make([]bool, len(hops))
	for dec.PeekKind() == '[' {
		// A token is valid until the next read: take each value as it comes.
		var idx int64
		var text [3]string
		bad := func() error { return fmt.Errorf("evidence row %d is not [index, source, transformation, time]", found) }
		for k := 0; k < 5; k++ {
			t, err := dec.ReadToken()
			if err != nil {
				return 0, err
			}
			switch {
			case k == 0 && t.Kind() == '[':
			case k == 1 && t.Kind() == '0':
				idx = t.Int()
			case k >= 2 && t.Kind() == '"':
				text[k-2] = t.String()
			default:
				return 0, bad()
			}
		}
		if t, err := dec.ReadToken(); err != nil || t.Kind() != ']' {
			return 0, bad()
		}
		i := int(idx)
		if i < 0 || i >= len(hops) || filled[i] {
			return 0, fmt.Errorf("unexpected evidence row %d", i)
		}
		filled[i] = true
		source := text[0]
		src, ok := sources[source]
		if !ok {
			src = source
			sources[src] = src
		}
		if at := text[2]; at != lastAt {
			lastAt = at
			lastTime, _ = store.ParseTimestamp(at)
		}
		evidence[i] = Evidence{Source: src, Transformation: text[1], ObservedAt: lastTime, Stale: hops[i].stale}
		found++
	}
	if t, err := dec.ReadToken(); err != nil || t.Kind() != ']' {
		return 0, fmt.Errorf("evidence array not closed (%v)", err)
	}
	return found, nil
}
