package diagnosis

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

// readPath sets sc.PathReaders: every reader with SQL in the graph that lies on the path from
// sc's subject to the failing asset (the asset itself included: a view or a model can be the
// one failing) and is not one of the statements that decode the subject's topic (sc.Readers),
// with what its SQL does with the change. The sentences are assess_impact's (impact.Assessor):
// for a field change, by what the format and the readers before it deliver (NULL, a zero, a
// default, missing rows); for a value change, with the new values — the enum symbols the version
// declares and the values only its records carry in the topic sample.
func (g *Gatherer) readPath(ctx context.Context, sc *SchemaChange, failing graph.URN, p path) error {
	if sc.old == nil || sc.new == nil {
		return nil
	}
	req := impact.Request{Subject: sc.Subject, OldVersion: sc.oldVersion, NewVersion: sc.Version, Old: sc.old, New: sc.new,
		NewValues: sampledValues(sc)}
	a, err := impact.New(g.g, g.now).Assess(ctx, req)
	if err != nil {
		return fmt.Errorf("read the SQL of the readers of %s v%d on the path: %w", sc.Subject, sc.Version, err)
	}
	onPath := func(u graph.URN) bool {
		_, ok := p.depth[u]
		return ok || u == failing
	}
	byURN := map[string]*Reader{}
	var order []string
	for _, r := range a.Readers {
		u := string(r.URN)
		if len(r.Reads) == 0 || !onPath(r.URN) || !sc.reaches(r.Field) ||
			slices.ContainsFunc(sc.Readers, func(x Reader) bool { return x.URN == u }) {
			continue
		}
		pr := byURN[u]
		if pr == nil {
			pr = &Reader{URN: u, Kind: r.Kind, PinnedVersion: r.PinnedVersion, SelectStar: r.SelectStar}
			byURN[u] = pr
			order = append(order, u)
		}
		if !has(pr.ReadsFields, r.Field) {
			pr.ReadsFields = append(pr.ReadsFields, r.Field)
		}
		if r.Evidence != "" && !strings.Contains(pr.Expression, r.Evidence) {
			pr.Expression = strings.TrimPrefix(pr.Expression+", "+r.Evidence, ", ")
		}
		for _, rd := range r.Reads {
			if !slices.ContainsFunc(pr.Reads, func(x impact.SQLRead) bool { return x.Sentence == rd.Sentence }) {
				pr.Reads = append(pr.Reads, rd)
			}
		}
	}
	sc.PathReaders = nil
	for _, u := range order {
		sc.PathReaders = append(sc.PathReaders, *byURN[u])
	}
	return nil
}

// reaches reports whether a change to field (a subject field, as the old version names it, or
// a value change's field) can reach the failing column: it is on the field-level path, or only
// table-level lineage links the subject.
func (sc *SchemaChange) reaches(field string) bool {
	if len(sc.OnPath) == 0 {
		return sc.SubjectUpstream
	}
	return has(sc.OnPath, field) || has(sc.readFields, field)
}

// sampledValues are the new values only the topic sample shows (the ones the version declares as
// enum symbols the assessment finds in the schemas itself).
func sampledValues(sc *SchemaChange) []impact.ValueChange {
	var out []impact.ValueChange
	for _, nv := range sc.NewValues {
		if nv.From == ValuesFromSchema {
			continue
		}
		var declared []string
		for _, ch := range sc.Changes {
			if ch.Path == nv.Field {
				declared = append(declared, ch.SymbolsAdded...)
			}
		}
		var vals []string
		for _, v := range nv.Values {
			if !slices.Contains(declared, v) {
				vals = append(vals, v)
			}
		}
		if len(vals) > 0 {
			out = append(out, impact.ValueChange{Field: nv.Field, NewValues: vals, Source: ValuesFromSample})
		}
	}
	return out
}
