// Value change: a compatible change to a field's values (an enum symbol added, a new code) that a
// reader's filter drops. Nothing is wrong with the schema, so nothing is restored; the filter is
// widened where its SQL makes that mechanical, else the owner is told what to decide.

package plans

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/graph"
)

// valueCause is the top-ranked schema change that explains the incident by new values alone: it
// removed or renamed no field a reader reads, and the topic sample shows new values of a field a
// reader reads. It returns the change and the new values by field.
func (dc *draftContext) valueCause() (diagnosis.SchemaChange, []diagnosis.ValuesSeen, bool) {
	ranked := dc.rankedSchemaChanges()
	if len(ranked) == 0 {
		return diagnosis.SchemaChange{}, nil, false
	}
	top := &ranked[0]
	for _, ch := range top.Changes {
		if ch.Change == "removed" || ch.Change == "renamed" || ch.Change == "type_changed" {
			return diagnosis.SchemaChange{}, nil, false
		}
	}
	var seen []diagnosis.ValuesSeen
	for _, nv := range top.NewValues {
		// With no statement reading the subject (a sink connector lands it), the models that
		// read what it lands are found from the incident asset (modelsFiltering).
		read := len(top.Readers) == 0
		for _, r := range top.Readers {
			read = read || containsFold(r.ReadsFields, nv.Field)
		}
		if read && len(nv.Values) > 0 {
			seen = append(seen, nv)
		}
	}
	return *top, seen, len(seen) > 0
}

