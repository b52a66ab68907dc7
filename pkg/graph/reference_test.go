package graph

// The reference traversal: the rules of Traverse applied to an in-memory adjacency. It is the
// baseline of BenchmarkTraversal and the oracle of TestTraversalMatchesTheReference.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

type nodeKey struct {
	id    int64
	field string // lower-cased; "" for the whole asset
}

type adjEdge struct {
	id                  int64
	other               int64 // the far end
	nearField, farField string
	kind                EdgeKind
}

// expand applies the traversal rules (see Traverse) to the edges of k's asset, calling emit for
// every node one step away.
func expand(k nodeKey, kDisplay string, edges []adjEdge, emit func(to nodeKey, display string, e adjEdge)) {
	var fieldLinked map[int64]bool
	if k.field != "" {
		for _, e := range edges {
			if e.nearField != "" {
				if fieldLinked == nil {
					fieldLinked = map[int64]bool{}
				}
				fieldLinked[e.other] = true
			}
		}
	}
	for _, e := range edges {
		switch {
		case k.field == "":
			emit(nodeKey{id: e.other}, "", e)
		case e.nearField != "":
			if strings.EqualFold(e.nearField, k.field) {
				emit(nodeKey{id: e.other, field: strings.ToLower(e.farField)}, e.farField, e)
			}
		case e.kind.FieldPreserving():
			emit(nodeKey{id: e.other, field: k.field}, kDisplay, e)
		case !fieldLinked[e.other]:
			emit(nodeKey{id: e.other, field: strings.ToLower(e.farField)}, e.farField, e)
		}
	}
}

