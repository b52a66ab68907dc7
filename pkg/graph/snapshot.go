package graph

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/dataworkers/dw/pkg/store"
)

// DefaultSnapshotMaxEdges bounds the in-memory adjacency a process keeps per store: about 64 bytes
// an edge (both directions, the row id and its two assets) plus 16 per asset, so 2,000,000 edges
// hold about 130 MB, and loading them briefly needs about 64 MB more. Above it traversals run in SQL.
const DefaultSnapshotMaxEdges = 2_000_000

// SetSnapshotLimit sets how many edges this Graph's traversals may hold in memory: 0 means
// DefaultSnapshotMaxEdges, a negative value always walks in SQL.
func (g *Graph) SetSnapshotLimit(maxEdges int) {
	if maxEdges == 0 {
		maxEdges = DefaultSnapshotMaxEdges
	}
	g.snapLimit = maxEdges
}

// snapshot is the edge table at one generation, laid out for BFS: asset ids index per-asset edge
// segments directly (rowids are dense); field and kind strings are interned, and rank orders their
// ids as their bytes order, so sorting a segment by ranks orders edges exactly as the SQL walk's
// ORDER BY does. A snapshot is never changed once published: a patch (patch.go) builds a new one
// that shares what it does not change.
type snapshot struct {
	gen   generationKey
	edges int
	// tooBig: the edge table held more edges than the loading Graph allowed, or ids too sparse to
	// index; only edges is meaningful.
	tooBig bool
	sparse bool // asset ids too sparse to index: never loaded, whatever the limit

	urns  []string // by asset id ("" for an unused id)
	strs  []string // interned field paths and kinds
	index map[string]int32
	added map[string]int32 // strings interned by patches since the full load (index is shared)
	rank  []int32          // rank[i]: the place of strs[i] in byte order
	lower []int32          // lower[i]: the id of lowerASCII(strs[i])
	empty int32            // the id of ""
	out   adjacency
	in    adjacency
	rowID []int64    // graph_edges.id by edge index
	ends  []edgeEnds // the edge's assets by edge index
	// loaded: rowID[:loaded] came from the full load, in id order; byID finds the edges patches
	// appended after them.
	loaded int
	byID   map[int64]int32
	// garbage counts halves of out.e and in.e no segment points at any more (patches leave them).
	garbage int
	patches int // since the full load
}

type edgeEnds struct{ from, to int32 }

// adjacency is one direction's edges grouped by their near end: edges of asset a are
// e[lo[a]:hi[a]], sorted by (far, near field, far field, kind, stale, row id). The full load lays
// segments out in asset order (lo and hi then share one offsets array); a patch appends the
// segments it rewrites.
type adjacency struct {
	lo, hi []int32
	e      []half
}

// half is an edge seen from its near end.
type half struct {
	far         int32
	nearF, farF int32
	kind        int32
	edge        int32 // index into rowID
	flags       uint8
}

const (
	flagStale      uint8 = 1 << iota
	flagPreserving       // the kind carries field paths over (schema_of, materializes)
	flagLinkedLive       // a live field-level edge joins the same two assets in this direction
	flagLinkedAny        // a field-level edge (live or stale) joins them
)

func (a *adjacency) of(asset int32) []half {
	if asset < 0 || int(asset) >= len(a.lo) {
		return nil
	}
	return a.e[a.lo[asset]:a.hi[asset]]
}

// lookup finds an interned string.
func (s *snapshot) lookup(v string) (int32, bool) {
	if id, ok := s.index[v]; ok {
		return id, true
	}
	id, ok := s.added[v]
	return id, ok
}

// snapshotCache holds one store's current snapshot for this process.
type snapshotCache struct {
	dialect store.Dialect
	mu      sync.Mutex // serialises loads: one process reads the edge table once per generation
	cur     *snapshot  // guarded by mu
}