// valueSteps are the plan's steps for a value change: per Flink statement that filters the field,
// a corrected statement with the widened filter (propose_values_flink.go); per dbt model, a diff
// widening the filter with the new values (and the rebuild that reruns it); where the widening is
// not mechanical, a step for the owner saying what to decide.
func (dc *draftContext) valueSteps(ctx context.Context, sc diagnosis.SchemaChange, seen []diagnosis.ValuesSeen) ([]Proposal, error) {
	noRestore := fmt.Sprintf("no schema restore needed: %s v%d changes only the values of %s, which readers of older versions still decode; the readers that filter on them are what drops the rows",
		sc.Subject, sc.Version, fieldsOf(seen))
	dc.note(noRestore)
	var out []Proposal
	models := 0
	for _, nv := range seen {
		for _, u := range statementsFiltering(sc, nv.Field) {
			p, err := dc.widenStatement(ctx, sc, u, nv, noRestore)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
		for _, model := range dc.modelsFiltering(ctx, sc, nv.Field) {
			out = append(out, dc.widenFilter(model, nv, noRestore))
			models++
		}
	}
	if models == 0 {
		dc.note(fmt.Sprintf("no dbt change generated for the new values of %s: no dbt model among the readers in the diagnosis or downstream of %s reads it (import_dbt_manifest)",
			fieldsOf(seen), dc.inc.Asset))
	}
	return out, nil
}

// modelsFiltering are the dbt models that read field: the diagnosis's readers first, then the
// models downstream of the incident asset (through its dbt sources).
func (dc *draftContext) modelsFiltering(ctx context.Context, sc diagnosis.SchemaChange, field string) []graph.URN {
	var out []graph.URN
	add := func(u graph.URN) {
		if strings.HasPrefix(string(u), "dbt:model.") && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	for _, r := range sc.Readers {
		if containsFold(r.ReadsFields, field) {
			add(graph.URN(r.URN))
		}
	}
	if dc.src.Graph == nil {
		return out
	}
	add(graph.URN(dc.inc.Asset))
	// A dbt model and the table it builds are one asset: the model that materializes the
	// incident table is a reader too.
	if up, _, err := dc.src.Graph.Neighbours(ctx, graph.URN(dc.inc.Asset), graph.Upstream); err == nil {
		for _, e := range up {
			if e.Kind == graph.EdgeMaterializes {
				add(e.From.Asset)
			}
		}
	}
	edges, _, err := dc.src.Graph.Neighbours(ctx, graph.URN(dc.inc.Asset), graph.Downstream)
	if err != nil {
		return out
	}
	for _, e := range edges {
		add(e.To.Asset)
		if strings.HasPrefix(string(e.To.Asset), "dbt:source.") {
			es, _, err := dc.src.Graph.Neighbours(ctx, e.To.Asset, graph.Downstream)
			if err == nil {
				for _, e2 := range es {
					add(e2.To.Asset)
				}
			}
		}
	}
	return out
}

// widenFilter drafts the diff adding the new values to model's filter on the field, or the
// owner's decision when the filter is not a plain `= 'X'` or `IN ('X', …)`.
func (dc *draftContext) widenFilter(model graph.URN, nv diagnosis.ValuesSeen, noRestore string) Proposal {
	name := model.ID()[strings.LastIndex(model.ID(), ".")+1:]
	rebuild := "dbt build -s " + name + "+"
	p := Proposal{Class: config.ClassDBTCode, Target: string(model), Executor: dc.executor(config.ClassDBTCode), Reversible: true,
		Undo: "git revert the change and rebuild the model", BlastRadius: []string{string(model)}, Origin: OriginGenerated}
	decide := func(why string) Proposal {
		p.Title = fmt.Sprintf("Decide whether %s counts %s in %s", name, strings.Join(nv.Values, ", "), nv.Field)
		p.Payload = map[string]any{"model": strings.TrimPrefix(string(model), "dbt:"), "field": nv.Field, "new_values": nv.Values,
			"steps": []string{
				fmt.Sprintf("decide whether %s belongs with the values %s keeps: if it does, add it to the filter on %s; if not, nothing is lost", strings.Join(nv.Values, ", "), name, nv.Field),
				rebuild + " from the onset, so the reruns include the rows the filter dropped"}}
		p.Why = noRestore + "; " + why
		p.Validation = "no diff: " + why
		return p
	}
	if dc.src.Config.DBT == nil || dc.src.Config.DBT.ManifestPath == "" {
		return decide("dbt not configured (set dbt.manifest_path to the project's target/manifest.json), so the model's filter could not be read")
	}
	md, _, err := dc.manifest.model(dc.src.Config.DBT.ManifestPath, strings.TrimPrefix(string(model), "dbt:"))
	if err != nil {
		return decide(err.Error())
	}
	base := md.Code
	crlf := crlfOnly(base)
	if crlf {
		base = strings.ReplaceAll(base, "\r\n", "\n")
	}
	code, expr, why := widen(base, nv.Field, nv.Values)
	if why != "" {
		return decide(fmt.Sprintf("the filter on %s in %s %s: which values belong is the owner's call", nv.Field, md.Path, why))
	}
	diff := unifiedDiff(md.Path, base, code)
	want := code
	if crlf {
		want = strings.ReplaceAll(code, "\n", "\r\n")
	}
	if got, _, err := ApplyDiff(md.Code, diff); err != nil || got != want {
		return decide(fmt.Sprintf("the drafted diff does not apply to %s (%v)", md.Path, err))
	}
	p.Title = fmt.Sprintf("Let %s through %s's filter on %s", strings.Join(nv.Values, ", "), name, nv.Field)
	p.Payload = map[string]any{"model": strings.TrimPrefix(string(model), "dbt:"), "path": md.Path, "diff": diff,
		"steps": []string{"git apply the diff in the dbt project",
			rebuild + " from " + dc.from.UTC().Format("2006-01-02 15:04 UTC") + " on, so the reruns restore the rows the filter dropped"}}
	p.Why = fmt.Sprintf("%s; `%s` drops the new value %s (seen only in records of the new version): the diff widens it", noRestore, expr, strings.Join(nv.Values, ", "))
	p.Validation = "unified diff applies cleanly to " + md.Path + "; the filter is a literal list, so adding the values is mechanical"
	return p
}

// filterRE finds `[alias.]field = 'X'` and `[alias.]field IN ('X', …)` (case-insensitive), the
// filters whose widening is mechanical. NOT IN and <> already let new values through.
func filterRE(field string) *regexp.Regexp {
	f := `(?:[A-Za-z_][A-Za-z0-9_]*\.)?"?` + regexp.QuoteMeta(field) + `"?`
	lit := `'(?:[^']|'')*'`
	return regexp.MustCompile(`(?i)\b(` + f + `)\s*(?:(=)\s*(` + lit + `)|(\bin)\s*\(\s*(` + lit + `(?:\s*,\s*` + lit + `)*)\s*\))`)
}

// widen adds values to the one literal filter on field in code. It says why not when the code has
// no such filter, or several (which of them should widen is not mechanical).
func widen(code, field string, values []string) (string, string, string) {
	if !plainIdent.MatchString(field) {
		return code, "", fmt.Sprintf("cannot be found: %q is not a plain SQL identifier", field)
	}
	re := filterRE(field)
	locs := re.FindAllStringSubmatchIndex(code, -1)
	// A match preceded by NOT excludes values rather than keeping them.
	var keep [][]int
	for _, l := range locs {
		before := strings.ToUpper(strings.TrimRight(code[:l[0]], " \t\n"))
		if strings.HasSuffix(before, "NOT") {
			continue
		}
		keep = append(keep, l)
	}
	switch len(keep) {
	case 0:
		return code, "", "is not a literal `= '…'` or `IN ('…')` list"
	case 1:
	default:
		return code, "", fmt.Sprintf("appears %d times", len(keep))
	}
	l := keep[0]
	col := code[l[2]:l[3]]
	var lits []string
	if l[6] >= 0 { // = 'X'
		lits = []string{code[l[6]:l[7]]}
	} else {
		for _, s := range regexp.MustCompile(`'(?:[^']|'')*'`).FindAllString(code[l[10]:l[11]], -1) {
			lits = append(lits, s)
		}
	}
	for _, v := range values {
		q := "'" + strings.ReplaceAll(v, "'", "''") + "'"
		if !slices.Contains(lits, q) {
			lits = append(lits, q)
		}
	}
	in := "in"
	if l[8] >= 0 {
		in = code[l[8]:l[9]]
	} else if kw := regexp.MustCompile(`(?i)\b(where|and|or|on|having|when)\b`).FindAllString(code[:l[0]], -1); len(kw) > 0 && kw[len(kw)-1] == strings.ToUpper(kw[len(kw)-1]) {
		in = "IN" // the keyword case of the code around it
	}
	repl := fmt.Sprintf("%s %s (%s)", col, in, strings.Join(lits, ", "))
	return code[:l[0]] + repl + code[l[1]:], code[l[0]:l[1]], ""
}

var plainIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func fieldsOf(seen []diagnosis.ValuesSeen) string {
	var fs []string
	for _, s := range seen {
		fs = append(fs, s.Field)
	}
	return strings.Join(fs, ", ")
}

// valueCauseOf is valueCause when a diagnosis is recorded.
func (dc *draftContext) valueCauseOf() (diagnosis.SchemaChange, []diagnosis.ValuesSeen, bool) {
	if dc.diag == nil {
		return diagnosis.SchemaChange{}, nil, false
	}
	return dc.valueCause()
}
