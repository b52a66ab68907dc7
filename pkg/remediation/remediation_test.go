package remediation

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/orchestrators"
	"github.com/dataworkers/dw/pkg/orchestrators/orchtest"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func sum(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

type world struct {
	exec    *Executor
	svc     *approvals.Service
	st      *store.Store
	opts    store.Options // how process opens the same store again
	airflow *orchtest.Airflow
	dbt     *orchtest.DBTCloud
	cfg     *config.Config
}

// testConfig is the world's config: the stand-ins' addresses and one billing domain at autonomy.
func testConfig(airflowURL, airflowToken, dbtURL, autonomy string) *config.Config {
	return &config.Config{
		Airflow: &config.Airflow{URL: airflowURL, APIVersion: "v2", Token: airflowToken, Timeout: 5 * time.Second},
		DBT:     &config.DBT{Cloud: &config.DBTCloud{URL: dbtURL, AccountID: 7, Token: "svc", Timeout: 5 * time.Second}},
		Domains: []config.Domain{{Name: "billing", Assets: []string{"job:*", "dbt:*", "flink:*", "connect:*", "schema:*"}, Autonomy: autonomy,
			Approvers: []config.Approver{{Name: "ann", TokenSHA256: sum("tok")}}}},
	}
}

// executorFor is one process's approval service and executor on st.
func executorFor(st *store.Store, cfg *config.Config) (*approvals.Service, *Executor) {
	svc := approvals.New(st, cfg, time.Now, nil)
	return svc, New(st, cfg, svc, Backends{
		Airflow:  func() (*orchestrators.Airflow, error) { return orchestrators.NewAirflow(cfg.Airflow) },
		DBTCloud: func() (*orchestrators.DBTCloud, error) { return orchestrators.NewDBTCloud(cfg.DBT) },
	}, time.Now)
}

func newWorld(t *testing.T, autonomy string) *world {
	t.Helper()
	return newWorldOn(t, autonomy, storetest.Engine())
}

func newWorldOn(t *testing.T, autonomy string, d store.Dialect) *world {
	t.Helper()
	path, opts := storetest.LocationOn(t, d)
	st, err := store.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	af := orchtest.NewAirflow("v2", map[string]bool{"sync_metered_usage_to_stripe": false})
	t.Cleanup(af.Close)
	dbt := orchtest.NewDBTCloud(7, "svc", 55)
	t.Cleanup(dbt.Close)
	cfg := testConfig(af.URL, af.Token, dbt.URL, autonomy)
	svc, exec := executorFor(st, cfg)
	return &world{exec: exec, svc: svc, st: st, opts: opts, airflow: af, dbt: dbt, cfg: cfg}
}

func (w *world) approved(t *testing.T, p approvals.Proposal) approvals.Request {
	t.Helper()
	ctx := context.Background()
	r, err := w.svc.Request(ctx, p, "dw-incidents", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err = w.svc.Decide(ctx, approvals.Decision{RequestID: r.ID, Approver: "ann", Token: "tok", Approve: true, PayloadSHA256: r.PayloadSHA256})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var pause = approvals.Proposal{IncidentID: 3, Class: config.ClassPauseJob, Target: "job:airflow/sync_metered_usage_to_stripe",
	Title: "Pause the 23:00 Stripe sync", Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}}

func TestAnApprovedPauseRunsOnceAndRecordsItsUndo(t *testing.T) {
	w := newWorld(t, "L2")
	r := w.approved(t, pause)
	a, err := w.exec.Run(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !w.airflow.Paused("sync_metered_usage_to_stripe") || a.Status != StatusSucceeded || a.ApprovedBy != "ann" {
		t.Fatalf("%+v", a)
	}
	if !a.Undo.Possible || a.Undo.Class != config.ClassUnpauseJob || a.Result["next_run"] != "2026-11-29T23:00:00Z" {
		t.Fatalf("undo %+v result %+v", a.Undo, a.Result)
	}
	if _, err := w.exec.Run(context.Background(), r.ID); err == nil || !strings.Contains(err.Error(), "used once") {
		t.Fatalf("second run: %v", err)
	}
	as, _ := w.exec.ForIncident(context.Background(), 3)
	if len(as) != 1 {
		t.Fatalf("%d actions recorded", len(as))
	}
}

func TestNothingRunsWithoutApprovalOrWhileStopped(t *testing.T) {
	w := newWorld(t, "L3")
	ctx := context.Background()
	pending, _ := w.svc.Request(ctx, pause, "dw-incidents", nil)
	if _, err := w.exec.Run(ctx, pending.ID); err == nil || !strings.Contains(err.Error(), "not approved") {
		t.Fatalf("pending request ran: %v", err)
	}
	r := w.approved(t, pause)
	if _, err := w.svc.SetStop(ctx, "ann", "tok", true, "numbers wrong"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.exec.Run(ctx, r.ID); !errors.Is(err, approvals.ErrStopped) {
		t.Fatalf("ran during the stop: %v", err)
	}
	if w.airflow.Paused("sync_metered_usage_to_stripe") {
		t.Fatal("the DAG was paused during the stop")
	}
}

func TestAnEditedPayloadVoidsTheApprovalAtDispatch(t *testing.T) {
	w := newWorld(t, "L2")
	r := w.approved(t, pause)
	// Someone edits the stored payload after the approval.
	w.st.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE approval_requests SET payload = '{"dag_id":"another_dag"}' WHERE id = ?`, r.ID)
		return err
	})
	if _, err := w.exec.Run(context.Background(), r.ID); !errors.Is(err, approvals.ErrVoided) {
		t.Fatalf("err = %v", err)
	}
}

func TestOwnerOnlyClassesAreNeverExecuted(t *testing.T) {
	w := newWorld(t, "L3")
	for _, p := range []approvals.Proposal{
		{Class: config.ClassFlinkStatement, Target: "flink:statement/usage-hourly-rollup", Title: "Deploy the corrected statement",
			Payload: map[string]any{"statement": "INSERT INTO x SELECT 1", "steps": []any{"Stop usage-hourly-rollup", "Create usage-hourly-rollup-v2 from 00:00 offsets"}}},
		{Class: config.ClassRestartConnector, Target: "connect:connector/orders-sink", Title: "Restart failed task 1", Payload: map[string]any{"connector": "orders-sink"}},
		{Class: config.ClassDBTCode, Target: "dbt:model.billing.fct_billable_egress", Title: "Point the model at usage_hourly_v2", Payload: map[string]any{"diff": "-a\n+b"}},
	} {
		r := w.approved(t, p)
		a, err := w.exec.Run(context.Background(), r.ID)
		if err != nil || a.Status != StatusOwnerSteps || len(a.Steps) < 2 {
			t.Fatalf("%s: %+v %v", p.Class, a, err)
		}
	}
	if len(w.airflow.Runs()) != 0 {
		t.Fatal("an owner-only action reached an orchestrator")
	}
}

func TestDBTRunAndTriggerDispatch(t *testing.T) {
	w := newWorld(t, "L2")
	r := w.approved(t, approvals.Proposal{Class: config.ClassTriggerDBTRun, Target: "dbt:model.billing.fct_billable_egress", Title: "Rebuild today",
		Payload: map[string]any{"job_id": 55}})
	a, err := w.exec.Run(context.Background(), r.ID)
	if err != nil || a.Result["run_id"] == nil || len(w.dbt.Cause) != 1 || !strings.Contains(w.dbt.Cause[0], "approval #1 by ann") {
		t.Fatalf("%+v %v %v", a, err, w.dbt.Cause)
	}
	r = w.approved(t, approvals.Proposal{Class: config.ClassTriggerJob, Target: "job:airflow/sync_metered_usage_to_stripe", Title: "Re-send today",
		Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}})
	if a, err = w.exec.Run(context.Background(), r.ID); err != nil || len(w.airflow.Runs()) != 1 {
		t.Fatalf("%+v %v", a, err)
	}
	// A backend failure is a failed action with the error, never a success.
	r = w.approved(t, approvals.Proposal{Class: config.ClassTriggerDBTRun, Target: "dbt:model.x", Title: "Unknown job", Payload: map[string]any{"job_id": 99}})
	a, err = w.exec.Run(context.Background(), r.ID)
	if err == nil || a.Status != StatusFailed || !strings.Contains(a.Error, "Requested resource not found") {
		t.Fatalf("%+v %v", a, err)
	}
}

func hashOf(t *testing.T, p map[string]any) string {
	t.Helper()
	_, h, err := approvals.Canonical(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestL3NeedsACleanRecordOfVerifiedRuns(t *testing.T) {
	ctx := context.Background()
	pauseHash := hashOf(t, pause.Payload)
	w := newWorld(t, "L3")
	ok, why, _ := w.exec.MayActWithoutNewApproval(ctx, config.ClassPauseJob, pause.Target, pauseHash)
	if ok || !strings.Contains(why, "only 0") {
		t.Fatalf("%v %s", ok, why)
	}
	for i := 0; i < CleanRecordRuns; i++ {
		r := w.approved(t, pause)
		a, err := w.exec.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		w.exec.MarkVerified(ctx, a.ID, true)
	}
	if ok, why, _ = w.exec.MayActWithoutNewApproval(ctx, config.ClassPauseJob, pause.Target, pauseHash); !ok {
		t.Fatalf("clean record refused: %s", why)
	}
	if ok, _, _ = w.exec.MayActWithoutNewApproval(ctx, config.ClassFlinkStatement, "flink:statement/x", pauseHash); ok {
		t.Fatal("an owner-only class passed the L3 rule")
	}
	// One failed verification spoils the record.
	r := w.approved(t, pause)
	a, _ := w.exec.Run(ctx, r.ID)
	w.exec.MarkVerified(ctx, a.ID, false)
	if ok, why, _ = w.exec.MayActWithoutNewApproval(ctx, config.ClassPauseJob, pause.Target, pauseHash); ok || !strings.Contains(why, "did not verify") {
		t.Fatalf("%v %s", ok, why)
	}
	// L2 never acts without a new approval.
	w2 := newWorld(t, "L2")
	if ok, why, _ = w2.exec.MayActWithoutNewApproval(ctx, config.ClassPauseJob, pause.Target, pauseHash); ok || !strings.Contains(why, "needs L3") {
		t.Fatalf("%v %s", ok, why)
	}
}

// cleanRecord gives class on target CleanRecordRuns approved, succeeded and verified runs.
func (w *world) cleanRecord(t *testing.T, p approvals.Proposal) {
	t.Helper()
	for i := 0; i < CleanRecordRuns; i++ {
		a, err := w.exec.Run(context.Background(), w.approved(t, p).ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.exec.MarkVerified(context.Background(), a.ID, true); err != nil {
			t.Fatal(err)
		}
	}
}

// plan stores a plan for a new incident and returns it.
func (w *world) plan(t *testing.T, props ...plans.Proposal) plans.Plan {
	t.Helper()
	ctx := context.Background()
	inc, err := incidents.New(w.st, time.Now).Open(ctx, "warehouse:sqlite/main.usage_hourly", "null_rate", "sev2", "nulls", "test")
	if err != nil {
		t.Fatal(err)
	}
	p, err := plans.Save(ctx, w.st, plans.Plan{IncidentID: inc.ID, CreatedBy: "dw-incidents", Proposals: props}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func stepOf(t *testing.T, p plans.Plan, order int) PlanStep {
	t.Helper()
	for _, pr := range p.Proposals {
		if pr.Order == order {
			_, h, err := approvals.Canonical(pr.Payload)
			if err != nil {
				t.Fatal(err)
			}
			return PlanStep{IncidentID: p.IncidentID, PlanID: p.ID, Order: order, PayloadSHA256: h}
		}
	}
	t.Fatalf("no step %d", order)
	return PlanStep{}
}

var rerun = plans.Proposal{Order: 2, Class: config.ClassTriggerJob, Target: "job:airflow/sync_metered_usage_to_stripe", Title: "Re-send today's usage",
	Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}, Executor: plans.ExecutorDataWorkers, Reversible: true}

func TestL3RunsAPlanStepWithACleanRecordOnceAndRecordsTheRule(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L3")
	w.cleanRecord(t, approvals.Proposal{Class: rerun.Class, Target: rerun.Target, Title: "earlier rerun", Payload: rerun.Payload})
	p := w.plan(t, rerun)
	a, err := w.exec.RunPlanStep(ctx, stepOf(t, p, 2))
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != StatusSucceeded || a.Authority != AuthorityL3 || a.RequestID != 0 || a.ApprovedBy != "" || len(a.Record) != CleanRecordRuns ||
		!strings.Contains(a.Rule, "L3 clean record") || !strings.Contains(a.Rule, "#1, #2, #3") || a.PlanID != p.ID || a.PlanOrder != 2 || a.Undo.Description == "" {
		t.Fatalf("%+v", a)
	}
	if runs := w.airflow.Runs(); len(runs) != CleanRecordRuns+1 || !strings.Contains(runs[CleanRecordRuns]["note"].(string), "L3, no new approval") {
		t.Fatalf("runs %v", runs)
	}
	// Stored as such, and a step runs once.
	stored, _ := w.exec.ForIncident(ctx, p.IncidentID)
	if len(stored) != 1 || stored[0].Authority != AuthorityL3 || stored[0].Rule != a.Rule || len(stored[0].Record) != CleanRecordRuns || stored[0].PayloadSHA256 != a.PayloadSHA256 {
		t.Fatalf("stored %+v", stored)
	}
	if _, err := w.exec.RunPlanStep(ctx, stepOf(t, p, 2)); err == nil || !strings.Contains(err.Error(), "already ran") {
		t.Fatalf("second run: %v", err)
	}
	// Its own run awaits verification, which keeps the next one waiting for a person.
	if ok, why, _ := w.exec.MayActWithoutNewApproval(ctx, rerun.Class, rerun.Target, a.PayloadSHA256); ok || !strings.Contains(why, "1 still await verification") {
		t.Fatalf("%v %s", ok, why)
	}
}

func TestL3RefusesWhatTheRuleDoesNotCover(t *testing.T) {
	ctx := context.Background()
	schema := plans.Proposal{Order: 1, Class: config.ClassRegisterSchema, Target: "schema:api-usage-value", Title: "Register v13",
		Payload: map[string]any{"subject": "api-usage-value"}, Executor: plans.ExecutorDataWorkers, Reversible: true}
	flink := plans.Proposal{Order: 3, Class: config.ClassFlinkStatement, Target: "flink:statement/usage-hourly-rollup", Title: "Corrected statement",
		Payload: map[string]any{"statement": "INSERT INTO x SELECT 1"}, Executor: plans.ExecutorOwner, Reversible: true}
	for _, tc := range []struct {
		name     string
		autonomy string
		prepare  func(w *world)
		step     plans.Proposal
		want     string
	}{
		{"L2", "L2", func(w *world) {
			w.cleanRecord(t, approvals.Proposal{Class: rerun.Class, Target: rerun.Target, Title: "x", Payload: rerun.Payload})
		}, rerun, "needs L3"},
		{"a failed earlier run", "L3", func(w *world) {
			w.cleanRecord(t, approvals.Proposal{Class: rerun.Class, Target: rerun.Target, Title: "x", Payload: rerun.Payload})
			// Airflow refuses the run (a revoked token): a failed run of this class on this target.
			token := w.cfg.Airflow.Token
			w.cfg.Airflow.Token = "revoked"
			w.exec.Run(ctx, w.approved(t, approvals.Proposal{Class: rerun.Class, Target: rerun.Target, Title: "x", Payload: rerun.Payload}).ID)
			w.cfg.Airflow.Token = token
		}, rerun, "1 runs failed"},
		{"an unverified earlier run", "L3", func(w *world) {
			w.cleanRecord(t, approvals.Proposal{Class: rerun.Class, Target: rerun.Target, Title: "x", Payload: rerun.Payload})
			w.exec.Run(ctx, w.approved(t, approvals.Proposal{Class: rerun.Class, Target: rerun.Target, Title: "y", Payload: rerun.Payload}).ID)
		}, rerun, "1 still await verification"},
		{"a short record", "L3", func(w *world) {}, rerun, "only 0 approved"},
		{"register_schema", "L3", func(w *world) {}, schema, "not a reversible class"},
		{"owner-only", "L3", func(w *world) {}, flink, "executed by owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.autonomy)
			tc.prepare(w)
			before := len(w.airflow.Runs())
			p := w.plan(t, tc.step)
			_, err := w.exec.RunPlanStep(ctx, stepOf(t, p, tc.step.Order))
			if !errors.Is(err, ErrNeedsApproval) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrNeedsApproval mentioning %q", err, tc.want)
			}
			if as, _ := w.exec.ForIncident(ctx, p.IncidentID); len(as) != 0 || len(w.airflow.Runs()) != before {
				t.Fatalf("something ran: %+v", as)
			}
		})
	}
}

func TestL3NeverGoesAroundARequestTheStopOrAnEditedPayload(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L3")
	w.cleanRecord(t, approvals.Proposal{Class: rerun.Class, Target: rerun.Target, Title: "x", Payload: rerun.Payload})
	p := w.plan(t, rerun)
	step := stepOf(t, p, 2)

	// A hash other than the stored payload's voids the step.
	edited := step
	edited.PayloadSHA256 = sum("something else")
	if _, err := w.exec.RunPlanStep(ctx, edited); !errors.Is(err, approvals.ErrVoided) {
		t.Fatalf("edited payload: %v", err)
	}
	// The stop blocks it.
	if _, err := w.svc.SetStop(ctx, "ann", "tok", true, "numbers wrong"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.exec.RunPlanStep(ctx, step); !errors.Is(err, approvals.ErrStopped) {
		t.Fatalf("ran during the stop: %v", err)
	}
	if _, err := w.svc.SetStop(ctx, "ann", "tok", false, "fixed"); err != nil {
		t.Fatal(err)
	}
	// A request for the same class and target (here rejected) is never bypassed.
	r, err := w.svc.Request(ctx, approvals.Proposal{IncidentID: p.IncidentID, Class: rerun.Class, Target: rerun.Target, Title: rerun.Title, Payload: rerun.Payload}, "dw-incidents", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.Decide(ctx, approvals.Decision{RequestID: r.ID, Approver: "ann", Token: "tok", Approve: false}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.exec.RunPlanStep(ctx, step); !errors.Is(err, ErrNeedsApproval) || !strings.Contains(err.Error(), "has an approval request") {
		t.Fatalf("rejected step ran: %v", err)
	}
	// A newer plan replaces the old one's steps.
	if _, err := plans.Save(ctx, w.st, plans.Plan{IncidentID: p.IncidentID, CreatedBy: "dw-incidents"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.exec.RunPlanStep(ctx, step); !errors.Is(err, ErrNeedsApproval) || !strings.Contains(err.Error(), "replaced") {
		t.Fatalf("stale plan: %v", err)
	}
	if len(w.airflow.Runs()) != CleanRecordRuns {
		t.Fatalf("runs %d", len(w.airflow.Runs()))
	}
}

// process is a second remediate process on the same store file: its own connections and executor.
func (w *world) process(t *testing.T) *Executor {
	t.Helper()
	st, err := store.Open(context.Background(), w.st.Path(), w.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, e := executorFor(st, w.cfg)
	return e
}

// race runs fn on n executors (separate store handles) at once and returns their errors.
func race(t *testing.T, w *world, n int, fn func(*Executor) error) []error {
	t.Helper()
	execs := make([]*Executor, n)
	for i := range execs {
		execs[i] = w.process(t)
	}
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, e := range execs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(e)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

func TestRacingProcessesDispatchAPlanStepOnce(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L3")
	w.cleanRecord(t, approvals.Proposal{Class: rerun.Class, Target: rerun.Target, Title: "earlier rerun", Payload: rerun.Payload})
	p := w.plan(t, rerun)
	step := stepOf(t, p, 2)
	errs := race(t, w, 6, func(e *Executor) error { _, err := e.RunPlanStep(ctx, step); return err })
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	if runs := w.airflow.Runs(); len(runs) != CleanRecordRuns+1 || ok != 1 {
		t.Fatalf("%d dispatches after the record (want 1), %d runs reported success; errors %v", len(runs)-CleanRecordRuns, ok, errs)
	}
	if as, _ := w.exec.ForIncident(ctx, p.IncidentID); len(as) != 1 || as[0].Status != StatusSucceeded {
		t.Fatalf("recorded %+v", as)
	}
}

func TestRacingProcessesDispatchAnApprovalOnce(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L2")
	r := w.approved(t, approvals.Proposal{IncidentID: 3, Class: config.ClassTriggerJob, Target: "job:airflow/sync_metered_usage_to_stripe",
		Title: "Re-send today", Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}})
	errs := race(t, w, 6, func(e *Executor) error { _, err := e.Run(ctx, r.ID); return err })
	if runs := w.airflow.Runs(); len(runs) != 1 {
		t.Fatalf("%d dispatches of one approval; errors %v", len(runs), errs)
	}
	if as, _ := w.exec.ForIncident(ctx, 3); len(as) != 1 || as[0].Status != StatusSucceeded || as[0].PayloadSHA256 != r.PayloadSHA256 {
		t.Fatalf("recorded %+v", as)
	}
}

func TestAClaimRechecksTheStop(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L2")
	if _, err := w.svc.SetStop(ctx, "ann", "tok", true, "numbers wrong"); err != nil {
		t.Fatal(err)
	}
	a := Action{RequestID: 1, Class: config.ClassPauseJob, Target: pause.Target, Status: StatusRunning, Authority: AuthorityApproval,
		StartedAt: time.Now(), FinishedAt: time.Now()}
	nothing := func(*sql.Tx) (int64, error) { return 0, nil }
	if _, err := w.exec.claim(ctx, &a, nothing); !errors.Is(err, approvals.ErrStopped) {
		t.Fatalf("claimed during the stop: %v", err)
	}
	var n int
	if err := w.st.DB.QueryRow(`SELECT count(*) FROM actions`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d actions recorded during the stop (%v)", n, err)
	}
}

func TestAFailedVerificationIsNeverRaised(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L2")
	a, err := w.exec.Run(ctx, w.approved(t, pause).ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.exec.MarkVerified(ctx, a.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := w.exec.MarkVerified(ctx, a.ID, true); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := w.st.DB.QueryRow(`SELECT verified FROM actions WHERE id = ?`, a.ID).Scan(&v); err != nil || v != 0 {
		t.Fatalf("verified = %d (%v), want the failure kept", v, err)
	}
}

func TestTheCleanRecordIsThisPayloadOnEveryDomainCaseInsensitively(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L3")
	// The record was earned on the same target spelled in upper case, with the step's payload.
	w.cleanRecord(t, approvals.Proposal{Class: rerun.Class, Target: strings.ToUpper(rerun.Target), Title: "x", Payload: rerun.Payload})
	h := hashOf(t, rerun.Payload)
	if ok, why, _ := w.exec.MayActWithoutNewApproval(ctx, rerun.Class, rerun.Target, h); !ok {
		t.Fatalf("case-insensitive record refused: %s", why)
	}
	// Another payload on the same class and target has no record of its own.
	other := hashOf(t, map[string]any{"dag_id": "sync_metered_usage_to_stripe", "conf": map[string]any{"full": true}})
	if ok, why, _ := w.exec.MayActWithoutNewApproval(ctx, rerun.Class, rerun.Target, other); ok || !strings.Contains(why, "only 0") {
		t.Fatalf("another payload passed: %v %s", ok, why)
	}
	// A second domain covering the target below L3 refuses.
	w.cfg.Domains = append(w.cfg.Domains, config.Domain{Name: "finance", Assets: []string{"job:airflow/*"}, Autonomy: "L1"})
	if ok, why, _ := w.exec.MayActWithoutNewApproval(ctx, rerun.Class, rerun.Target, h); ok || !strings.Contains(why, "domain finance") {
		t.Fatalf("an L1 domain was ignored: %v %s", ok, why)
	}
}

func TestL3RunsATriggerTheProposalCallsIrreversible(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L3")
	w.cleanRecord(t, approvals.Proposal{Class: rerun.Class, Target: rerun.Target, Title: "x", Payload: rerun.Payload})
	step := rerun
	step.Reversible = false // pkg/plans marks triggers not reversible; config.L3Eligible is the rule
	p := w.plan(t, step)
	if a, err := w.exec.RunPlanStep(ctx, stepOf(t, p, 2)); err != nil || a.Status != StatusSucceeded {
		t.Fatalf("%+v %v", a, err)
	}
}

func TestRequestForMatchesClassTargetAndPayload(t *testing.T) {
	reqs := []approvals.Request{
		{ID: 1, Class: rerun.Class, Target: rerun.Target, PayloadSHA256: hashOf(t, map[string]any{"dag_id": "other"})},
		{ID: 2, Class: rerun.Class, Target: strings.ToUpper(rerun.Target), PayloadSHA256: hashOf(t, rerun.Payload)},
	}
	used := map[int64]bool{}
	if i := RequestFor(rerun, reqs, used); i != 1 || !used[2] {
		t.Fatalf("RequestFor = %d, used %v", i, used)
	}
	if i := RequestFor(rerun, reqs, used); i != -1 {
		t.Fatalf("a used request matched again: %d", i)
	}
	// A request of the same class and target for another payload leaves the step unrequested.
	if got := Unrequested(plans.Plan{Proposals: []plans.Proposal{rerun}}, reqs[:1]); len(got) != 1 {
		t.Fatalf("Unrequested = %+v", got)
	}
	if got := Unrequested(plans.Plan{Proposals: []plans.Proposal{rerun}}, reqs); len(got) != 0 {
		t.Fatalf("Unrequested = %+v", got)
	}
}

func TestTruncateCutsOnARuneBoundary(t *testing.T) {
	for _, tc := range []struct {
		s string
		n int
	}{{strings.Repeat("é", 200), 254}, {strings.Repeat("a", 253) + "€€", 255}, {"short", 255}, {strings.Repeat("日本", 100), 10}} {
		got := truncate(tc.s, tc.n)
		if len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("truncate(%d bytes, %d) = %d bytes, valid %v", len(tc.s), tc.n, len(got), utf8.ValidString(got))
		}
	}
}

// forge writes an approved request straight into the store, around request_approval's checks, as
// a tampered database or another writer could.
func (w *world) forge(t *testing.T, class, target string, payload map[string]any) int64 {
	t.Helper()
	raw, hash, err := approvals.Canonical(payload)
	if err != nil {
		t.Fatal(err)
	}
	now := store.Timestamp(time.Now())
	var id int64
	if err := w.st.DB.QueryRow(`INSERT INTO approval_requests(class, target, title, payload, payload_sha256, domain, approvers, copied, escalation,
		requested_by, requested_at, expires_at, status, decided_by, decided_at) VALUES (?, ?, 'forged', ?, ?, 'billing', '["ann"]', '[]', '[]',
		'dw-incidents', ?, ?, 'approved', 'ann', ?) RETURNING id`, class, target, string(raw), hash, now, store.Timestamp(time.Now().Add(time.Hour)), now).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// The target decided whose approval a request needed; a request whose payload changes another
// asset is refused right before dispatch, whoever wrote it.
func TestARequestWhosePayloadChangesAnotherTargetIsNotDispatched(t *testing.T) {
	ctx := context.Background()
	stripe := map[string]any{"dag_id": "sync_metered_usage_to_stripe"}
	for _, tc := range []struct {
		name, class, target string
		payload             map[string]any
		want                string
	}{
		{"pause_job", config.ClassPauseJob, "job:airflow/sandbox_x", stripe, `payload.dag_id "sync_metered_usage_to_stripe" is not the DAG job:airflow/sandbox_x names`},
		{"unpause_job", config.ClassUnpauseJob, "job:airflow/sandbox_x", stripe, "is not the DAG job:airflow/sandbox_x names"},
		{"trigger_job", config.ClassTriggerJob, "job:airflow/sandbox_x", stripe, "is not the DAG job:airflow/sandbox_x names"},
		{"a job of another orchestrator", config.ClassPauseJob, "job:dagster/sync_metered_usage_to_stripe", stripe, "not an Airflow DAG"},
		{"a target that is not a job", config.ClassPauseJob, "dbt:model.billing.fct_billable_egress", stripe, "not an orchestrator job"},
		{"a payload without dag_id", config.ClassTriggerJob, "job:airflow/sandbox_x", map[string]any{"conf": map[string]any{}}, `payload.dag_id ""`},
		{"trigger_dbt_run aimed at a job", config.ClassTriggerDBTRun, "job:airflow/sandbox_x", map[string]any{"job_id": 55}, "a trigger_dbt_run targets the dbt asset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "L2")
			id := w.forge(t, tc.class, tc.target, tc.payload)
			_, err := w.exec.Run(ctx, id)
			if !errors.Is(err, approvals.ErrVoided) || !errors.Is(err, plans.ErrTargetMismatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrVoided and ErrTargetMismatch mentioning %q", err, tc.want)
			}
			var n int
			if err := w.st.DB.QueryRow(`SELECT count(*) FROM actions`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d actions recorded (%v)", n, err)
			}
			if w.airflow.Paused("sync_metered_usage_to_stripe") || len(w.airflow.Runs()) != 0 || len(w.dbt.Causes()) != 0 {
				t.Fatal("something was dispatched")
			}
		})
	}
	// The same row with the payload of its own target runs.
	w := newWorld(t, "L2")
	if a, err := w.exec.Run(ctx, w.forge(t, config.ClassPauseJob, "job:airflow/sync_metered_usage_to_stripe", stripe)); err != nil || a.Status != StatusSucceeded {
		t.Fatalf("matching target refused: %+v %v", a, err)
	}
}

// L0 and L1 change nothing: an approval granted at L2 does not run once the domain is lowered.
func TestAnApprovalDoesNotRunOnceItsDomainIsBelowL2(t *testing.T) {
	ctx := context.Background()
	for _, level := range []string{"L0", "L1"} {
		t.Run(level, func(t *testing.T) {
			w := newWorld(t, "L2")
			r := w.approved(t, pause)
			w.cfg.Domains[0].Autonomy = level
			_, err := w.exec.Run(ctx, r.ID)
			if !errors.Is(err, approvals.ErrAutonomy) || !strings.Contains(err.Error(), "domains[0].autonomy") || !strings.Contains(err.Error(), "domain billing") {
				t.Fatalf("err = %v, want ErrAutonomy naming domains[0].autonomy", err)
			}
			var n int
			if err := w.st.DB.QueryRow(`SELECT count(*) FROM actions`).Scan(&n); err != nil || n != 0 || w.airflow.Paused("sync_metered_usage_to_stripe") {
				t.Fatalf("%d actions recorded, paused %v (%v)", n, w.airflow.Paused("sync_metered_usage_to_stripe"), err)
			}
			// Raised back to L2, the same approval runs.
			w.cfg.Domains[0].Autonomy = "L2"
			if a, err := w.exec.Run(ctx, r.ID); err != nil || a.Status != StatusSucceeded || !w.airflow.Paused("sync_metered_usage_to_stripe") {
				t.Fatalf("at L2: %+v %v", a, err)
			}
		})
	}
	// A second domain covering the target below L2 is enough to refuse.
	w := newWorld(t, "L2")
	r := w.approved(t, pause)
	w.cfg.Domains = append(w.cfg.Domains, config.Domain{Name: "sandbox", Assets: []string{"job:airflow/*"}, Autonomy: "L1"})
	if _, err := w.exec.Run(ctx, r.ID); !errors.Is(err, approvals.ErrAutonomy) || !strings.Contains(err.Error(), "domains[1].autonomy") {
		t.Fatalf("err = %v", err)
	}
}

// At L3 no person sees the step, so the same rule holds before an L3 dispatch: a stored plan step
// (written around propose_remediation's checks) whose payload changes another job than its target
// does not run, even on a clean record of that very target and payload.
func TestAnL3PlanStepWhosePayloadChangesAnotherTargetIsNotDispatched(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L3")
	step := plans.Proposal{Order: 1, Class: config.ClassTriggerJob, Target: "job:airflow/sandbox_x", Title: "Re-run sandbox",
		Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}, Executor: plans.ExecutorDataWorkers, Reversible: true}
	h := hashOf(t, step.Payload)
	for i := 0; i < CleanRecordRuns; i++ {
		req := w.forge(t, step.Class, step.Target, step.Payload)
		if _, err := w.st.DB.Exec(`INSERT INTO actions(request_id, class, target, payload, approved_by, status, started_at, finished_at, verified, authority, payload_sha256)
			VALUES (?, ?, ?, '{"dag_id":"sync_metered_usage_to_stripe"}', 'ann', 'succeeded', '2026-11-28T12:00:00Z', '2026-11-28T12:00:00Z', 1, 'approval', ?)`,
			req, step.Class, step.Target, h); err != nil {
			t.Fatal(err)
		}
	}
	if ok, why, _ := w.exec.MayActWithoutNewApproval(ctx, step.Class, step.Target, h); !ok {
		t.Fatalf("setup: the record is not clean: %s", why)
	}
	p := w.plan(t, step)
	_, err := w.exec.RunPlanStep(ctx, stepOf(t, p, 1))
	if !errors.Is(err, approvals.ErrVoided) || !errors.Is(err, plans.ErrTargetMismatch) {
		t.Fatalf("err = %v, want ErrVoided and ErrTargetMismatch", err)
	}
	if len(w.airflow.Runs()) != 0 {
		t.Fatal("the Stripe DAG was triggered")
	}
	if as, _ := w.exec.ForIncident(ctx, p.IncidentID); len(as) != 0 {
		t.Fatalf("actions recorded: %+v", as)
	}
}
