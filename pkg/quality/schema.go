package quality

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// ColumnChange is one difference between a table's columns now and at the last schema check.
type ColumnChange struct {
	Column string `json:"column"`
	// Change is added, removed, retyped, made_nullable or made_not_null.
	Change string `json:"change"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
}

// snapColumn is one column of a recorded snapshot.
type snapColumn = SchemaColumn

// Graph attributes the schema check keeps on the table's asset: the snapshot it compares with,
// and the latest change (when and what), which diagnose_incident reads as a warehouse-side
// schema event beside the registry's versions.
const (
	AttrColumns         = "warehouse_columns"
	AttrSchemaChangedAt = "schema_changed_at"
	AttrSchemaChange    = "schema_change"
	// AttrSchemaChanges is the latest change as a JSON list of ColumnChange.
	AttrSchemaChanges = "schema_changes"
)

func schemaSource(asset string) string { return "dw-quality:schema/" + asset }

// schemaResult compares the table's catalog columns with the snapshot the last schema check left
// in the context graph, then records the current columns (as the asset's fields and snapshot).
func (c *Checker) schemaResult(ctx context.Context, ti *warehouse.TableInfo, rep *Report, now time.Time) (Result, error) {
	r := Result{Check: string(SchemaChanges), Metric: "schema_changes", Unit: "changes", Status: Pass, recorded: true,
		SQL: "-- no query: the columns, types and nullability the warehouse catalog reports", ExpectedLow: ptr(0.0), ExpectedHigh: ptr(0.0)}
	if c.hist == nil {
		return r, errors.New("the schema check needs the store, where the last snapshot of each table is kept")
	}
	g := graph.New(c.hist.st, func() time.Time { return now })
	urn := graph.URN(rep.Asset)
	cur := make([]snapColumn, len(ti.Columns))
	for i, col := range ti.Columns {
		cur[i] = snapColumn{Name: col.Name, Type: col.Type, Nullable: col.Nullable}
	}
	var prev []snapColumn
	known := false
	a, err := g.Get(ctx, urn)
	var nf *graph.NotFoundError
	switch {
	case errors.As(err, &nf):
	case err != nil:
		return r, fmt.Errorf("schema snapshot of %s: %w", rep.Table, err)
	default:
		if s, ok := a.Attrs[AttrColumns]; ok {
			if err := json.Unmarshal([]byte(s), &prev); err != nil {
				return r, fmt.Errorf("schema snapshot of %s is unreadable: %w", rep.Table, err)
			}
			known = true
		}
	}
	changes := diffColumns(prev, cur)
	r.Changes, r.Value = changes, float64(len(changes))
	attrs := map[string]string{}
	if known {
		for _, k := range []string{AttrSchemaChangedAt, AttrSchemaChange, AttrSchemaChanges} {
			attrs[k] = a.Attrs[k] // the latest change stays on the asset until the next one
		}
	}
	switch {
	case !known:
		r.Why = fmt.Sprintf("first schema snapshot of %s: %d columns recorded; later runs report columns added, removed, retyped or made nullable", rep.Table, len(cur))
	case len(changes) == 0:
		r.Why = fmt.Sprintf("the %d columns are unchanged since the last schema check", len(cur))
	default:
		var words []string
		for _, ch := range changes {
			words = append(words, describeChange(ch))
			if ch.Change != "added" && ch.Change != "made_not_null" {
				r.Status = Fail
			} else {
				r.Status = worse(r.Status, Warn)
			}
		}
		r.Why = strings.Join(words, "; ") + " since the last schema check"
		list, err := json.Marshal(changes)
		if err != nil {
			return r, err
		}
		attrs[AttrSchemaChangedAt], attrs[AttrSchemaChange], attrs[AttrSchemaChanges] = now.UTC().Format(time.RFC3339), r.Why, string(list)
	}
	snap, err := json.Marshal(cur)
	if err != nil {
		return r, err
	}
	attrs[AttrColumns] = string(snap)
	for k, v := range attrs {
		if v == "" {
			delete(attrs, k)
		}
	}
	b := graph.Batch{Source: schemaSource(rep.Asset), ObservedAt: now,
		Assets: []graph.Asset{{URN: urn, System: graph.SystemWarehouse, Kind: graph.KindWarehouseTable, Name: ti.Ref().String(), Attrs: attrs}}}
	for i, col := range ti.Columns {
		b.Fields = append(b.Fields, graph.Field{Asset: urn, Path: col.Name, Type: col.Type, Nullable: col.Nullable, Ordinal: i + 1})
	}
	// A complete pass of this table's own source: a removed column's field goes stale.
	if _, err := g.Import(ctx, b); err != nil {
		return r, fmt.Errorf("record schema snapshot of %s: %w", rep.Table, err)
	}
	return r, nil
}

// diffColumns lists what changed from prev to cur, in cur's column order then removed columns.
func diffColumns(prev, cur []snapColumn) []ColumnChange {
	if prev == nil {
		return nil
	}
	find := func(list []snapColumn, name string) (snapColumn, bool) {
		i := slices.IndexFunc(list, func(c snapColumn) bool { return c.Name == name })
		if i < 0 {
			return snapColumn{}, false
		}
		return list[i], true
	}
	var out []ColumnChange
	for _, c := range cur {
		p, ok := find(prev, c.Name)
		switch {
		case !ok:
			out = append(out, ColumnChange{Column: c.Name, Change: "added", To: c.Type})
			continue
		case !strings.EqualFold(p.Type, c.Type):
			out = append(out, ColumnChange{Column: c.Name, Change: "retyped", From: p.Type, To: c.Type})
		}
		switch {
		case !p.Nullable && c.Nullable:
			out = append(out, ColumnChange{Column: c.Name, Change: "made_nullable"})
		case p.Nullable && !c.Nullable:
			out = append(out, ColumnChange{Column: c.Name, Change: "made_not_null"})
		}
	}
	for _, p := range prev {
		if _, ok := find(cur, p.Name); !ok {
			out = append(out, ColumnChange{Column: p.Name, Change: "removed", From: p.Type})
		}
	}
	return out
}

func describeChange(ch ColumnChange) string {
	switch ch.Change {
	case "added":
		return ch.Column + " added (" + ch.To + ")"
	case "removed":
		return ch.Column + " removed (was " + ch.From + ")"
	case "retyped":
		return ch.Column + " retyped from " + ch.From + " to " + ch.To
	case "made_nullable":
		return ch.Column + " made nullable"
	}
	return ch.Column + " made NOT NULL"
}
