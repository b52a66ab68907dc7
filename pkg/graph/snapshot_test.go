package graph

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// location is one store that several handles open, standing for several processes: a SQLite file,
// or a PostgreSQL database when the suite runs on PostgreSQL.
type location struct {
	path string
	opts store.Options
}

func newLocation(t *testing.T) location {
	t.Helper()
	path, opts := storetest.Location(t)
	return location{path: path, opts: opts}
}

func openStore(t *testing.T, l location) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), l.path, l.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// atGeneration opens a read transaction on st (rolled back when the test ends) and reads the
// generation it sees.
func atGeneration(t *testing.T, st *store.Store) (*sql.Tx, generationKey) {
	t.Helper()
	ctx := context.Background()
	tx, err := st.ReadTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	k, err := generation(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	return tx, k
}

func readGeneration(t *testing.T, st *store.Store) generationKey {
	t.Helper()
	tx, k := atGeneration(t, st)
	tx.Rollback()
	return k
}

func nodeList(l Lineage) []string {
	var out []string
	for _, n := range l.Nodes {
		out = append(out, fmt.Sprintf("%s@%d", n.Node, n.Depth))
	}
	return out
}

// What a traversal follows bumps the generation; re-asserting the same edges (a periodic re-sync)
// and writes that leave edges alone do not.
func TestGenerationCountsEdgeChangesOnly(t *testing.T) {
	g := newGraph(t, time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC))
	b := Batch{Source: "s", Edges: []Edge{fe("kafka:topic/a#x", "kafka:topic/b#x", EdgeIdentity), fe("kafka:topic/b", "kafka:topic/c", EdgeReads)}}
	g0 := readGeneration(t, g.st)
	mustImport(t, g, b)
	g1 := readGeneration(t, g.st)
	if g1 == g0 {
		t.Fatal("new edges left the generation unchanged")
	}
	b.Edges[0].Transformation = "x + 0"
	mustImport(t, g, b)
	mustImport(t, g, Batch{Source: "other", Assets: []Asset{{URN: "kafka:topic/a", Owners: []string{"team-a"}}}})
	if got := readGeneration(t, g.st); got != g1 {
		t.Fatalf("re-asserting edges and describing assets moved the generation %d → %d", g1, got)
	}
	mustImport(t, g, Batch{Source: "s", Edges: b.Edges[:1]}) // b → c goes stale
	g2 := readGeneration(t, g.st)
	if g2 == g1 {
		t.Fatal("an edge going stale left the generation unchanged")
	}
	mustImport(t, g, b) // and comes back
	g3 := readGeneration(t, g.st)
	if g3 == g2 {
		t.Fatal("a stale edge coming back left the generation unchanged")
	}
	if _, err := g.MarkStale(context.Background(), "s", Seen{}); err != nil {
		t.Fatal(err)
	}
	g4 := readGeneration(t, g.st)
	if !g3.before(g4) {
		t.Fatalf("MarkStale moved the generation %v → %v", g3, g4)
	}
	// Nothing in pkg/graph deletes edges; the trigger covers a hand-made delete of the newest one.
	if err := g.st.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM graph_edges WHERE id = (SELECT max(id) FROM graph_edges)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if g5 := readGeneration(t, g.st); !g4.before(g5) {
		t.Fatalf("a delete moved the generation %v → %v", g4, g5)
	}
}

// Two Store handles on one file stand for two processes: each keeps its own adjacency, and a write
// through one is seen by the next traversal through the other, evidence included.
func TestSnapshotIsInvalidatedByAnotherStoreHandle(t *testing.T) {
	ctx := context.Background()
	path := newLocation(t)
	now := time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC)
	reader, writer := New(openStore(t, path), func() time.Time { return now }), New(openStore(t, path), func() time.Time { return now })
	sqlOnly := New(reader.st, func() time.Time { return now })
	sqlOnly.SetSnapshotLimit(-1)
	start := []FieldRef{{Asset: "kafka:topic/a", Path: "x"}}
	check := func(step string) Lineage {
		t.Helper()
		got, err := reader.Traverse(ctx, start, TraverseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := sqlOnly.Traverse(ctx, start, TraverseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sameLineage(t, step, got, want)
		if cacheFor(reader.st).cur == nil || cacheFor(reader.st).cur.gen != readGeneration(t, reader.st) {
			t.Fatalf("%s: the reader's adjacency is not at the store's generation", step)
		}
		return got
	}

	mustImport(t, writer, Batch{Source: "s", Edges: []Edge{fe("kafka:topic/a#x", "kafka:topic/b#x", EdgeIdentity)}})
	if l := check("first"); len(l.Nodes) != 1 {
		t.Fatalf("first: %v", nodeList(l))
	}
	mustImport(t, writer, Batch{Source: "s", Edges: []Edge{fe("kafka:topic/a#x", "kafka:topic/b#x", EdgeIdentity), fe("kafka:topic/b#x", "warehouse:db/C#X", EdgeTransformation)}})
	if l := check("edge added elsewhere"); len(l.Nodes) != 2 {
		t.Fatalf("edge added elsewhere: %v", nodeList(l))
	}
	// Evidence changes without a structural change are read fresh, not from the adjacency.
	now = now.Add(time.Hour)
	mustImport(t, writer, Batch{Source: "s", Edges: []Edge{fe("kafka:topic/a#x", "kafka:topic/b#x", EdgeIdentity),
		{From: FieldRef{Asset: "kafka:topic/b", Path: "x"}, To: FieldRef{Asset: "warehouse:db/C", Path: "X"}, Kind: EdgeTransformation, Transformation: "x * 2"}}})
	if l := check("evidence updated elsewhere"); l.Hops[1].Evidence[0].Transformation != "x * 2" || !l.Hops[1].Evidence[0].ObservedAt.Equal(now) {
		t.Fatalf("evidence updated elsewhere: %+v", l.Hops[1])
	}
	mustImport(t, writer, Batch{Source: "s", Edges: []Edge{fe("kafka:topic/a#x", "kafka:topic/b#x", EdgeIdentity)}})
	if l := check("edge gone stale elsewhere"); len(l.Nodes) != 1 {
		t.Fatalf("edge gone stale elsewhere: %v", nodeList(l))
	}
	if _, err := writer.MarkStale(ctx, "s", Seen{}); err != nil {
		t.Fatal(err)
	}
	if l := check("everything stale"); len(l.Nodes) != 0 {
		t.Fatalf("everything stale: %v", nodeList(l))
	}
}

// Over the limit, traversals walk in SQL and give the same answer.
func TestSnapshotLimitFallsBackToSQL(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC))
	var edges []Edge
	for i := 0; i < 10; i++ {
		edges = append(edges, fe(fmt.Sprintf("kafka:topic/t%d#v", i), fmt.Sprintf("kafka:topic/t%d#v", i+1), EdgeIdentity))
	}
	mustImport(t, g, Batch{Source: "s", Edges: edges})
	start := []FieldRef{{Asset: "kafka:topic/t0", Path: "v"}}
	opt, _ := normalize(start, TraverseOptions{})
	g.SetSnapshotLimit(9)
	if _, _, ok, err := g.traverseMemory(ctx, start, opt); ok || err != nil {
		t.Fatalf("10 edges held in memory under a limit of 9 (ok=%v err=%v)", ok, err)
	}
	small, err := g.Traverse(ctx, start, TraverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(small.Nodes) != 10 {
		t.Fatalf("over the limit: %v", nodeList(small))
	}
	g.SetSnapshotLimit(0) // the default holds them
	mem, sql := bothWalks(t, g, start, opt)
	sameLineage(t, "after raising the limit", mem, sql)
	sameLineage(t, "over the limit vs in memory", small, mem)
}

