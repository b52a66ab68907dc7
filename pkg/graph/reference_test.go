package graph

// The reference traversal: the rules of Traverse applied to an in-memory adjacency. It is the
// baseline of BenchmarkTraversal and the oracle of TestSQLTraversalMatchesTheReference.

import (
	"context"
	"fmt"
	"math/rand"
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

// The SQL walk and the reference walk agree on random graphs with cycles, mixed field and table
// edges, field-preserving kinds and stale edges, in both directions.
func TestSQLTraversalMatchesTheReference(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(7))
	kinds := []EdgeKind{EdgeIdentity, EdgeAggregation, EdgeReads, EdgeMaterializes, EdgeSchemaOf, EdgeFilter}
	for round := 0; round < 4; round++ {
		g := newGraph(t, time.Now())
		const n = 40
		urn := func(i int) URN { return URN(fmt.Sprintf("kafka:topic/t%d", i)) }
		field := func() string { return []string{"", "a", "B", "c"}[rng.Intn(4)] }
		var edges []Edge
		for i := 0; i < 120; i++ {
			a, b := rng.Intn(n), rng.Intn(n)
			if a == b {
				continue
			}
			e := Edge{From: FieldRef{Asset: urn(a), Path: field()}, To: FieldRef{Asset: urn(b), Path: field()}, Kind: kinds[rng.Intn(len(kinds))]}
			edges = append(edges, e)
		}
		mustImport(t, g, Batch{Source: "s1", Edges: edges})
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
					id, err := g.assetIDs(ctx, []FieldRef{{Asset: urn(i)}})
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
					for _, f := range []string{"", "a", "b"} {
						want := referenceBFS(adj, nodeKey{id: sid, field: f}, 6)
						skip := rng.Intn(2) == 0 // both SQL paths: nodes only, and nodes with hops
						lin, err := g.Traverse(ctx, []FieldRef{{Asset: ids[sid], Path: f}}, TraverseOptions{Direction: dir, MaxDepth: 6, IncludeStale: stale, SkipHops: skip})
						if err != nil {
							t.Fatal(err)
						}
						got := map[string]int{}
						for _, nd := range lin.Nodes {
							got[string(nd.Node.Asset)+"#"+strings.ToLower(nd.Node.Path)] = nd.Depth
						}
						wantS := map[string]int{}
						for k, d := range want {
							wantS[string(ids[k.id])+"#"+k.field] = d
						}
						if fmt.Sprint(got) != fmt.Sprint(wantS) {
							t.Fatalf("round %d %s stale=%v from %s#%s:\nsql  %v\nref  %v", round, dir, stale, ids[sid], f, got, wantS)
						}
					}
				}
			}
		}
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