// cacheFor finds the cache of a store. Callers build a Graph per request on a long-lived Store, so
// the adjacency must outlive the Graph: it is kept on the Store handle and dropped with it.
func cacheFor(st *store.Store) *snapshotCache {
	return st.Derived("graph.snapshot", func() any { return &snapshotCache{dialect: st.Dialect()} }).(*snapshotCache)
}

// generationKey says which state of the edge table a snapshot holds: graph_generation.n (bumped
// when edges go stale, come back or are deleted) and the highest edge id (raised by every new edge).
// Both only grow, n first: a delete bumps n, so a lower max id comes with a higher n. logFrom is
// graph_generation.logged_from: a snapshot at n ≥ logFrom can be patched up to this one from the
// change log (migration 0012).
type generationKey struct{ n, maxEdge, logFrom int64 }

func (k generationKey) before(o generationKey) bool {
	return k.n < o.n || (k.n == o.n && k.maxEdge < o.maxEdge)
}

// generation reads the store's generation inside tx: one row, and the last entry of the edge table's
// rowid b-tree.
func generation(ctx context.Context, tx *sql.Tx) (generationKey, error) {
	var k generationKey
	if err := tx.QueryRowContext(ctx, `SELECT n, (SELECT COALESCE(max(id), 0) FROM graph_edges), logged_from FROM graph_generation WHERE id = 1`).
		Scan(&k.n, &k.maxEdge, &k.logFrom); err != nil {
		return k, fmt.Errorf("graph: read generation: %w", err)
	}
	return k, nil
}

// get returns the snapshot at gen, patching the cached one or loading it through tx (whose reads
// are at gen) when the cached one is older. It returns nil when the edge table is over limit, or
// when the cache already holds a newer generation than tx sees (a write landed meanwhile: this call
// walks in SQL rather than replacing the newer snapshot with an older one).
func (c *snapshotCache) get(ctx context.Context, tx *sql.Tx, gen generationKey, limit int) (*snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.cur
	if s != nil && gen.before(s.gen) {
		return nil, nil
	}
	if s == nil || s.gen != gen || (s.tooBig && !s.sparse && s.edges <= limit) {
		next, err := patchSnapshot(ctx, tx, c.dialect, s, gen, limit)
		if err != nil {
			return nil, err
		}
		if next == nil {
			if next, err = loadSnapshot(ctx, tx, gen, limit); err != nil {
				return nil, err
			}
		}
		s, c.cur = next, next
	}
	if s.tooBig || s.edges > limit {
		// Loaded under a larger limit than this Graph's: this Graph still walks in SQL.
		return nil, nil
	}
	return s, nil
}

// drop forgets the snapshot (benchmarks use it to time a first traversal).
func (c *snapshotCache) drop() {
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
}

// edgeRec is one graph_edges row as the snapshot keeps it.
type edgeRec struct {
	id               int64
	from, to         int32
	fromF, toF, kind int32
	stale            bool
}

// edgeColumns reads an edge row in two integers for the four numbers (asset ids are below 2^31,
// checked by the callers): each column costs a conversion in the driver, and scanning is most of
// a load.
const edgeColumns = `id * 2 + CASE WHEN stale <> 0 THEN 1 ELSE 0 END, from_id * 4294967296 + to_id, from_field, to_field, kind`

