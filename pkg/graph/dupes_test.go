package graph

import (
	"context"
	"testing"
	"time"
)

func TestLastWinsKeepsTheFirstPlaceAndTheLastValues(t *testing.T) {
	rows := [][]any{{1, "a", "x"}, {2, "b", "y"}, {1, "a", "z"}, {3, "c", "w"}, {2, "b", "v"}}
	got := lastWins(rows, 2)
	want := [][]any{{1, "a", "z"}, {2, "b", "v"}, {3, "c", "w"}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	}
	if u := [][]any{{1, "a"}, {1, "b"}}; len(lastWins(u, 2)) != 2 {
		t.Fatal("distinct keys merged")
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
