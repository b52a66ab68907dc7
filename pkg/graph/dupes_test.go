package graph

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestLastWinsKeepsTheFirstPlaceAndTheLastValues(t *testing.T) {
	keys := []string{"a", "b", "a", "c", "b"}
	got := lastWins(len(keys), func(i int) string { return keys[i] })
	if want := []int{2, 4, 3}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := lastWins(2, func(i int) int { return i }); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("distinct keys merged: %v", got)
	}
	if got := lastWins(0, func(i int) int { return i }); len(got) != 0 {
		t.Fatalf("no rows gave %v", got)
	}
}

// A batch that names one asset, field or edge twice is recorded once, with the last values, on
// every engine (PostgreSQL refuses an upsert that touches one row twice).
func TestABatchWithDuplicatesIsRecordedOnceWithTheLastValues(t *testing.T) {
	g := newGraph(t, time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC))
	ctx := context.Background()
	b := Batch{Source: "s",
		Assets: []Asset{{URN: "kafka:topic/a", Description: "first"}, {URN: "kafka:topic/a", Description: "last"}},
		Fields: []Field{{Asset: "kafka:topic/a", Path: "x", Type: "int"}, {Asset: "kafka:topic/a", Path: "x", Type: "long"}},
		Edges: []Edge{
			{From: FieldRef{Asset: "kafka:topic/a"}, To: FieldRef{Asset: "kafka:topic/b"}, Kind: EdgeReads, Transformation: "first"},
			{From: FieldRef{Asset: "kafka:topic/a"}, To: FieldRef{Asset: "kafka:topic/b"}, Kind: EdgeReads, Transformation: "last"},
		}}
	for _, write := range []func(context.Context, Batch) (ImportResult, error){g.Upsert, g.Import} {
		if _, err := write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	var desc, typ, tr string
	var edges int
	if err := g.st.DB.QueryRow(`SELECT c.description, f.type, e.transformation, (SELECT count(*) FROM graph_edges)
		FROM graph_asset_claims c JOIN graph_fields f ON f.asset_id = c.asset_id JOIN graph_edges e ON e.from_id = c.asset_id`).
		Scan(&desc, &typ, &tr, &edges); err != nil {
		t.Fatal(err)
	}
	if desc != "last" || typ != "long" || tr != "last" || edges != 1 {
		t.Fatalf("description %q, type %q, transformation %q, %d edges", desc, typ, tr, edges)
	}
}
