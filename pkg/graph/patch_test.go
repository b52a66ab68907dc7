package graph

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// segments lists a snapshot's edges per asset and direction by what they mean (strings, not ids),
// in walk order: two snapshots of one generation list the same whatever their ids and layout.
func segments(s *snapshot) []string {
	var out []string
	for _, dir := range []struct {
		name string
		a    *adjacency
	}{{"out", &s.out}, {"in", &s.in}} {
		for asset := int32(0); int(asset) < len(dir.a.lo); asset++ {
			for _, h := range dir.a.of(asset) {
				out = append(out, fmt.Sprintf("%s %s[%d]: %s→%s#%s kind=%s flags=%b row=%d", dir.name, s.urns[asset], asset,
					s.strs[h.nearF], s.urns[h.far], s.strs[h.farF], s.strs[h.kind], h.flags, s.rowID[h.edge]))
			}
		}
	}
	return out
}

// freshSnapshot loads st's edge table afresh, at the generation it has now.
func freshSnapshot(t *testing.T, g *Graph) *snapshot {
	t.Helper()
	tx, gen := atGeneration(t, g.st)
	defer tx.Rollback()
	s, err := loadSnapshot(context.Background(), tx, gen, DefaultSnapshotMaxEdges)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A reader's adjacency, patched step by step from another handle's writes (new edges with new
// assets and new spellings of fields, edges gone stale and revived, MarkStale, a hand-made delete
// of the newest edge and its id reused), always holds what a fresh load holds, and walks exactly
// as the SQL walk does; small changes are patched, not reloaded.
func TestPatchedSnapshotEqualsAFreshLoad(t *testing.T) {
	ctx := context.Background()
	path := newLocation(t)
	now := time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	reader, writer := New(openStore(t, path), clock), New(openStore(t, path), clock)
	sqlOnly := New(reader.st, clock)
	sqlOnly.SetSnapshotLimit(-1)
	rng := rand.New(rand.NewSource(11))
	kinds := []EdgeKind{EdgeIdentity, EdgeAggregation, EdgeReads, EdgeMaterializes, EdgeSchemaOf}
	assets := 12
	urn := func(i int) URN {
		if i%2 == 0 {
			return URN(fmt.Sprintf("warehouse:db/T%d", i))
		}
		return URN(fmt.Sprintf("kafka:topic/t%d", i))
	}
	fields := []string{"", "a", "B", "b"}
	randomEdge := func() Edge {
		a, b := rng.Intn(assets), rng.Intn(assets)
		for a == b {
			b = rng.Intn(assets)
		}
		return Edge{From: FieldRef{Asset: urn(a), Path: fields[rng.Intn(len(fields))]}, To: FieldRef{Asset: urn(b), Path: fields[rng.Intn(len(fields))]},
			Kind: kinds[rng.Intn(len(kinds))]}
	}
	sources := map[string][]Edge{}
	for _, src := range []string{"s1", "s2", "s3"} {
		for i := 0; i < 25; i++ {
			sources[src] = append(sources[src], randomEdge())
		}
		mustImport(t, writer, Batch{Source: src, Edges: sources[src]})
	}
	compare := func(step string) {
		t.Helper()
		for _, dir := range []Direction{Downstream, Upstream} {
			for _, stale := range []bool{false, true} {
				for i := 0; i < assets; i += 3 {
					start := []FieldRef{{Asset: urn(i), Path: fields[rng.Intn(len(fields))]}}
					if _, err := assetIDs(ctx, reader.st.DB, start); err != nil {
						continue
					}
					opt := TraverseOptions{Direction: dir, IncludeStale: stale, MaxDepth: 5}
					mem, err := reader.Traverse(ctx, start, opt)
					if err != nil {
						t.Fatal(err)
					}
					want, err := sqlOnly.Traverse(ctx, start, opt)
					if err != nil {
						t.Fatal(err)
					}
					sameLineage(t, fmt.Sprintf("%s: %+v from %v", step, opt, start), mem, want)
				}
			}
		}
		cur := cacheFor(reader.st).cur
		if cur == nil || cur.gen != readGeneration(t, reader.st) {
			t.Fatalf("%s: the reader's adjacency is not at the store's generation", step)
		}
		got, want := segments(cur), segments(freshSnapshot(t, reader))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: patched adjacency differs from a fresh load\npatched:\n%s\nfresh:\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	compare("loaded")
	loads := 0
	for step := 0; step < 40; step++ {
		before := cacheFor(reader.st).cur
		var what string
		switch rng.Intn(6) {
		case 0: // new edges, new assets and a field spelling never seen
			assets++
			e := randomEdge()
			e.To = FieldRef{Asset: urn(assets - 1), Path: fmt.Sprintf("New%d", step)}
			src := []string{"s1", "s2", "s3"}[rng.Intn(3)]
			sources[src] = append(sources[src], e, randomEdge())
			mustImport(t, writer, Batch{Source: src, Edges: sources[src]})
			what = "edges added"
		case 1: // a complete import that drops some edges: stale
			src := []string{"s1", "s2", "s3"}[rng.Intn(3)]
			keep := sources[src][:0:0]
			for _, e := range sources[src] {
				if rng.Intn(4) != 0 {
					keep = append(keep, e)
				}
			}
			sources[src] = keep
			mustImport(t, writer, Batch{Source: src, Edges: keep})
			what = "edges gone stale"
		case 2: // a source re-asserts everything it ever said: revived
			src := []string{"s1", "s2", "s3"}[rng.Intn(3)]
			var all []Edge
			rows, err := writer.st.DB.Query(`SELECT fa.urn, e.from_field, ta.urn, e.to_field, e.kind FROM graph_edges e
				JOIN graph_assets fa ON fa.id = e.from_id JOIN graph_assets ta ON ta.id = e.to_id WHERE e.source = ?`, src)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var e Edge
				var from, to, kind string
				if err := rows.Scan(&from, &e.From.Path, &to, &e.To.Path, &kind); err != nil {
					t.Fatal(err)
				}
				e.From.Asset, e.To.Asset, e.Kind = URN(from), URN(to), EdgeKind(kind)
				all = append(all, e)
			}
			rows.Close()
			sources[src] = all
			if _, err := writer.Upsert(ctx, Batch{Source: src, Edges: all}); err != nil {
				t.Fatal(err)
			}
			what = "edges revived"
		case 3:
			if _, err := writer.MarkStale(ctx, "s3", Seen{}); err != nil {
				t.Fatal(err)
			}
			what = "MarkStale"
		case 4: // nothing in pkg/graph deletes; a hand-made delete of the newest edge frees its id for reuse
			if err := writer.st.Write(ctx, func(tx *sql.Tx) error {
				_, err := tx.Exec(`DELETE FROM graph_edges WHERE id = (SELECT max(id) FROM graph_edges)`)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			e := randomEdge()
			e.Transformation = "after a delete"
			if _, err := writer.Upsert(ctx, Batch{Source: "s4", Edges: []Edge{e}}); err != nil {
				t.Fatal(err)
			}
			what = "newest edge deleted, its id reused"
		case 5: // evidence only: the generation stays
			now = now.Add(time.Minute)
			mustImport(t, writer, Batch{Source: "s1", Edges: sources["s1"]})
			what = "re-asserted"
		}
		compare(fmt.Sprintf("step %d (%s)", step, what))
		if after := cacheFor(reader.st).cur; after != before && after.patches == 0 {
			loads++
		}
	}
	if p := cacheFor(reader.st).cur.patches; p < 20 {
		t.Errorf("the adjacency was patched %d times over 40 steps", p)
	}
	if loads > 0 {
		t.Errorf("%d of 40 small changes reloaded the whole edge table instead of patching it", loads)
	}
}

// A reader whose adjacency is older than the change log keeps, or older than a write too large to
// log, loads afresh, and still sees every change.
func TestSnapshotOlderThanTheLogIsLoadedAfresh(t *testing.T) {
	ctx := context.Background()
	path := newLocation(t)
	reader, writer := New(openStore(t, path), time.Now), New(openStore(t, path), time.Now)
	link := func(i int) Edge {
		return fe(fmt.Sprintf("kafka:topic/c%d#v", i), fmt.Sprintf("kafka:topic/c%d#v", i+1), EdgeIdentity)
	}
	var chain []Edge
	for i := 0; i < 5; i++ {
		chain = append(chain, link(i))
	}
	mustImport(t, writer, Batch{Source: "s", Edges: chain})
	start := []FieldRef{{Asset: "kafka:topic/c0", Path: "v"}}
	walk := func() int {
		t.Helper()
		l, err := reader.Traverse(ctx, start, TraverseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Nodes)
	}
	if n := walk(); n != 5 {
		t.Fatalf("chain of 5: reached %d", n)
	}
	first := cacheFor(reader.st).cur
	// More generations than the log keeps: the last import leaves the chain cut after c2.
	for i := 0; i <= changeLogWindow; i++ {
		mustImport(t, writer, Batch{Source: "s", Edges: chain[:2+i%2]})
	}
	if n := walk(); n != 2+changeLogWindow%2 {
		t.Fatalf("after %d generations: reached %d", changeLogWindow+1, n)
	}
	if cur := cacheFor(reader.st).cur; cur == first || cur.patches != 0 {
		t.Fatal("an adjacency older than the change log was patched")
	}
	var logged int
	if err := reader.st.DB.QueryRow(`SELECT count(DISTINCT gen) FROM graph_edge_changes`).Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if logged > changeLogWindow {
		t.Fatalf("the change log keeps %d generations, want at most %d", logged, changeLogWindow)
	}
	// A write the log does not list (logged false) moves logged_from past every older adjacency.
	loadedAt := cacheFor(reader.st).cur
	if err := writer.st.Write(ctx, func(tx *sql.Tx) error { return bumpGeneration(ctx, tx, writer.st.Dialect(), nil, false) }); err != nil {
		t.Fatal(err)
	}
	walk()
	if cur := cacheFor(reader.st).cur; cur == loadedAt || cur.patches != 0 {
		t.Fatal("an adjacency older than an unlogged write was patched")
	}
}