// A traversal racing a writer sees each write whole or not at all, and never goes back in time:
// the writer extends a chain one edge per transaction, so every answer is a prefix of it.
func TestTraversalDuringWritesSeesWholeWrites(t *testing.T) {
	ctx := context.Background()
	path := newLocation(t)
	reader, writer := New(openStore(t, path), time.Now), New(openStore(t, path), time.Now)
	link := func(i int) Edge {
		return fe(fmt.Sprintf("kafka:topic/c%d#v", i), fmt.Sprintf("kafka:topic/c%d#v", i+1), EdgeIdentity)
	}
	if _, err := writer.Upsert(ctx, Batch{Source: "s", Edges: []Edge{link(0)}}); err != nil {
		t.Fatal(err)
	}
	const links = 60
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := 1; i < links; i++ {
			if _, err := writer.Upsert(ctx, Batch{Source: "s", Edges: []Edge{link(i)}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0
			for finished := false; !finished; {
				select {
				case <-done:
					finished = true // one more read after the last write
				default:
				}
				l, err := reader.Traverse(ctx, []FieldRef{{Asset: "kafka:topic/c0", Path: "v"}}, TraverseOptions{MaxDepth: MaxDepthLimit})
				if err != nil {
					t.Error(err)
					return
				}
				for i, n := range l.Nodes {
					if n.Depth != i+1 || n.Node.Asset != URN(fmt.Sprintf("kafka:topic/c%d", i+1)) || len(l.Hops) != len(l.Nodes) || l.Hops[i].Depth != n.Depth {
						t.Errorf("not a prefix of the chain: %v (%d hops)", nodeList(l), len(l.Hops))
						return
					}
				}
				if len(l.Nodes) < last {
					t.Errorf("went back from %d to %d nodes", last, len(l.Nodes))
					return
				}
				last = len(l.Nodes)
			}
			if last != links && !t.Failed() {
				t.Errorf("after the last write: %d nodes, want %d", last, links)
			}
		}()
	}
	wg.Wait()
	// One more appended edge is patched into the reader's adjacency, not reloaded.
	before := cacheFor(reader.st).cur
	if _, err := writer.Upsert(ctx, Batch{Source: "s", Edges: []Edge{link(links)}}); err != nil {
		t.Fatal(err)
	}
	l, err := reader.Traverse(ctx, []FieldRef{{Asset: "kafka:topic/c0", Path: "v"}}, TraverseOptions{MaxDepth: MaxDepthLimit})
	if err != nil {
		t.Fatal(err)
	}
	if cur := cacheFor(reader.st).cur; len(l.Nodes) != links+1 || cur == before || cur.patches != before.patches+1 {
		t.Errorf("after one more edge: %d nodes (want %d), patches %d → %d", len(l.Nodes), links+1, before.patches, cur.patches)
	}
}

// A snapshot read through a transaction that already sees a newer generation is not replaced by an
// older one: the older reader walks in SQL instead.
func TestSnapshotCacheKeepsTheNewest(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	mustImport(t, g, Batch{Source: "s", Edges: []Edge{fe("kafka:topic/a", "kafka:topic/b", EdgeReads)}})
	c := cacheFor(g.st)
	tx, gen := atGeneration(t, g.st)
	c.mu.Lock()
	c.cur = &snapshot{gen: generationKey{n: gen.n + 1}}
	c.mu.Unlock()
	if s, err := c.get(ctx, tx, gen, DefaultSnapshotMaxEdges); s != nil || err != nil {
		t.Fatalf("older generation served from the cache: %v %v", s, err)
	}
}
