package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/plans"
)

// routingEstate has two Airflow jobs in the context graph, each in its own domain: the sync (orders,
// L2, approver ann, owned by the orders team) and a sandbox DAG at the given autonomy.
func routingEstate(t *testing.T, sandboxAutonomy string) (*estate, *Service) {
	t.Helper()
	e := newEstate(t)
	e.cfg.Domains = []config.Domain{
		{Name: "orders", Assets: []string{"job:airflow/sync_*"}, Autonomy: "L2", Approvers: []config.Approver{{Name: "ann", TokenSHA256: tokenHash(approverToken)}}},
		{Name: "sandbox", Assets: []string{"job:airflow/sandbox_*"}, Autonomy: sandboxAutonomy, Approvers: []config.Approver{{Name: "intern", TokenSHA256: tokenHash("x")}}},
	}
	if _, err := graph.New(e.st, e.now).Import(context.Background(), graph.Batch{Source: "test:airflow", Assets: []graph.Asset{
		{URN: "job:airflow/sync_orders", Kind: graph.KindJob, Owners: []string{"orders-team"}},
		{URN: "job:airflow/sandbox_x", Kind: graph.KindJob},
	}}); err != nil {
		t.Fatal(err)
	}
	return e, e.service(t, nil)
}

func pause(dag string) approvals.Proposal {
	return approvals.Proposal{Class: config.ClassPauseJob, Target: "job:airflow/" + dag, Title: "Pause " + dag, Payload: map[string]any{"dag_id": dag}}
}

func TestRouteChecksEveryRawProposalBeforeRoutingAny(t *testing.T) {
	e, life := routingEstate(t, "L2")
	bad := pause("sandbox_x")
	bad.Target = "job:airflow/sync_orders" // the payload changes another asset than its target
	_, err := life.Route(context.Background(), RouteInput{Proposals: []approvals.Proposal{pause("sync_orders"), bad}})
	if err == nil || !strings.Contains(err.Error(), "nothing was requested") {
		t.Fatalf("err = %v", err)
	}
	var n int
	if err := e.st.DB.QueryRow(`SELECT count(*) FROM approval_requests`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d requests stored (%v)", n, err)
	}
}

// A request refused after another was created returns the one created with the error.
func TestRouteReturnsWhatItCreatedBeforeARefusal(t *testing.T) {
	_, life := routingEstate(t, "L1")
	out, err := life.Route(context.Background(), RouteInput{Proposals: []approvals.Proposal{pause("sync_orders"), pause("sandbox_x")}})
	if err == nil || !strings.Contains(err.Error(), "proposals[1]") || !strings.Contains(err.Error(), "domain sandbox") {
		t.Fatalf("err = %v", err)
	}
	if len(out.Requests) != 1 || out.Requests[0].Target != "job:airflow/sync_orders" || out.Requests[0].Status != approvals.StatusPending {
		t.Fatalf("%+v", out.Requests)
	}
}

// A stored plan is routed in order for its incident, with the owners of what it touches copied.
func TestRouteAStoredPlanCopiesTheOwnersOfWhatItTouches(t *testing.T) {
	ctx := context.Background()
	e, life := routingEstate(t, "L2")
	o, err := e.incs.Open(ctx, "warehouse:sqlite/main.orders", "null_rate", "sev2", "amount_cents null", "test")
	if err != nil {
		t.Fatal(err)
	}
	p := pause("sync_orders")
	plan, err := plans.Save(ctx, e.st, plans.Plan{IncidentID: o.ID, CreatedBy: "test", Proposals: []plans.Proposal{{Order: 1, Class: p.Class, Target: p.Target, Title: p.Title,
		Payload: p.Payload, Executor: plans.ExecutorDataWorkers}}}, e.now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := life.Route(ctx, RouteInput{IncidentID: o.ID + 1, PlanID: plan.ID}); err == nil || !strings.Contains(err.Error(), "belongs to incident") {
		t.Fatalf("a plan routed for another incident: %v", err)
	}
	out, err := life.Route(ctx, RouteInput{PlanID: plan.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Requests) != 1 || out.Requests[0].IncidentID != o.ID || !strings.Contains(strings.Join(out.Requests[0].Copied, ","), "orders-team") {
		t.Fatalf("%+v", out.Requests)
	}
}

// With nothing to propose (no diagnosis, no job to hold) nothing is stored, and the reason is given.
func TestProposeRefusesAnEmptyPlan(t *testing.T) {
	ctx := context.Background()
	e, life := routingEstate(t, "L2")
	o, err := e.incs.Open(ctx, "warehouse:sqlite/main.orders", "null_rate", "sev2", "amount_cents null", "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := life.Propose(ctx, ProposeInput{IncidentID: o.ID}); err == nil || !strings.Contains(err.Error(), "nothing to propose") || !strings.Contains(err.Error(), "diagnose_incident") {
		t.Fatalf("err = %v", err)
	}
	if _, err := plans.Latest(ctx, e.st, o.ID); !errors.Is(err, plans.ErrNoPlan) {
		t.Fatalf("a plan was stored: %v", err)
	}
}
