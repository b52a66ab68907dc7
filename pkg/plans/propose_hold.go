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
		if orch != "airflow" {
			dc.note(fmt.Sprintf("%s pushes to %s but is not an Airflow DAG: Data Workers pauses only Airflow DAGs; hold it by hand before its next run", h.job.URN, strings.Join(h.sinks, ", ")))
			continue
		}
		dag := a.Attrs["dag_id"]
		if dag == "" {
			dag = id
		}
		// Dispatch refuses a target that does not name its DAG (CheckTarget), so such a hold
		// would be approved and then never run: say so now instead of proposing it.
		if CheckTarget(config.ClassPauseJob, string(h.job.URN), map[string]any{"dag_id": dag}) != nil {
			dc.note(holdByHand(string(h.job.URN)) + fmt.Sprintf(" (it pushes to %s; its DAG is %s)", strings.Join(h.sinks, ", "), dag))
			continue
		}
		when := "it is not scheduled"
		if a.Attrs["paused"] == "true" {
			when = "it is paused already"
		} else if h.next != nil {
			when = fmt.Sprintf("its next run is %s (in %s)", h.next.UTC().Format("2006-01-02 15:04 UTC"), h.next.Sub(dc.src.Now()).Round(time.Minute))
		}
		out = append(out, Proposal{Class: config.ClassPauseJob, Target: string(h.job.URN),
			Title:    fmt.Sprintf("Pause %s before it pushes wrong numbers to %s", dag, strings.Join(h.sinks, ", ")),
			Payload:  map[string]any{"dag_id": dag},
			Executor: dc.executor(config.ClassPauseJob), Reversible: true,
			Undo: fmt.Sprintf("unpause_job {\"dag_id\": %q} once verify_incident passes (remediate records the undo)", dag),
			Why: fmt.Sprintf("%s is downstream of %s (%d hops) and pushes to %s; %s. Held until verify_incident passes, no wrong number leaves",
				h.job.URN, dc.inc.Asset, h.job.Depth, strings.Join(h.sinks, ", "), when),
			BlastRadius: append([]string{string(h.job.URN)}, h.sinks...), Origin: OriginGenerated,
			Validation: fmt.Sprintf("%s is a job in the context graph with dag_id %s; the payload is what remediate's pause_job dispatch reads", h.job.URN, dag)})
	}
	if len(out) == 0 && len(hs) == 0 {
		dc.note(fmt.Sprintf("no hold needed: no orchestrator job downstream of %s pushes to an external sink", asset))
	}
	return out, nil
}