// scanEdges reads rows of edgeColumns, interning strings with intern.
func scanEdges(rows *sql.Rows, maxAsset int64, intern func(sql.RawBytes) int32, each func(edgeRec)) error {
	defer rows.Close()
	var ff, tf, kind sql.RawBytes // reused: interning copies what it keeps
	for rows.Next() {
		var r edgeRec
		var idStale, ends int64
		if err := rows.Scan(&idStale, &ends, &ff, &tf, &kind); err != nil {
			return fmt.Errorf("graph: load adjacency: %w", err)
		}
		r.id, r.stale = idStale>>1, idStale&1 == 1
		from, to := ends>>32, ends&(1<<32-1)
		if from > maxAsset || to > maxAsset || from < 0 {
			return fmt.Errorf("graph: load adjacency: edge %d names an asset beyond %d", r.id, maxAsset)
		}
		r.from, r.to = int32(from), int32(to)
		r.fromF, r.toF, r.kind = intern(ff), intern(tf), intern(kind)
		each(r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("graph: load adjacency: %w", err)
	}
	return nil
}

// tooSparse says asset ids up to maxAsset are too sparse to index slices by (hand-made rowids).
func tooSparse(maxAsset int64, edges int) bool {
	return maxAsset >= 1<<31-1 || maxAsset > 4*int64(edges)+1<<20
}

// loadSnapshot reads the whole edge table through tx.
func loadSnapshot(ctx context.Context, tx *sql.Tx, gen generationKey, limit int) (*snapshot, error) {
	s := &snapshot{gen: gen}
	var maxAsset int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM graph_edges), (SELECT COALESCE(max(id), 0) FROM graph_assets)`).
		Scan(&s.edges, &maxAsset); err != nil {
		return nil, fmt.Errorf("graph: load adjacency: %w", err)
	}
	if tooSparse(maxAsset, s.edges) {
		s.tooBig, s.sparse = true, true
		return s, nil
	}
	if s.edges > limit {
		s.tooBig = true
		return s, nil
	}
	recs := make([]edgeRec, 0, s.edges)
	index := map[string]int32{"": 0}
	strs := []string{""}
	intern := func(b sql.RawBytes) int32 {
		if id, ok := index[string(b)]; ok {
			return id
		}
		v := string(b)
		id := int32(len(strs))
		index[v] = id
		strs = append(strs, v)
		return id
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+edgeColumns+` FROM graph_edges ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("graph: load adjacency: %w", err)
	}
	if err := scanEdges(rows, maxAsset, intern, func(r edgeRec) { recs = append(recs, r) }); err != nil {
		return nil, err
	}
	if len(recs) > limit {
		s.tooBig, s.edges = true, len(recs)
		return s, nil
	}
	s.edges = len(recs)
	// Add the lower-case form of every path, then renumber so id order is byte order.
	for _, v := range slices.Clone(strs) {
		if l := lowerASCII(v); l != v {
			intern(sql.RawBytes(l))
		}
	}
	sorted := slices.Clone(strs)
	slices.Sort(sorted)
	remap := make([]int32, len(strs))
	s.index = make(map[string]int32, len(sorted))
	for i, v := range sorted {
		s.index[v] = int32(i)
	}
	for old, v := range strs {
		remap[old] = s.index[v]
	}
	s.strs = sorted
	s.rank = make([]int32, len(sorted))
	s.lower = make([]int32, len(sorted))
	for i, v := range sorted {
		s.rank[i] = int32(i)
		s.lower[i] = s.index[lowerASCII(v)]
	}
	s.empty = s.index[""]
	s.rowID = make([]int64, len(recs), spare(len(recs)))
	s.ends = make([]edgeEnds, len(recs), spare(len(recs)))
	for i := range recs {
		r := &recs[i]
		r.fromF, r.toF, r.kind = remap[r.fromF], remap[r.toF], remap[r.kind]
		s.rowID[i] = r.id
		s.ends[i] = edgeEnds{from: r.from, to: r.to}
	}
	s.loaded = len(recs)
	build := func(upstream bool) adjacency {
		off := make([]int32, maxAsset+2)
		e := make([]half, len(recs), spare(len(recs)))
		for _, r := range recs {
			near := r.from
			if upstream {
				near = r.to
			}
			off[near+1]++
		}
		for i := 1; i < len(off); i++ {
			off[i] += off[i-1]
		}
		fill := slices.Clone(off)
		for i, r := range recs {
			near, h := s.half(r, int32(i), upstream)
			e[fill[near]] = h
			fill[near]++
		}
		for n := 0; n+1 < len(off); n++ {
			s.order(e[off[n]:off[n+1]])
		}
		return adjacency{lo: off[:len(off)-1], hi: off[1:], e: e}
	}
	s.out, s.in = build(false), build(true)
	recs = nil

	s.urns = make([]string, maxAsset+1)
	if err := s.readURNs(ctx, tx, 0, maxAsset); err != nil {
		return nil, err
	}
	return s, nil
}

