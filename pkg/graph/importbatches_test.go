package graph

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A view imported in batches ends exactly as the same view imported as one Batch: the same rows,
// the same marked stale (field-level edges into KeepFieldEdgesInto kept), the same counts; and a
// batch of another source fails the whole import, writing nothing.
func TestImportBatchesEqualsOneImport(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC)
	view := func(round int) Batch {
		b := Batch{Source: "s"}
		for i := 0; i < 30; i++ {
			if (i+round)%7 == 0 {
				continue // what this round no longer reports
			}
			u := URN(fmt.Sprintf("warehouse:db/T%d", i))
			b.Assets = append(b.Assets, Asset{URN: u, Owners: []string{fmt.Sprintf("team-%d", i%3)}})
			b.Fields = append(b.Fields, Field{Asset: u, Path: "x", Ordinal: 1})
			b.Edges = append(b.Edges, fe(fmt.Sprintf("warehouse:db/T%d#x", i), fmt.Sprintf("warehouse:db/T%d#x", i+1), EdgeIdentity),
				fe(fmt.Sprintf("warehouse:db/T%d", i), fmt.Sprintf("warehouse:db/T%d", i+2), EdgeReads))
		}
		if round == 1 {
			b.KeepFieldEdgesInto = []URN{"warehouse:db/T8", "warehouse:db/unknown"}
		}
		return b
	}
	dump := func(g *Graph) string {
		var out []string
		for _, q := range []string{
			`SELECT a.urn || ' ' || c.owners || ' ' || c.stale FROM graph_asset_claims c JOIN graph_assets a ON a.id = c.asset_id ORDER BY 1`,
			`SELECT a.urn || '#' || f.path || ' ' || f.stale FROM graph_fields f JOIN graph_assets a ON a.id = f.asset_id ORDER BY 1`,
			`SELECT fa.urn || '#' || e.from_field || ' ' || ta.urn || '#' || e.to_field || ' ' || e.kind || ' ' || e.stale FROM graph_edges e
				JOIN graph_assets fa ON fa.id = e.from_id JOIN graph_assets ta ON ta.id = e.to_id ORDER BY 1`,
		} {
			rows, err := g.st.DB.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
			rows.Close()
		}
		return strings.Join(out, "\n")
	}
	one, batched := newGraph(t, at), newGraph(t, at)
	for round := 0; round < 3; round++ {
		b := view(round)
		want := mustImport(t, one, b)
		got, err := batched.ImportBatches(ctx, "s", time.Time{}, func(put func(Batch) error) error {
			for i := 0; i < len(b.Edges); i += 7 {
				part := Batch{Edges: b.Edges[i:min(i+7, len(b.Edges))]}
				if i == 0 {
					part.KeepFieldEdgesInto = b.KeepFieldEdgesInto
				}
				if i/7 < len(b.Assets) {
					part.Assets, part.Fields = b.Assets[i/7:i/7+1], b.Fields[i/7:i/7+1]
				}
				if err := put(part); err != nil {
					return err
				}
			}
			return put(Batch{Assets: b.Assets[min(len(b.Edges)/7+1, len(b.Assets)):], Fields: b.Fields[min(len(b.Edges)/7+1, len(b.Fields)):]})
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: batched %+v, one batch %+v", round, got, want)
		}
		if round > 0 && want.Stale.Edges == 0 {
			t.Fatalf("round %d marked nothing stale", round)
		}
		if a, b := dump(batched), dump(one); a != b {
			t.Fatalf("round %d: batched import left\n%s\none batch left\n%s", round, a, b)
		}
	}
	before := dump(batched)
	_, err := batched.ImportBatches(ctx, "s", time.Time{}, func(put func(Batch) error) error {
		if err := put(Batch{Edges: []Edge{fe("warehouse:db/new", "warehouse:db/T1", EdgeReads)}}); err != nil {
			return err
		}
		return put(Batch{Source: "other", Edges: []Edge{fe("warehouse:db/a", "warehouse:db/b", EdgeReads)}})
	})
	if err == nil || !strings.Contains(err.Error(), "other") {
		t.Fatalf("a batch of another source: %v", err)
	}
	if after := dump(batched); after != before {
		t.Fatal("a failed import wrote")
	}
}
