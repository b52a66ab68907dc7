// Holds: pause the orchestrator jobs that push the incident's data to an external sink.

package plans

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
)

// holds pauses every orchestrator job downstream of the incident asset that pushes to an
// external sink, soonest next run first.
func (dc *draftContext) holds(ctx context.Context) ([]Proposal, error) {
	asset := graph.URN(dc.inc.Asset)
	br, err := dc.src.Graph.BlastRadius(ctx, graph.BlastRadiusRequest{Asset: asset})
	var nf *graph.NotFoundError
	if errors.As(err, &nf) {
		dc.note(fmt.Sprintf("no hold generated: %s is not in the context graph, so the jobs downstream are unknown (run sync_catalog or import_dbt_manifest)", asset))
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("blast radius of %s: %w", asset, err)
	}
	next := map[graph.URN]*time.Time{}
	for _, j := range br.ScheduledJobs {
		next[j.URN] = j.NextRun
	}
	type hold struct {
		job   graph.Impact
		sinks []string
		next  *time.Time
	}
	var hs []hold
	for _, im := range append(append([]graph.Impact{}, br.FieldLevel...), br.TableLevel...) {
		if im.Kind != graph.KindJob && im.System != "job" {
			continue
		}
		edges, _, err := dc.src.Graph.Neighbours(ctx, im.URN, graph.Downstream)
		if err != nil {
			return nil, err
		}
		var sinks []string
		for _, e := range edges {
			if e.To.Asset.System() == graph.SystemSink && !containsFold(sinks, string(e.To.Asset)) {
				sinks = append(sinks, string(e.To.Asset))
			}
		}
		if len(sinks) > 0 {
			hs = append(hs, hold{job: im, sinks: sinks, next: next[im.URN]})
		}
	}
	sort.SliceStable(hs, func(i, j int) bool {
		a, b := hs[i].next, hs[j].next
		if a == nil || b == nil {
			return a != nil && b == nil
		}
		return a.Before(*b)
	})
	var out []Proposal
	for _, h := range hs {
		a, err := dc.src.Graph.Get(ctx, h.job.URN)
		if err != nil {
			return nil, err
		}
		orch, id, _ := strings.Cut(h.job.URN.ID(), "/")
		if a.Attrs["orchestrator"] != "" {
			orch = a.Attrs["orchestrator"]
		}
		dag := a.Attrs["dag_id"]
		if dag == "" {
			dag = id
		}
		target, via := h.job.URN, ""
		if parent, ok := airflowParent(a); ok {
			// An Airflow task known only through OpenLineage (job <dag>.<task>): pausing its DAG,
			// named by the parent run facet, holds the task.
			orch, dag, target = "airflow", parent, graph.URN("job:airflow/"+parent)
			via = fmt.Sprintf("%s is an Airflow task known through OpenLineage; its parent run is DAG %s, so the DAG is paused. ", h.job.URN, parent)
		}
		if orch != "airflow" {
			out = append(out, dc.holdByHandStep(a, h.job, h.sinks, h.next))
			continue
		}
		// Dispatch refuses a target that does not name its DAG (CheckTarget), so such a hold
		// would be approved and then never run: say so now instead of proposing it.
		if CheckTarget(config.ClassPauseJob, string(target), map[string]any{"dag_id": dag}) != nil {
			out = append(out, dc.holdByHandStep(a, h.job, h.sinks, h.next))
			continue
		}
		when := "it is not scheduled"
		if a.Attrs["paused"] == "true" {
			when = "it is paused already"
		} else if h.next != nil {
			when = fmt.Sprintf("its next run is %s (in %s)", h.next.UTC().Format("2006-01-02 15:04 UTC"), h.next.Sub(dc.src.Now()).Round(time.Minute))
		}
		blast := []string{string(target)}
		if target != h.job.URN {
			blast = append(blast, string(h.job.URN))
		}
		out = append(out, Proposal{Class: config.ClassPauseJob, Target: string(target),
			Title:    fmt.Sprintf("Pause %s before it pushes wrong numbers to %s", dag, strings.Join(h.sinks, ", ")),
			Payload:  map[string]any{"dag_id": dag},
			Executor: dc.executor(config.ClassPauseJob), Reversible: true,
			Undo: fmt.Sprintf("unpause_job {\"dag_id\": %q} once verify_incident passes (remediate records the undo)", dag),
			Why: fmt.Sprintf("%s%s is downstream of %s (%d hops) and pushes to %s; %s. Held until verify_incident passes, no wrong number leaves",
				via, h.job.URN, dc.inc.Asset, h.job.Depth, strings.Join(h.sinks, ", "), when),
			BlastRadius: append(blast, h.sinks...), Origin: OriginGenerated,
			Validation: fmt.Sprintf("%s is a job in the context graph with dag_id %s; the payload is what remediate's pause_job dispatch reads", h.job.URN, dag)})
	}
	if len(out) == 0 && len(hs) == 0 {
		dc.note(fmt.Sprintf("no hold needed: no orchestrator job downstream of %s pushes to an external sink", asset))
	}
	return out, nil
}

// airflowParent is the DAG of an Airflow task known through OpenLineage: the job's namespace is
// an Airflow one (airflow://…, or the AIRFLOW integration) and its parent run facet names the DAG.
func airflowParent(a graph.Asset) (string, bool) {
	ns := a.Attrs["openlineage_namespace"]
	if ns == "" || a.Attrs["parent_job"] == "" {
		return "", false
	}
	if !strings.HasPrefix(strings.ToLower(ns), "airflow://") && !strings.EqualFold(a.Attrs["integration"], "airflow") {
		return "", false
	}
	return a.Attrs["parent_job"], true
}

// holdByHandStep is the hold of a job Data Workers cannot pause (a Spark or dbt job, an Airflow
// task whose DAG is unknown): a step for its owner naming the job, its next run and who owns it.
// It is never routed or run (Routable says why); the owner holds it and verify_incident judges.
func (dc *draftContext) holdByHandStep(a graph.Asset, job graph.Impact, sinks []string, next *time.Time) Proposal {
	when := "its next run is not known"
	if next != nil {
		when = fmt.Sprintf("its next run is %s (in %s)", next.UTC().Format("2006-01-02 15:04 UTC"), next.Sub(dc.src.Now()).Round(time.Minute))
	}
	owners := "no owner is recorded in the catalog"
	if len(a.Owners) > 0 {
		owners = "owned by " + strings.Join(a.Owners, ", ")
	}
	kind := a.Attrs["integration"]
	if kind == "" {
		kind = a.Attrs["orchestrator"]
	}
	if kind == "" {
		kind = job.URN.System()
	}
	how := fmt.Sprintf("Hold %s (%s) by hand before it pushes to %s: %s; %s", job.URN, strings.ToLower(kind), strings.Join(sinks, ", "), when, owners)
	return Proposal{Class: config.ClassPauseJob, Target: string(job.URN),
		Title:    "Hold by hand: " + how,
		Payload:  map[string]any{"job": string(job.URN)},
		Executor: ExecutorOwner, Reversible: true, Undo: "the owner resumes the job once verify_incident passes",
		Why: fmt.Sprintf("%s is downstream of %s (%d hops) and pushes to %s; Data Workers pauses only Airflow DAGs it can name, so its owner holds it",
			job.URN, dc.inc.Asset, job.Depth, strings.Join(sinks, ", ")),
		BlastRadius: append([]string{string(job.URN)}, sinks...), Origin: OriginGenerated,
		Validation: "a job in the context graph that pushes to an external sink; not a pausable Airflow DAG", ByHand: how}
}
