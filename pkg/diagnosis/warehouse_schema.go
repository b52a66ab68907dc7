package diagnosis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/quality"
)

// WarehouseSchemaChange is a change of a warehouse table's columns that dw-quality's schema check
// recorded on the table's asset, on the failing path near the onset: the warehouse-side twin of a
// registry version (a column dropped by a migration, retyped by a model change, made nullable).
type WarehouseSchemaChange struct {
	Asset string `json:"asset"`
	// DetectedAt is the schema check's run that saw the change: it happened between that run
	// and the one before.
	DetectedAt time.Time `json:"detected_at"`
	// Changes are the columns removed, retyped or made nullable (additions break no reader).
	Changes []quality.ColumnChange `json:"changes"`
	// OnPath lists the changed columns on the failing column's field-level lineage (the failing
	// column itself on the incident's own table).
	OnPath   []string `json:"on_path"`
	Distance int      `json:"distance"`
}

// detectionSlack is how long after the onset a schema check may first see a change that caused
// it: the check sees a change only at its next run, usually in the same pass as the failing one.
const detectionSlack = time.Hour

// warehouseSchemaChanges reads the schema check's latest change on the failing asset and on every
// warehouse table on its upstream path, keeping the harmful ones detected within the look-back
// before the onset (or within detectionSlack after it).
func (g *Gatherer) warehouseSchemaChanges(ctx context.Context, in *Input, inc incidents.Incident, lin graph.Lineage) {
	depth := map[graph.URN]int{graph.URN(inc.Asset): 0}
	fields := map[graph.URN][]string{graph.URN(inc.Asset): {in.Column}}
	order := []graph.URN{graph.URN(inc.Asset)}
	for _, n := range lin.Nodes {
		u := n.Node.Asset
		if u.System() != graph.SystemWarehouse {
			continue
		}
		if _, ok := depth[u]; !ok {
			depth[u] = n.Depth
			order = append(order, u)
		}
		depth[u] = min(depth[u], n.Depth)
		if n.Node.Path != "" {
			fields[u] = append(fields[u], n.Node.Path)
		}
	}
	for _, u := range order {
		a, err := g.g.Get(ctx, u)
		var nf *graph.NotFoundError
		if errors.As(err, &nf) {
			continue
		}
		if err != nil {
			in.Unchecked = append(in.Unchecked, fmt.Sprintf("warehouse schema of %s: %v", u, err))
			continue
		}
		rs, err := quality.ReadRecordedSchema(a.Attrs)
		if err != nil {
			in.Unchecked = append(in.Unchecked, fmt.Sprintf("warehouse schema of %s: %v", u, err))
			continue
		}
		if rs.ChangedAt.IsZero() || rs.ChangedAt.After(in.Onset.Add(detectionSlack)) || in.Onset.Sub(rs.ChangedAt) > in.LookBack {
			continue
		}
		wc := WarehouseSchemaChange{Asset: string(u), DetectedAt: rs.ChangedAt, Changes: []quality.ColumnChange{}, OnPath: []string{}, Distance: depth[u]}
		for _, ch := range rs.Changes {
			if !ch.Harmful() {
				continue
			}
			wc.Changes = append(wc.Changes, ch)
			if slices.ContainsFunc(fields[u], func(f string) bool { return f != "" && strings.EqualFold(f, ch.Column) }) {
				wc.OnPath = append(wc.OnPath, ch.Column)
			}
		}
		if len(wc.Changes) > 0 {
			in.WarehouseChanges = append(in.WarehouseChanges, wc)
		}
	}
}

// warehouseExplains says whether a column change can produce the failure mode: a removed column
// can produce any (nulls or zeros where a loader fills it, a statement or model that fails, rows
// gone); a retyped one any value failure and a load that fails; one made nullable the nulls.
func warehouseExplains(mode string, ch quality.ColumnChange) bool {
	switch ch.Change {
	case "removed":
		return true
	case "retyped":
		return valueMode(mode) || mode == ModeFreshness || mode == ModeVolume
	case "made_nullable":
		return mode == ModeNullRate || mode == ModeCustom
	}
	return false
}

// judgeWarehouseSchema scores a warehouse schema change by the same rule as a registry version:
// timing (detected near the onset), lineage (on the failing path: the changed column on the
// failing column's field-level lineage, else the table upstream or the failing table itself), and
// mode (the kind of change explains the kind of failure).
func judgeWarehouseSchema(in Input, wc WarehouseSchemaChange) Candidate {
	var what []string
	for _, ch := range wc.Changes {
		what = append(what, ch.Describe())
	}
	table := wc.Asset
	if i := strings.LastIndex(table, "/"); i >= 0 {
		table = table[i+1:]
	}
	c := Candidate{Kind: "warehouse_schema_change", Source: "warehouse-schema:" + wc.Asset + "@" + wc.DetectedAt.UTC().Format(time.RFC3339),
		Cause: fmt.Sprintf("%s in the warehouse: %s", table, strings.Join(what, ", ")), distance: wc.Distance, lag: in.Onset.Sub(wc.DetectedAt)}
	if c.lag < 0 {
		c.lag = -c.lag
	}
	if in.Onset.Sub(wc.DetectedAt) <= in.LookBack {
		c.Supports = append(c.Supports, KindTiming)
		rel := fmt.Sprintf("%s before the onset at %s", in.Onset.Sub(wc.DetectedAt).Round(time.Minute), in.Onset.UTC().Format("15:04 MST"))
		if wc.DetectedAt.After(in.Onset) {
			rel = fmt.Sprintf("%s after the onset at %s: a schema check sees a change only at its next run", wc.DetectedAt.Sub(in.Onset).Round(time.Minute), in.Onset.UTC().Format("15:04 MST"))
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("the schema check of %s detected it at %s, %s", table, wc.DetectedAt.UTC().Format("15:04 MST"), rel))
	}
	c.Supports = append(c.Supports, KindLineage)
	switch {
	case len(wc.OnPath) > 0 && wc.Distance == 0:
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s is the failing column itself", strings.Join(wc.OnPath, ", ")))
	case len(wc.OnPath) > 0:
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s lies on the upstream lineage of %s (%d hops)", strings.Join(wc.OnPath, ", "), orAsset(in.Column), wc.Distance))
	case wc.Distance == 0:
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s is the failing table (field-level link to %s unknown)", table, orAsset(in.Column)))
	default:
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s is upstream of %s at table level (%d hops)", table, orAsset(in.Column), wc.Distance))
	}
	for _, ch := range wc.Changes {
		if warehouseExplains(in.FailureMode, ch) {
			c.Supports = append(c.Supports, KindMode)
			c.Evidence = append(c.Evidence, fmt.Sprintf("%s explains a %s failure", ch.Describe(), in.FailureMode))
			break
		}
	}
	c.Score = len(c.Supports)
	return c
}
