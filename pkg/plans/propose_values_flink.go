// Value change met by a Flink statement's filter: the statement keeps running with the literal list
// it was created with, so the new value never reaches its sink. A running statement's SQL cannot
// be edited; a corrected statement with the widened filter writes a -v2 sink from the plan's
// start, by the same mechanical rule as the dbt widening, or the owner is told what to decide.

package plans

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// statementsFiltering are the Flink statements among the diagnosis's readers that read field.
func statementsFiltering(sc diagnosis.SchemaChange, field string) []graph.URN {
	var out []graph.URN
	for _, r := range sc.Readers {
		u := graph.URN(r.URN)
		if u.System() == graph.SystemFlink && strings.HasPrefix(u.ID(), "statement/") && containsFold(r.ReadsFields, field) {
			out = append(out, u)
		}
	}
	return out
}

// widenStatement drafts the corrected statement that lets nv's values through u's filter on the
// field, or the owner's decision when the filter is not one literal `= 'X'` / `IN ('X', …)` or
// the statement cannot be redirected.
func (dc *draftContext) widenStatement(ctx context.Context, sc diagnosis.SchemaChange, u graph.URN, nv diagnosis.ValuesSeen, noRestore string) (Proposal, error) {
	name := strings.TrimPrefix(u.ID(), "statement/")
	vals := strings.Join(nv.Values, ", ")
	p := Proposal{Class: config.ClassFlinkStatement, Target: string(u), Executor: dc.executor(config.ClassFlinkStatement), Reversible: true,
		BlastRadius: []string{string(u)}, Origin: OriginGenerated}
	decide := func(why string) (Proposal, error) {
		p.Title = fmt.Sprintf("Decide whether %s keeps %s in %s", name, vals, nv.Field)
		p.Payload = map[string]any{"statement": name, "field": nv.Field, "new_values": nv.Values,
			"steps": []string{
				fmt.Sprintf("decide whether %s belongs with the values %s keeps: if it does, create a corrected statement with %s added to its filter on %s, writing a new sink from %s, and move readers to it; if not, nothing is lost",
					vals, name, vals, nv.Field, dc.from.UTC().Format("2006-01-02 15:04 UTC")),
			}}
		p.Undo = "nothing to undo: this step changes nothing until the owner acts"
		p.Reversible = false
		p.Why = noRestore + "; " + why
		p.Validation = "no statement drafted: " + why
		return p, nil
	}
	a, err := dc.src.Graph.Get(ctx, u)
	var nf *graph.NotFoundError
	switch {
	case errors.As(err, &nf) || err == nil && a.Attrs["sql"] == "":
		return decide(fmt.Sprintf("the SQL of %s is not in the context graph (import_flink_statement or sync_catalog with confluent_cloud configured), so its filter could not be read", u))
	case err != nil:
		return Proposal{}, err
	}
	sql := a.Attrs["sql"]
	widened, expr, why := widen(sql, nv.Field, nv.Values)
	if why != "" {
		return decide(fmt.Sprintf("the filter on %s in %s %s: which values belong is the owner's call", nv.Field, u, why))
	}
	stmt, err := sqlparse.Parse(widened)
	if err != nil {
		return decide(fmt.Sprintf("the widened SQL of %s does not parse (%v)", u, err))
	}
	lin := sqlparse.Analyze(stmt, nil)
	source, err := dc.sourceTopic(ctx, sc.Subject, lin)
	if err != nil {
		return Proposal{}, err
	}
	if source == "" || len(lin.Target) == 0 {
		return decide(fmt.Sprintf("%s reads no topic of %s that the graph knows, or writes no table, so no corrected statement can be pointed at a new sink", u, sc.Subject))
	}
	old := lin.Target[len(lin.Target)-1]
	sink := old + "-v2"
	opts, start := dc.startAt(ctx, source)
	d, err := rewriteStatement(widened, nil, source, sink, optionsHint(opts), nil)
	if err != nil {
		return decide(err.Error())
	}
	rc, err := checkStatement(d.SQL, nil)
	if err != nil || len(rc.Target) == 0 || !strings.EqualFold(rc.Target[len(rc.Target)-1], sink) {
		return decide(fmt.Sprintf("the corrected statement drafted for %s was refused by its own validation (%v)", u, err))
	}
	dc.key, dc.timeCol = groupKey(stmt)
	dc.sinkV2, dc.stmtURN = sink, u
	dc.newAsset = dc.v2Asset(ctx, old, sink)
	v2 := name + "-v2"
	p.Title = fmt.Sprintf("Run %s: lets %s through its filter on %s and writes %s from %s", v2, vals, nv.Field, sink, dc.from.UTC().Format("2006-01-02 15:04 UTC"))
	p.Payload = map[string]any{"statement_name": v2, "sql": d.SQL, "sink": sink, "start": start, "field": nv.Field, "new_values": nv.Values,
		"steps": []string{
			fmt.Sprintf("CREATE TABLE `%s` LIKE `%s` (the new sink, same columns)", sink, old),
			fmt.Sprintf("Create Flink statement %s with the sql of this payload: it reads %s from the plan's start, so the rows the filter dropped are written again", v2, source),
			fmt.Sprintf("Enable Tableflow on %s like %s", sink, old),
			fmt.Sprintf("Once %s has caught up, stop %s (after every reader of %s reads %s)", v2, name, old, sink),
		}}
	p.Undo = fmt.Sprintf("stop and delete statement %s and topic %s; %s keeps running until stopped, so nothing else changes", v2, sink, name)
	p.Why = fmt.Sprintf("%s; `%s` in %s drops the new value %s: the corrected statement widens it", noRestore, expr, u, vals)
	p.Validation = fmt.Sprintf("parses with pkg/sqlparse; writes %s; the filter is a literal list, so adding the values is mechanical", sink)
	p.BlastRadius = []string{string(u), string(graph.TopicURN(sink))}
	if dc.newAsset != "" {
		p.BlastRadius = append(p.BlastRadius, string(dc.newAsset))
	}
	return p, nil
}
