package catalogsync

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lake"
)

// SystemLake is the Iceberg catalog Tableflow lands tables in.
const SystemLake = "lake"

// systems is the harvest order: AllSystems, and the lake (after Tableflow, whose tables it
// completes) when it is configured or asked for — an estate without a lake is not "skipped" it.
func (s *Syncer) systems(want map[string]bool) []string {
	if s.Config.Lake == nil && !want[SystemLake] {
		return AllSystems
	}
	out := slices.Clone(AllSystems)
	i := slices.Index(out, SystemTableflow) + 1
	return slices.Insert(out, i, SystemLake)
}

// MaxLakeTables bounds one lake harvest.
const MaxLakeTables = 5000

// lake links each Tableflow topic to its Iceberg table from the catalog itself: the table's fields
// from its current schema, where it lives, and a topic → table edge, so the graph reaches the
// table without going through a warehouse that reads it.
func (r *run) lake(ctx context.Context) ([]graph.Batch, []string, error) {
	cfg := r.s.Config.Lake
	if cfg == nil {
		return nil, nil, errSkipped{"lake.catalog"}
	}
	l, err := lake.Open(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	ids, err := l.Tables(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	if len(ids) > MaxLakeTables {
		warnings = append(warnings, fmt.Sprintf("the lake namespace %s has %d tables; only the first %d were synced", cfg.Namespace, len(ids), MaxLakeTables))
		ids = ids[:MaxLakeTables]
	}
	b := graph.Batch{Source: "sync:lake"}
	for _, id := range ids {
		topic := topicOf(id[len(id)-1], r.topics)
		tbl, err := l.Load(ctx, "iceberg:"+strings.Join(id, "."))
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		u := graph.TableflowURN(topic)
		attrs := map[string]string{"iceberg_table": strings.Join(id, "."), "location": tbl.Location(), "metadata_location": tbl.MetadataLocation(),
			"catalog": cfg.Catalog, "snapshots": fmt.Sprint(len(tbl.Metadata().Snapshots()))}
		if s := tbl.CurrentSnapshot(); s != nil {
			attrs["last_commit"] = time.UnixMilli(s.TimestampMs).UTC().Format(time.RFC3339)
		}
		b.Assets = append(b.Assets, graph.Asset{URN: u, Kind: graph.KindTableflowTable, Name: topic, Attrs: attrs})
		for i, f := range tbl.Schema().Fields() {
			b.Fields = append(b.Fields, graph.Field{Asset: u, Path: f.Name, Type: f.Type.String(), Nullable: !f.Required, Ordinal: i + 1})
		}
		if r.topics == nil || r.topics[topic] {
			b.Edges = append(b.Edges, graph.Edge{From: graph.TopicURN(topic).Field(""), To: u.Field(""), Kind: graph.EdgeMaterializes,
				Transformation: "Tableflow lands topic " + topic + " as Iceberg table " + strings.Join(id, ".")})
		}
	}
	return []graph.Batch{b}, warnings, nil
}

// topicOf finds the harvested topic Tableflow named table after ('-' becomes '_'); without a Kafka
// harvest, or with no match, the table's own name is taken as the topic's.
func topicOf(table string, topics map[string]bool) string {
	if topics[table] {
		return table
	}
	var found []string
	for t := range topics {
		if lake.TableflowName(t) == table {
			found = append(found, t)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return table
}
