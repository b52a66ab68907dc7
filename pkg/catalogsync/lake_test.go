package catalogsync_test

import (
	"context"
	"testing"

	"github.com/dataworkers/dw/pkg/catalogsync"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lake/laketest"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// TestLakeLinksTheTableflowTopicToItsIcebergTable syncs a real Iceberg catalog (SQL on SQLite)
// and finds the Tableflow table with its current fields, its location and the topic edge.
func TestLakeLinksTheTableflowTopicToItsIcebergTable(t *testing.T) {
	dir := t.TempDir()
	cfg := laketest.Config(dir, "lkc-s")
	l := laketest.Open(t, cfg)
	w := laketest.Create(t, l, "lkc-s", "orders", laketest.Long(1, "id"), laketest.String(2, "note"))
	w.Append(`[{"id":1,"note":"x"}]`)
	w.DropColumn("note")

	ctx := context.Background()
	st := storetest.Open(t)
	g := graph.New(st, nil)
	s := &catalogsync.Syncer{Config: &config.Config{Lake: cfg}, Store: st, Graph: g}
	if _, err := s.Run(ctx, catalogsync.Options{Systems: []string{catalogsync.SystemLake}}); err != nil {
		t.Fatal(err)
	}
	a, err := g.Get(ctx, graph.TableflowURN("orders"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Attrs["iceberg_table"] != "lkc-s.orders" || a.Attrs["snapshots"] != "1" || a.Attrs["location"] == "" {
		t.Fatalf("attrs = %v", a.Attrs)
	}
	if len(a.Fields) != 1 || a.Fields[0].Path != "id" {
		t.Fatalf("fields (the dropped one gone) = %+v", a.Fields)
	}
	lin, err := g.Upstream(ctx, []graph.FieldRef{graph.TableflowURN("orders").Field("")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range lin.Nodes {
		found = found || n.Node.Asset == graph.TopicURN("orders")
	}
	if !found {
		t.Fatalf("no topic upstream of the lake table: %+v", lin.Nodes)
	}
}