// spare is the capacity a loaded slice of n gets, so the first patches append without copying.
func spare(n int) int { return n + n/32 + 256 }

// half is edge i (row r) seen from its near end: the from end downstream, the to end upstream.
func (s *snapshot) half(r edgeRec, i int32, upstream bool) (near int32, h half) {
	h = half{far: r.to, nearF: r.fromF, farF: r.toF, kind: r.kind, edge: i}
	near = r.from
	if upstream {
		near, h.far, h.nearF, h.farF = r.to, r.from, r.toF, r.fromF
	}
	if r.stale {
		h.flags |= flagStale
	}
	if EdgeKind(s.strs[r.kind]).FieldPreserving() {
		h.flags |= flagPreserving
	}
	return near, h
}

// order sorts one asset's segment as the SQL walk orders its edges and marks each (near, far)
// group that has a field-level edge, live or any.
func (s *snapshot) order(seg []half) {
	if len(seg) == 0 {
		return
	}
	rank := s.rank
	slices.SortFunc(seg, func(x, y half) int {
		switch {
		case x.far != y.far:
			return int(x.far - y.far)
		case x.nearF != y.nearF:
			return int(rank[x.nearF] - rank[y.nearF])
		case x.farF != y.farF:
			return int(rank[x.farF] - rank[y.farF])
		case x.kind != y.kind:
			return int(rank[x.kind] - rank[y.kind])
		case x.flags&flagStale != y.flags&flagStale:
			return int(x.flags&flagStale) - int(y.flags&flagStale)
		}
		return cmpInt64(s.rowID[x.edge], s.rowID[y.edge])
	})
	for i := 0; i < len(seg); {
		j := i
		var flags uint8
		for ; j < len(seg) && seg[j].far == seg[i].far; j++ {
			if seg[j].nearF != s.empty {
				flags |= flagLinkedAny
				if seg[j].flags&flagStale == 0 {
					flags |= flagLinkedLive
				}
			}
		}
		for k := i; k < j; k++ {
			seg[k].flags = seg[k].flags&^(flagLinkedAny|flagLinkedLive) | flags
		}
		i = j
	}
}

// readURNs fills s.urns for asset ids in [from, to].
func (s *snapshot) readURNs(ctx context.Context, tx *sql.Tx, from, to int64) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, urn FROM graph_assets WHERE id >= ? AND id <= ?`, from, to)
	if err != nil {
		return fmt.Errorf("graph: load adjacency: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var urn string
		if err := rows.Scan(&id, &urn); err != nil {
			return fmt.Errorf("graph: load adjacency: %w", err)
		}
		if id >= from && id <= to {
			s.urns[id] = urn
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("graph: load adjacency: %w", err)
	}
	return nil
}

// size estimates the bytes the snapshot holds (slices and strings, not map overhead).
func (s *snapshot) size() int {
	n := (len(s.out.e)+len(s.in.e))*int(unsafe.Sizeof(half{})) + (len(s.out.lo)+len(s.in.lo)+len(s.lower)+len(s.rank))*4 +
		len(s.rowID)*8 + len(s.ends)*int(unsafe.Sizeof(edgeEnds{}))
	for _, u := range s.urns {
		n += len(u) + int(unsafe.Sizeof(u))
	}
	for _, v := range s.strs {
		n += len(v) + int(unsafe.Sizeof(v))
	}
	return n
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lowerASCII folds A–Z only, as SQLite's lower() does without ICU: field paths match with the same
// folding on both walks.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
