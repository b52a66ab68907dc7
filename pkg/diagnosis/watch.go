package diagnosis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/metrics"
)

// Watch reads the monitoring a team runs and the lake the stream lands in, for the components on
// the failing asset's path. Nil readers are backends that are not configured; the diagnosis says so.
type Watch struct {
	// Lag reads consumer lag history of group (summed by topic) over [from, to).
	Lag func(ctx context.Context, group string, from, to time.Time) ([]metrics.Series, error)
	// LakeSchema reads the schema history of the lake table a tableflow: asset names.
	LakeSchema func(ctx context.Context, asset string) ([]LakeSchemaChange, error)
}

// LakeSchemaChange is one field added or dropped in a lake table, with the snapshot that first
// carried the new schema.
type LakeSchemaChange struct {
	Field      string
	Change     string // added or dropped
	Type       string
	SnapshotID int64
	At         time.Time
	ToSchema   int
}

// WithWatch adds the monitoring and lake readers to a Gatherer.
func (g *Gatherer) WithWatch(w Watch) *Gatherer {
	g.watch, g.watchSet = w, true
	return g
}

// ConnectGroup is the consumer group a Kafka Connect sink connector consumes with by default.
func ConnectGroup(connector string) string { return "connect-" + connector }

// readWatch adds lag around the onset for each sink connector on the path (as evidence) and the
// lake schema changes of each Tableflow table on the path (as schema changes the ranking weighs).
func (g *Gatherer) readWatch(ctx context.Context, in *Input, ev *Evidence, lin graph.Lineage, p path) {
	from, to := in.Onset.Add(-in.LookBack), g.now()
	if !g.watchSet {
		return
	}
	if len(p.connectors) > 0 && g.watch.Lag == nil {
		in.Unchecked = append(in.Unchecked, "consumer lag of the connectors on the path: no monitoring configured (set metrics.prometheus, metrics.confluent_metrics or metrics.datadog)")
	}
	for _, c := range p.connectors {
		if g.watch.Lag == nil {
			break
		}
		name := strings.TrimPrefix(c.ID(), "connector/")
		cctx, cancel := context.WithTimeout(ctx, g.bounds)
		series, err := g.watch.Lag(cctx, ConnectGroup(name), from, to)
		cancel()
		if err != nil {
			in.Unchecked = append(in.Unchecked, g.redact(fmt.Sprintf("consumer lag of %s: %v", c, err)))
			continue
		}
		if len(series) == 0 {
			in.Unchecked = append(in.Unchecked, fmt.Sprintf("consumer lag of %s: the monitoring has no series for group %s", c, ConnectGroup(name)))
		}
		for _, s := range series {
			o := metrics.AroundOnset(s, in.Onset)
			o.Summary = "load " + o.Summary + " (" + string(c) + ")"
			ev.Lag = append(ev.Lag, o)
		}
	}
	if len(p.tableflows) > 0 && g.watch.LakeSchema == nil {
		in.Unchecked = append(in.Unchecked, "schema history of the Tableflow tables on the path: no lake configured (set lake.catalog)")
	}
	for _, u := range p.tableflows {
		if g.watch.LakeSchema == nil {
			break
		}
		cctx, cancel := context.WithTimeout(ctx, g.bounds)
		changes, err := g.watch.LakeSchema(cctx, string(u))
		cancel()
		if err != nil {
			in.Unchecked = append(in.Unchecked, g.redact(fmt.Sprintf("schema history of %s: %v", u, err)))
			continue
		}
		onPathFields := map[string]bool{}
		for _, n := range lin.Nodes {
			if n.Node.Asset == u && n.Node.Path != "" {
				onPathFields[strings.ToLower(n.Node.Path)] = true
			}
		}
		for _, c := range changes {
			if c.At.After(in.Onset) || in.Onset.Sub(c.At) > in.LookBack {
				continue
			}
			fc := FieldChange{Path: c.Field, Change: "removed", OldName: c.Field, OldType: c.Type,
				Detail: fmt.Sprintf("dropped from lake table %s in snapshot %d", u, c.SnapshotID)}
			if c.Change == "added" {
				fc = FieldChange{Path: c.Field, Change: "added", NewName: c.Field, NewType: c.Type,
					Detail: fmt.Sprintf("added to lake table %s in snapshot %d", u, c.SnapshotID)}
			}
			sc := SchemaChange{Subject: string(u), Version: c.ToSchema, FirstSeen: c.At, Changes: []FieldChange{fc}, OnPath: []string{},
				SubjectUpstream: true, Distance: p.depth[u], Readers: []Reader{}, NewVersionShare: -1, FieldNullRate: -1, OlderNullRate: -1}
			if onPathFields[strings.ToLower(c.Field)] || strings.EqualFold(c.Field, in.Column) {
				sc.OnPath = append(sc.OnPath, c.Field)
				sc.readFields = append(sc.readFields, c.Field)
			}
			in.SchemaChanges = append(in.SchemaChanges, sc)
			ev.LakeSchema = append(ev.LakeSchema, fmt.Sprintf("field %s %s in %s at snapshot %d (%s)", c.Field, c.Change, u, c.SnapshotID, c.At.UTC().Format(time.RFC3339)))
		}
	}
}
