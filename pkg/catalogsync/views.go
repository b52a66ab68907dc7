package catalogsync

import (
	"context"
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/sqlparse"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// views reads the SQL of the harvested views onto their assets (the sql attribute impact and the
// diagnosis read a reader's SQL from, as for dbt models and Flink statements) and draws their
// column lineage from it: each output column from the harvested table columns it is computed from,
// and the columns that filter, join or group its rows to the view as a whole. A view whose SQL
// does not parse, or that reads a table the harvest did not find, keeps what can be drawn and is
// warned about.
func (r *run) views(ctx context.Context, db *warehouse.DB, b *graph.Batch) ([]string, error) {
	defs, hidden, err := db.ViewDefinitions(ctx, r.tables)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return []string{fmt.Sprintf("view definitions not read, so views have no SQL or lineage: %v", err)}, nil
	}
	var warnings []string
	for _, ref := range hidden {
		warnings = append(warnings, fmt.Sprintf("view %s: the engine withholds its definition (a secure view the role does not own): no SQL or lineage", ref))
	}
	index := map[graph.URN]int{}
	for i, a := range b.Assets {
		index[a.URN] = i
	}
	cols := func(name []string) ([]string, bool) {
		cands := matchRelation(r.tables, strings.Join(quoteParts(name), "."))
		if len(cands) != 1 {
			return nil, false
		}
		c, ok := r.columns[tableURN(r.engine, cands[0])]
		return c, ok
	}
	for _, t := range r.tables {
		def, ok := defs[t.Ref()]
		if !ok {
			continue
		}
		u := tableURN(r.engine, t)
		i, ok := index[u]
		if !ok {
			continue // not described: already warned about
		}
		b.Assets[i].Attrs["sql"] = def
		stmts, _, err := sqlparse.ParseScript(def)
		if err == nil && len(stmts) != 1 {
			err = fmt.Errorf("%d statements", len(stmts))
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("view %s: its SQL does not parse (%v): SQL kept, no column lineage", t.Ref(), err))
			continue
		}
		lin := sqlparse.Analyze(stmts[0], cols)
		unmatched := map[string]bool{}
		from := func(table []string) (graph.URN, bool) {
			cands := matchRelation(r.tables, strings.Join(quoteParts(table), "."))
			if len(cands) != 1 {
				unmatched[strings.Join(table, ".")] = true
				return "", false
			}
			return tableURN(r.engine, cands[0]), true
		}
		seen := map[graph.EdgeKey]bool{}
		add := func(e graph.Edge) {
			if e.From.Asset != e.To.Asset && !seen[e.Key()] {
				seen[e.Key()] = true
				b.Edges = append(b.Edges, e)
			}
		}
		for _, c := range lin.Columns {
			for _, s := range c.Sources {
				if c.Name == "*" || s.Column == "*" {
					continue
				}
				if src, ok := from(s.Table); ok {
					add(graph.Edge{From: src.Field(s.Column), To: u.Field(c.Name), Kind: graph.EdgeKind(s.Kind), Transformation: c.Expr})
				}
			}
		}
		for _, s := range lin.Indirect {
			if s.Column == "*" {
				continue
			}
			if src, ok := from(s.Table); ok {
				add(graph.Edge{From: src.Field(s.Column), To: u.Field(""), Kind: graph.EdgeKind(s.Kind)})
			}
		}
		for _, tb := range lin.Tables {
			if src, ok := from(tb); ok {
				add(graph.Edge{From: src.Field(""), To: u.Field(""), Kind: graph.EdgeReads, Transformation: "view definition"})
			}
		}
		for name := range unmatched {
			warnings = append(warnings, fmt.Sprintf("view %s reads %s, which the harvest did not find once among the warehouse's tables: no lineage from it", t.Ref(), name))
		}
	}
	return warnings, nil
}

// quoteParts quotes each part of a name as the SQL spelled it, so matchRelation compares it exactly
// ignoring case (the parser has already removed the SQL's own quotes).
func quoteParts(name []string) []string {
	out := make([]string, len(name))
	for i, p := range name {
		out[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return out
}
