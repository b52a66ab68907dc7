package graph

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/store"
)

// patchSnapshot brings s up to gen without reading the whole edge table: edges above s's highest
// id are new; edges the change log names for the generations after s's are read again, replacing
// (or, when gone, removing) what s holds of them. It returns nil when s cannot be patched (no
// snapshot, one older than the log keeps, over the limit, or changes so many that a fresh load
// costs less): the caller then loads afresh. s itself is left as it was: readers may hold it.
//
// Every slice s shares with the patched snapshot is only appended to beyond s's length, which no
// reader of s looks at, and only the cache's newest snapshot is ever patched.
func patchSnapshot(ctx context.Context, tx *sql.Tx, d store.Dialect, s *snapshot, gen generationKey, limit int) (*snapshot, error) {
	if s == nil || s.tooBig || s.gen.n < gen.logFrom || gen.before(s.gen) {
		return nil, nil
	}
	budget := max(1024, s.edges/8)
	if gen.maxEdge-s.gen.maxEdge > int64(budget) {
		return nil, nil
	}
	var changed []int64
	if gen.n > s.gen.n {
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT edge_id FROM graph_edge_changes WHERE gen > ? AND gen <= ?`, s.gen.n, gen.n)
		if err != nil {
			return nil, fmt.Errorf("graph: read edge change log: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("graph: read edge change log: %w", err)
			}
			changed = append(changed, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("graph: read edge change log: %w", err)
		}
		if len(changed) > budget {
			return nil, nil
		}
	}
	var maxAsset int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(max(id), 0) FROM graph_assets`).Scan(&maxAsset); err != nil {
		return nil, fmt.Errorf("graph: patch adjacency: %w", err)
	}
	if tooSparse(maxAsset, s.edges+budget) {
		return nil, nil
	}

	next := *s
	next.gen = gen
	next.added = maps.Clone(s.added)
	if next.added == nil {
		next.added = map[string]int32{}
	}
	next.byID = maps.Clone(s.byID)
	if next.byID == nil {
		next.byID = map[int64]int32{}
	}
	firstNew := int32(len(s.strs))
	intern := func(b sql.RawBytes) int32 {
		if id, ok := next.lookup(string(b)); ok {
			return id
		}
		v := string(b)
		id := int32(len(next.strs))
		next.strs = append(next.strs, v)
		next.added[v] = id
		return id
	}

	// Read the new and the changed rows.
	var recs []edgeRec
	rows, err := tx.QueryContext(ctx, `SELECT `+edgeColumns+` FROM graph_edges WHERE id > ?1
		UNION ALL SELECT `+edgeColumns+` FROM graph_edges WHERE id IN (SELECT j.value FROM `+d.JSONValues("?2", "j", "BIGINT")+`) AND id <= ?1`,
		s.gen.maxEdge, jsonIDs(changed))
	if err != nil {
		return nil, fmt.Errorf("graph: patch adjacency: %w", err)
	}
	if err := scanEdges(rows, maxAsset, intern, func(r edgeRec) { recs = append(recs, r) }); err != nil {
		return nil, err
	}

	// Strings first: ranks and lower-case forms must be known before segments are ordered.
	if int(firstNew) < len(next.strs) {
		for i := int(firstNew); i < len(next.strs); i++ {
			intern(sql.RawBytes(lowerASCII(next.strs[i])))
		}
		next.lower = s.lower
		for i := int(firstNew); i < len(next.strs); i++ {
			id, _ := next.lookup(lowerASCII(next.strs[i]))
			next.lower = append(next.lower, id)
		}
		order := make([]int32, len(next.strs))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int { return strings.Compare(next.strs[a], next.strs[b]) })
		next.rank = make([]int32, len(order))
		for r, id := range order {
			next.rank[id] = int32(r)
		}
	}

	// Assets the new edges may name for the first time.
	if int(maxAsset) >= len(s.urns) {
		next.urns = append(s.urns, make([]string, int(maxAsset)+1-len(s.urns))...)
		if err := next.readURNs(ctx, tx, int64(len(s.urns)), maxAsset); err != nil {
			return nil, err
		}
	}

	// Edges removed (or replaced by their re-read row), and the segments to rewrite.
	removed := map[int32]bool{}
	touchedOut, touchedIn := map[int32]bool{}, map[int32]bool{}
	drop := func(id int64) {
		if k, ok := s.edgeIndex(id); ok && !removed[k] {
			removed[k] = true
			touchedOut[s.ends[k].from], touchedIn[s.ends[k].to] = true, true
			next.byID[id] = -1
		}
	}
	for _, id := range changed {
		drop(id)
	}
	addedOut, addedIn := map[int32][]half{}, map[int32][]half{}
	for _, r := range recs {
		drop(r.id)
		i := int32(len(next.rowID))
		next.rowID = append(next.rowID, r.id)
		next.ends = append(next.ends, edgeEnds{from: r.from, to: r.to})
		next.byID[r.id] = i
		near, h := next.half(r, i, false)
		addedOut[near] = append(addedOut[near], h)
		touchedOut[near] = true
		near, h = next.half(r, i, true)
		addedIn[near] = append(addedIn[near], h)
		touchedIn[near] = true
	}
	next.edges = s.edges - len(removed) + len(recs)
	if next.edges > limit || len(next.rowID) >= 1<<31-1 {
		return nil, nil
	}
	next.out = next.rewrite(&s.out, int(maxAsset)+1, touchedOut, addedOut, removed)
	next.in = next.rewrite(&s.in, int(maxAsset)+1, touchedIn, addedIn, removed)
	if next.garbage > 2*next.edges+1<<16 {
		// More dead halves than live ones: compact by loading afresh.
		return nil, nil
	}
	next.patches++
	return &next, nil
}

// rewrite returns a copy of a (with room for assets ids below assets) whose touched segments are
// rebuilt: their halves minus removed edges, plus added, in walk order, appended to a.e.
func (s *snapshot) rewrite(a *adjacency, assets int, touched map[int32]bool, added map[int32][]half, removed map[int32]bool) adjacency {
	n := max(assets, len(a.lo))
	out := adjacency{lo: make([]int32, n), hi: make([]int32, n), e: a.e}
	copy(out.lo, a.lo)
	copy(out.hi, a.hi)
	for _, asset := range slices.Sorted(maps.Keys(touched)) {
		old := a.of(asset)
		startAt := len(out.e)
		for _, h := range old {
			if !removed[h.edge] {
				out.e = append(out.e, h)
			}
		}
		out.e = append(out.e, added[asset]...)
		s.order(out.e[startAt:])
		s.garbage += len(old)
		out.lo[asset], out.hi[asset] = int32(startAt), int32(len(out.e))
	}
	return out
}

// edgeIndex finds the edge index holding row id, if this snapshot holds it.
func (s *snapshot) edgeIndex(id int64) (int32, bool) {
	if k, ok := s.byID[id]; ok {
		return k, k >= 0
	}
	if k, ok := slices.BinarySearch(s.rowID[:s.loaded], id); ok {
		return int32(k), true
	}
	return 0, false
}
