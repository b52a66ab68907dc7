package lifecycle

import (
	"context"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/remediation"
)

// A step that waits for a field mapping, or is the owner's by hand, never runs, even where the L3
// rule would run an unrequested step on a clean record; routing the plan leaves them out and says why.
func TestStepsWaitingForAMappingOrDoneByHandNeverRun(t *testing.T) {
	w := newRemediationWorld(t, "L3")
	w.cleanRecord(t)
	steps := append([]plans.Proposal{}, planSteps...)
	steps[1].NeedsMapping = []string{"weight_grams"}
	steps[0].ByHand = "Hold job:spark://c/push (spark) by hand before it pushes to sink:x"
	plan, err := plans.Save(context.Background(), w.st, plans.Plan{IncidentID: w.incident, CreatedBy: "dw-incidents", Proposals: steps}, *w.clock)
	if err != nil {
		t.Fatal(err)
	}
	w.fixData(t)
	out, err := w.remediate(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Actions) != 0 || len(w.airflow.Runs()) != remediation.CleanRecordRuns {
		t.Fatalf("a waiting step ran: %+v", out.Actions)
	}
	if r := skipReason(out, 2); !strings.Contains(r, "needs a mapping for weight_grams") || !strings.Contains(r, "field_mappings") {
		t.Errorf("step 2 skipped for %q", r)
	}
	if r := skipReason(out, 1); !strings.Contains(r, "by hand") {
		t.Errorf("step 1 skipped for %q", r)
	}

	routed, err := w.life.Route(context.Background(), RouteInput{PlanID: plan.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(routed.Requests) != 2 || routed.Requests[0].Class != steps[2].Class || len(routed.Waiting) != 2 ||
		!strings.Contains(routed.Waiting[1], "step 2") || !strings.Contains(routed.Waiting[1], "run propose_remediation again with field_mappings") {
		t.Errorf("routed %+v waiting %v", routed.Requests, routed.Waiting)
	}
}
