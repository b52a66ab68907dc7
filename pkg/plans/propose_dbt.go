// dbt change: point the model that reads the incident table at the new table from the fix on.

package plans

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
)

func (dc *draftContext) dbtDiff(ctx context.Context) (Proposal, bool) {
	if dc.newAsset == "" {
		return Proposal{}, false
	}
	if dc.src.Config.DBT == nil || dc.src.Config.DBT.ManifestPath == "" {
		dc.note("no dbt diff generated: dbt not configured (set dbt.manifest_path to the project's target/manifest.json)")
		return Proposal{}, false
	}
	if dc.timeCol == "" {
		dc.note("no dbt diff generated: the statement's time column (the window start it groups by) is unknown, so today's hours cannot be told apart")
		return Proposal{}, false
	}
	// The dbt sources that name the incident table, and the models that read them.
	edges, _, err := dc.src.Graph.Neighbours(ctx, graph.URN(dc.inc.Asset), graph.Downstream)
	if err != nil {
		dc.note(fmt.Sprintf("no dbt diff generated: %v", err))
		return Proposal{}, false
	}
	var sources []graph.URN
	for _, e := range edges {
		if strings.HasPrefix(string(e.To.Asset), "dbt:source.") {
			sources = append(sources, e.To.Asset)
		}
	}
	// The model that reads the failing column (field-level lineage) gets the diff; other readers
	// of the table are named, since they too must move before the old statement stops.
	column := ""
	if dc.diag != nil {
		column = dc.diag.Input.Column
	}
	var models, readsColumn []graph.URN
	for _, s := range sources {
		es, _, err := dc.src.Graph.Neighbours(ctx, s, graph.Downstream)
		if err != nil {
			continue
		}
		for _, e := range es {
			m := e.To.Asset
			if !strings.HasPrefix(string(m), "dbt:model.") {
				continue
			}
			if !containsFold(urnStrings(models), string(m)) {
				models = append(models, m)
			}
			if column != "" && strings.EqualFold(e.From.Path, column) && !containsFold(urnStrings(readsColumn), string(m)) {
				readsColumn = append(readsColumn, m)
			}
		}
	}
	if len(models) == 0 {
		dc.note(fmt.Sprintf("no dbt diff generated: no dbt model reads %s in the context graph (import_dbt_manifest)", dc.inc.Asset))
		return Proposal{}, false
	}
	model := models[0]
	if len(readsColumn) > 0 {
		model = readsColumn[0]
	}
	var others []string
	for _, m := range models {
		if m != model {
			others = append(others, string(m))
		}
	}
	if len(others) > 0 {
		dc.note(fmt.Sprintf("only %s (which reads %s) got a dbt diff; %s also read %s: repoint them the same way before %s is stopped",
			model, column, strings.Join(others, ", "), dc.inc.Asset, dc.stmtURN))
	}
	md, m, err := dc.manifest.model(dc.src.Config.DBT.ManifestPath, strings.TrimPrefix(string(model), "dbt:"))
	if err != nil {
		dc.note("no dbt diff generated: " + err.Error())
		return Proposal{}, false
	}
	var total int
	// A CRLF model is edited and diffed by its lines; ApplyDiff keeps its CRLF endings.
	base := md.Code
	crlf := crlfOnly(base)
	if crlf {
		base = strings.ReplaceAll(base, "\r\n", "\n")
	}
	code := base
	for _, s := range sources {
		srcNode, ok := m.Sources[strings.TrimPrefix(string(s), "dbt:")]
		if !ok {
			continue
		}
		var n int
		code, n = splitModelCode(code, sourceRef(srcNode.SourceName, srcNode.Name), relationOf(dc.newAsset), dc.timeCol, srcNode.Name, dc.from)
		total += n
	}
	if total == 0 {
		where := "raw_code in the manifest"
		if md.FromFile {
			where = md.Path
		}
		dc.note(fmt.Sprintf("no dbt diff generated: %s has no {{ source(...) }} reference to %s in %s", model, dc.inc.Asset, where))
		return Proposal{}, false
	}
	diff := unifiedDiff(md.Path, base, code)
	want := code
	if crlf {
		want = strings.ReplaceAll(code, "\n", "\r\n")
	}
	if got, _, err := ApplyDiff(md.Code, diff); err != nil || got != want {
		dc.note(fmt.Sprintf("the dbt diff drafted for %s was refused: it does not apply to the current code (%v)", model, err))
		return Proposal{}, false
	}
	appliesTo := "the manifest's raw_code"
	if md.FromFile {
		appliesTo = md.Path + " as it is now"
	}
	return Proposal{Class: config.ClassDBTCode, Target: string(model),
		Title: fmt.Sprintf("Point %s at %s for hours from %s", model.ID(), relationOf(dc.newAsset), dc.from.UTC().Format("2006-01-02 15:04 UTC")),
		Payload: map[string]any{"model": strings.TrimPrefix(string(model), "dbt:"), "path": md.Path, "diff": diff,
			"steps": []string{"git apply the diff in the dbt project", "dbt build -s " + model.ID()[strings.LastIndex(model.ID(), ".")+1:]}},
		Executor: dc.executor(config.ClassDBTCode), Reversible: true,
		Undo: "git revert the change and rebuild the model",
		Why: fmt.Sprintf("%s reads %s; rows from %s on are corrected by the new statement in %s (the table Tableflow is expected to create for %s: an expectation, check the name before merging), earlier rows stay where they are",
			model, dc.inc.Asset, dc.from.UTC().Format(time.RFC3339), dc.newAsset, dc.sinkV2),
		BlastRadius: []string{string(model), string(dc.newAsset)}, Origin: OriginGenerated,
		Validation: "unified diff applies cleanly to " + appliesTo}, true
}

func relationOf(u graph.URN) string {
	_, rel, _ := strings.Cut(u.ID(), "/")
	return rel
}

func urnStrings(us []graph.URN) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = string(u)
	}
	return out
}