func (g *Graph) loadAdjacency(ctx context.Context, ids []int64, dir Direction, includeStale bool, adj map[int64][]adjEdge) error {
	q := `SELECT id, from_id, from_field, to_id, to_field, kind FROM graph_edges WHERE from_id IN (%s)`
	if dir == Upstream {
		q = `SELECT id, to_id, to_field, from_id, from_field, kind FROM graph_edges WHERE to_id IN (%s)`
	}
	if !includeStale {
		q += ` AND stale = 0`
	}
	for _, chunk := range chunks(ids, 500) {
		for _, id := range chunk {
			adj[id] = nil // loaded, even when it has no edges
		}
		rows, err := g.st.DB.QueryContext(ctx, fmt.Sprintf(q, placeholders(len(chunk))), int64Args(chunk)...)
		if err != nil {
			return fmt.Errorf("graph: load edges: %w", err)
		}
		for rows.Next() {
			var near int64
			var e adjEdge
			var kind string
			if err := rows.Scan(&e.id, &near, &e.nearField, &e.other, &e.farField, &kind); err != nil {
				rows.Close()
				return err
			}
			e.kind = EdgeKind(kind)
			adj[near] = append(adj[near], e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// referenceBFS returns every node reached from start with its BFS depth.
func referenceBFS(adj map[int64][]adjEdge, start nodeKey, maxDepth int) map[nodeKey]int {
	depth := map[nodeKey]int{start: 0}
	frontier := []nodeKey{start}
	for d := 1; len(frontier) > 0 && d <= maxDepth; d++ {
		var next []nodeKey
		for _, k := range frontier {
			expand(k, k.field, adj[k.id], func(to nodeKey, _ string, _ adjEdge) {
				if _, ok := depth[to]; !ok {
					depth[to] = d
					next = append(next, to)
				}
			})
		}
		frontier = next
	}
	delete(depth, start)
	return depth
}

// Both walks (in memory and in SQL) agree with the reference walk on random graphs with cycles,
// mixed field and table edges, field-preserving kinds, case variants of a field, two sources of
// evidence and stale edges, in both directions; and with each other on everything they return:
// order, Via, spelling, hops with their evidence, the Systems filter and both kinds of truncation.
func TestTraversalMatchesTheReference(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(7))
	kinds := []EdgeKind{EdgeIdentity, EdgeAggregation, EdgeReads, EdgeMaterializes, EdgeSchemaOf, EdgeFilter}
	for round := 0; round < 4; round++ {
		g := newGraph(t, time.Now())
		const n = 40
		urn := func(i int) URN {
			if i%3 == 0 {
				return URN(fmt.Sprintf("warehouse:db/T%d", i))
			}
			return URN(fmt.Sprintf("kafka:topic/t%d", i))
		}
		field := func() string { return []string{"", "a", "B", "b", "c"}[rng.Intn(5)] }
		var edges, other []Edge
		for i := 0; i < 120; i++ {
			a, b := rng.Intn(n), rng.Intn(n)
			if a == b {
				continue
			}
			e := Edge{From: FieldRef{Asset: urn(a), Path: field()}, To: FieldRef{Asset: urn(b), Path: field()}, Kind: kinds[rng.Intn(len(kinds))],
				Transformation: fmt.Sprintf("expr %d", i)}
			edges = append(edges, e)
			if rng.Intn(4) == 0 {
				e.Transformation = "as seen by s3"
				other = append(other, e) // the same edge asserted by another source: two evidence rows
			}
		}
		mustImport(t, g, Batch{Source: "s1", Edges: edges})
		mustImport(t, g, Batch{Source: "s3", Edges: other})
		// Claims for the blast radius to merge: owners, tags, criticality, a schedule.
		mustImport(t, g, Batch{Source: "catalog", Assets: []Asset{
			{URN: urn(1), Owners: []string{"team-a"}, Tags: []string{TagPII}, Criticality: "high"},
			{URN: urn(2), Owners: []string{"team-b"}, Schedule: "@daily"},
			{URN: urn(3), Kind: KindWarehouseTable, Name: "three", Owners: []string{"team-a"}},
		}})
		sqlOnly := New(g.st, g.now)
		sqlOnly.SetSnapshotLimit(-1)
		// A second source whose edges then vanish: stale.
		var gone []Edge
		for i := 0; i < 20; i++ {
			a, b := rng.Intn(n), rng.Intn(n)
			if a != b {
				gone = append(gone, Edge{From: FieldRef{Asset: urn(a), Path: field()}, To: FieldRef{Asset: urn(b)}, Kind: EdgeReads})
			}
		}
		mustImport(t, g, Batch{Source: "s2", Edges: gone})
		mustImport(t, g, Batch{Source: "s2"})
		for _, dir := range []Direction{Downstream, Upstream} {
			for _, stale := range []bool{false, true} {
				adj := map[int64][]adjEdge{}
				all := make([]int64, 0, n)
				ids := map[int64]URN{}
				for i := 0; i < n; i++ {
					id, err := assetIDs(ctx, g.st.DB, []FieldRef{{Asset: urn(i)}})
					if err != nil {
						continue
					}
					all = append(all, id[0])
					ids[id[0]] = urn(i)
				}
				if err := g.loadAdjacency(ctx, all, dir, stale, adj); err != nil {
					t.Fatal(err)
				}
				for _, sid := range all[:10] {
					for _, f := range []string{"", "a", "b", "B"} {
						start := []FieldRef{{Asset: ids[sid], Path: f}}
						opt := TraverseOptions{Direction: dir, MaxDepth: 6, IncludeStale: stale, SkipHops: rng.Intn(2) == 0}
						want := referenceBFS(adj, nodeKey{id: sid, field: strings.ToLower(f)}, 6)
						wantS := map[string]int{}
						for k, d := range want {
							wantS[string(ids[k.id])+"#"+k.field] = d
						}
						mem, sql := bothWalks(t, g, start, opt)
						got := map[string]int{}
						for _, nd := range mem.Nodes {
							got[string(nd.Node.Asset)+"#"+strings.ToLower(nd.Node.Path)] = nd.Depth
						}
						if fmt.Sprint(got) != fmt.Sprint(wantS) {
							t.Fatalf("round %d %s stale=%v from %s#%s:\nmem  %v\nref  %v", round, dir, stale, ids[sid], f, got, wantS)
						}
						sameLineage(t, fmt.Sprintf("round %d %+v from %v", round, opt, start), mem, sql)
						if dir == Downstream {
							req := BlastRadiusRequest{Asset: ids[sid], IncludeStale: stale, MaxDepth: 6}
							if f != "" {
								req.Fields = []string{f}
							}
							a, errA := g.BlastRadius(ctx, req)
							b, errB := sqlOnly.BlastRadius(ctx, req)
							if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
								t.Fatalf("blast radius %+v differs:\nmemory %+v %v\nsql    %+v %v", req, a, errA, b, errB)
							}
						}

						// The rest only compares the two walks: several starts (one repeated in
						// another spelling), shallow depths, few hops, one system.
						opt = TraverseOptions{Direction: dir, MaxDepth: 1 + rng.Intn(3), IncludeStale: stale, MaxHops: 1 + rng.Intn(30)}
						if rng.Intn(2) == 0 {
							opt.Systems = []string{"warehouse"}
						}
						other := ids[all[rng.Intn(len(all))]]
						start = append(start, FieldRef{Asset: other, Path: "C"}, FieldRef{Asset: ids[sid], Path: strings.ToUpper(f)})
						mem, sql = bothWalks(t, g, start, opt)
						sameLineage(t, fmt.Sprintf("round %d %+v from %v", round, opt, start), mem, sql)
					}
				}
			}
		}
	}
}

// bothWalks runs start through the in-memory walk and the SQL walk.
func bothWalks(t *testing.T, g *Graph, start []FieldRef, opt TraverseOptions) (mem, sql Lineage) {
	t.Helper()
	ctx := context.Background()
	opt, err := normalize(start, opt)
	if err != nil {
		t.Fatal(err)
	}
	mem, memIDs, ok, err := g.traverseMemory(ctx, start, opt)
	if err != nil || !ok {
		t.Fatalf("memory walk: ok=%v err=%v", ok, err)
	}
	sql, sqlIDs, err := g.traverseSQL(ctx, start, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(memIDs, sqlIDs) || len(memIDs) != len(mem.Nodes) {
		t.Fatalf("node asset ids differ: memory %v, sql %v", memIDs, sqlIDs)
	}
	return mem, sql
}

func sameLineage(t *testing.T, what string, mem, sql Lineage) {
	t.Helper()
	if !reflect.DeepEqual(mem, sql) {
		a, _ := json.MarshalIndent(mem, "", " ")
		b, _ := json.MarshalIndent(sql, "", " ")
		t.Fatalf("%s: the walks differ\nmemory: %s\nsql:    %s", what, a, b)
	}
}

// chunks splits ids so an IN list stays under SQLite's variable limit.
func chunks(ids []int64, size int) [][]int64 {
	var out [][]int64
	for len(ids) > size {
		out = append(out, ids[:size])
		ids = ids[size:]
	}
	if len(ids) > 0 {
		out = append(out, ids)
	}
	return out
}

func int64Args(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
