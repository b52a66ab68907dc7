package graph

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
)

// The synthetic graph: assets in pipelines of 1,000; every asset has 5 outgoing edges to assets
// further down its own pipeline (4 field-level between random fields f0…f4, 1 table-level reads),
// so one lineage reaches a pipeline's worth of assets while the edge table holds every pipeline.
// DW_BENCH_EDGES sets the edge count (default 20,000; the reported figures use 1,000,000).
const (
	benchPipeline = 1000
	benchDegree   = 5
	benchFields   = 5
)

func benchEdges() int {
	if v, err := strconv.Atoi(os.Getenv("DW_BENCH_EDGES")); err == nil && v > 0 {
		return v
	}
	return 20000
}

func benchURN(i int) URN { return URN(fmt.Sprintf("warehouse:bench/T%07d", i)) }

// buildBenchGraph loads the synthetic graph through Upsert, in batches.
func buildBenchGraph(b *testing.B, edges int) *Graph {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "dw.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	g := New(st, time.Now)
	rng := rand.New(rand.NewSource(1))
	assets := edges / benchDegree
	batch := Batch{Source: "bench"}
	start := time.Now()
	for i := 0; i < assets; i++ {
		base := i - i%benchPipeline
		for d := 0; d < benchDegree; d++ {
			span := base + benchPipeline - 1 - i
			if span <= 0 {
				span = 1 // the pipeline's last asset feeds the next pipeline's first: keeps the edge count exact
			}
			j := i + 1 + rng.Intn(span)
			if j >= assets {
				j = (j - base) % assets
				if j == i {
					j = (i + 1) % assets
				}
			}
			e := Edge{From: FieldRef{Asset: benchURN(i)}, To: FieldRef{Asset: benchURN(j)}, Kind: EdgeReads}
			if d < benchDegree-1 {
				e.From.Path = "f" + strconv.Itoa(rng.Intn(benchFields))
				e.To.Path = "f" + strconv.Itoa(rng.Intn(benchFields))
				e.Kind = EdgeTransformation
			}
			batch.Edges = append(batch.Edges, e)
		}
		if len(batch.Edges) >= 50000 || i == assets-1 {
			if _, err := g.Upsert(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch.Edges = batch.Edges[:0]
		}
	}
	var n int
	if err := st.DB.QueryRowContext(ctx, `SELECT count(*) FROM graph_edges`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d edges over %d assets in %s", n, assets, time.Since(start).Round(time.Millisecond))
	return g
}

// loadAllAdjacency reads the whole edge table into memory once (outside the timed loop): the
// adjacency of the baseline, referenceBFS (the same rules, in memory, same depth limit).
func loadAllAdjacency(b *testing.B, db *sql.DB) map[int64][]adjEdge {
	rows, err := db.Query(`SELECT id, from_id, from_field, to_id, to_field, kind FROM graph_edges WHERE stale = 0`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	adj := map[int64][]adjEdge{}
	for rows.Next() {
		var near int64
		var e adjEdge
		var kind string
		if err := rows.Scan(&e.id, &near, &e.nearField, &e.other, &e.farField, &kind); err != nil {
			b.Fatal(err)
		}
		e.kind = EdgeKind(kind)
		adj[near] = append(adj[near], e)
	}
	return adj
}

func BenchmarkTraversal(b *testing.B) {
	edges := benchEdges()
	g := buildBenchGraph(b, edges)
	ctx := context.Background()
	// Start at the head of the middle pipeline.
	assets := edges / benchDegree
	head := (assets / 2) - (assets/2)%benchPipeline
	startField := []FieldRef{{Asset: benchURN(head), Path: "f0"}}
	startTable := []FieldRef{{Asset: benchURN(head)}}
	ids, err := g.assetIDs(ctx, startField)
	if err != nil {
		b.Fatal(err)
	}
	adj := loadAllAdjacency(b, g.st.DB)

	var reachedField, reachedTable int
	b.Run("blast_radius_field", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			br, err := g.BlastRadius(ctx, BlastRadiusRequest{Asset: startField[0].Asset, Fields: []string{"f0"}, MaxDepth: MaxDepthLimit})
			if err != nil {
				b.Fatal(err)
			}
			reachedField = br.Total
		}
		b.ReportMetric(float64(reachedField), "assets")
	})
	b.Run("lineage_field_with_evidence", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			lin, err := g.Traverse(ctx, startField, TraverseOptions{Direction: Downstream, MaxDepth: MaxDepthLimit, MaxHops: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(lin.Nodes)), "nodes")
			b.ReportMetric(float64(len(lin.Hops)), "hops")
		}
	})
	b.Run("lineage_table_nodes_only", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			lin, err := g.Traverse(ctx, startTable, TraverseOptions{Direction: Downstream, MaxDepth: MaxDepthLimit, SkipHops: true})
			if err != nil {
				b.Fatal(err)
			}
			reachedTable = len(lin.Nodes)
		}
		b.ReportMetric(float64(reachedTable), "nodes")
	})
	b.Run("baseline_memory_bfs_field", func(b *testing.B) {
		var n int
		for i := 0; i < b.N; i++ {
			n = len(referenceBFS(adj, nodeKey{id: ids[0], field: "f0"}, MaxDepthLimit))
		}
		b.ReportMetric(float64(n), "nodes")
	})
	b.Run("baseline_memory_bfs_table", func(b *testing.B) {
		var n int
		for i := 0; i < b.N; i++ {
			n = len(referenceBFS(adj, nodeKey{id: ids[0]}, MaxDepthLimit))
		}
		b.ReportMetric(float64(n), "nodes")
	})
}
