package lifecycle

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/orchestrators/orchtest"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/remediation"
)

const (
	syncDAG       = "job:airflow/sync_metered_usage_to_stripe"
	approverToken = "ann-token"
)

// remediationWorld is the scenario after the diagnosis: a broken usage table with its check history,
// an open incident with a four-step plan (pause the sync DAG, re-run it, register v13, the corrected
// statement), an Airflow stand-in, a Slack webhook and one domain at the given autonomy whose
// approver is ann.
type remediationWorld struct {
	*estate
	svc      *approvals.Service
	exec     *remediation.Executor
	life     *Service
	incident int64
	plan     plans.Plan
	airflow  *orchtest.Airflow
	slack    *slackHook
	rw       *sql.DB
}

var planSteps = []plans.Proposal{
	{Order: 1, Class: config.ClassPauseJob, Target: syncDAG, Title: "Pause the nightly usage sync", Executor: plans.ExecutorDataWorkers, Reversible: true,
		Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}, Undo: "unpause the DAG"},
	{Order: 2, Class: config.ClassTriggerJob, Target: syncDAG, Title: "Re-send today's usage", Executor: plans.ExecutorDataWorkers, Reversible: true,
		Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe", "conf": map[string]any{"date": "2026-11-29"}}, Undo: "mark the run failed"},
	{Order: 3, Class: config.ClassRegisterSchema, Target: "schema:api-usage-value", Title: "Register v13", Executor: plans.ExecutorDataWorkers, Reversible: true,
		Payload: map[string]any{"subject": "api-usage-value", "schema": `{"type":"record","name":"U","fields":[]}`}},
	{Order: 4, Class: config.ClassFlinkStatement, Target: "flink:statement/usage-hourly-rollup", Title: "Corrected statement into usage-hourly-v2", Executor: plans.ExecutorOwner,
		Payload: map[string]any{"statement": "INSERT INTO `usage-hourly-v2` SELECT 1", "steps": []any{"Create usage-hourly-rollup-v2 from 00:00 offsets"}}},
}

func newRemediationWorld(t *testing.T, autonomy string) *remediationWorld {
	t.Helper()
	ctx := context.Background()
	today := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	w := &remediationWorld{estate: newEstate(t), slack: &slackHook{}}
	w.rw = w.usageWarehouse(t, today)
	rep := w.seedHistory(t, today, quality.NullRate)
	*w.clock = today.Add(12*time.Hour + 5*time.Minute)

	w.airflow = orchtest.NewAirflow("v2", map[string]bool{"sync_metered_usage_to_stripe": false})
	t.Cleanup(w.airflow.Close)
	w.cfg.Airflow = &config.Airflow{URL: w.airflow.URL, APIVersion: "v2", Token: w.airflow.Token, Timeout: 5 * time.Second}
	w.cfg.Domains = []config.Domain{{Name: "usage-billing", Assets: []string{"job:*", "schema:*", "flink:*", "warehouse:*"}, Autonomy: autonomy,
		Owners: []string{"billing-data-owner"}, Approvers: []config.Approver{{Name: "ann", TokenSHA256: tokenHash(approverToken)}}}}
	n := notifierFor(t, w.slack)
	w.svc = w.approvals(n)
	w.exec = w.executor(w.svc)
	w.life = w.service(t, n)
	opened, err := w.incs.Open(ctx, rep.Asset, "null_rate", "sev1", "egress_bytes null today", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	w.incident = opened.ID
	if w.plan, err = plans.Save(ctx, w.st, plans.Plan{IncidentID: opened.ID, CreatedBy: "dw-incidents", Proposals: planSteps}, *w.clock); err != nil {
		t.Fatal(err)
	}
	return w
}

// approve requests a proposal and has ann approve it.
func (w *remediationWorld) approve(t *testing.T, incident int64, p plans.Proposal) approvals.Request {
	t.Helper()
	ctx := context.Background()
	r, err := w.svc.Request(ctx, approvals.Proposal{IncidentID: incident, Class: p.Class, Target: p.Target, Title: p.Title, Payload: p.Payload}, "dw-incidents", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = w.svc.Decide(ctx, approvals.Decision{RequestID: r.ID, Approver: "ann", Token: approverToken, Approve: true, PayloadSHA256: r.PayloadSHA256}); err != nil {
		t.Fatal(err)
	}
	return r
}

// cleanRecord gives the re-run of the sync DAG the approved, verified runs L3 needs (earlier incidents).
func (w *remediationWorld) cleanRecord(t *testing.T) {
	t.Helper()
	for i := 0; i < remediation.CleanRecordRuns; i++ {
		a, err := w.exec.Run(context.Background(), w.approve(t, 0, planSteps[1]).ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.exec.MarkVerified(context.Background(), a.ID, true); err != nil {
			t.Fatal(err)
		}
	}
}

func (w *remediationWorld) fixData(t *testing.T) { t.Helper(); fixUsage(t, w.rw, "usage_hourly") }

func (w *remediationWorld) checkOptions() CheckOptions { return CheckOptions{TimestampColumn: "hour"} }

func (w *remediationWorld) remediate(t *testing.T) (Remediation, error) {
	t.Helper()
	return w.life.Remediate(context.Background(), RemediateInput{IncidentID: w.incident, Checks: w.checkOptions()})
}

func (w *remediationWorld) verify(t *testing.T) Verification {
	t.Helper()
	v, err := w.life.Verify(context.Background(), VerifyInput{IncidentID: w.incident, Checks: w.checkOptions()})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func skipReason(out Remediation, step int) string {
	for _, s := range out.Skipped {
		if s.PlanStep == step {
			return s.Reason
		}
	}
	return ""
}

func TestRemediateAtL3RerunsWithoutANewApprovalAndRecordsTheRule(t *testing.T) {
	ctx := context.Background()
	w := newRemediationWorld(t, "L3")
	w.cleanRecord(t)
	pause := w.approve(t, w.incident, planSteps[0])
	w.approve(t, w.incident, planSteps[3]) // the owner's statement: handed over, never executed
	w.fixData(t)                           // the owner's side is done; the checks after acting pass

	out, err := w.remediate(t)
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed || out.NeedsPerson != "" || len(out.Actions) != 3 {
		t.Fatalf("%+v", out)
	}
	byClass := map[string]remediation.Action{}
	for _, a := range out.Actions {
		byClass[a.Class] = a
	}
	if a := byClass[config.ClassPauseJob]; a.Authority != remediation.AuthorityApproval || a.RequestID != pause.ID || a.ApprovedBy != "ann" || !w.airflow.Paused("sync_metered_usage_to_stripe") {
		t.Errorf("pause: %+v", a)
	}
	rerun := byClass[config.ClassTriggerJob]
	if rerun.Authority != remediation.AuthorityL3 || rerun.RequestID != 0 || rerun.PlanOrder != 2 || len(rerun.Record) != remediation.CleanRecordRuns ||
		!strings.Contains(rerun.Rule, "domain usage-billing is at L3") || rerun.Undo.Description == "" || rerun.Status != remediation.StatusSucceeded {
		t.Errorf("rerun: %+v", rerun)
	}
	if owner := byClass[config.ClassFlinkStatement]; owner.Status != remediation.StatusOwnerSteps || len(owner.Steps) < 2 {
		t.Errorf("owner step: %+v", owner)
	}
	if runs := w.airflow.Runs(); len(runs) != remediation.CleanRecordRuns+1 {
		t.Errorf("%d Airflow runs", len(runs))
	}
	// register_schema never runs under L3, and the owner's step is not Data Workers'.
	if r := skipReason(out, 3); !strings.Contains(r, "register_schema is not a reversible class") {
		t.Errorf("register_schema: %q", r)
	}
	if len(out.Checks) == 0 || out.Checks[0].Status != "pass" {
		t.Errorf("checks after acting: %+v", out.Checks)
	}
	inc, _ := w.incs.Get(ctx, w.incident)
	var l3Event bool
	for _, e := range inc.Events {
		l3Event = l3Event || e.Kind == "action" && strings.Contains(e.Detail, "without a new approval") && strings.Contains(e.Detail, "L3 clean record")
	}
	if !l3Event {
		t.Errorf("no timeline event for the L3 action: %+v", inc.Events)
	}
	// A second remediate runs nothing again.
	again, err := w.remediate(t)
	if err != nil || len(again.Actions) != 0 || len(w.airflow.Runs()) != remediation.CleanRecordRuns+1 {
		t.Fatalf("second remediate: %v %+v", err, again)
	}

	// The receipt shows the plan, the approval, the L3 action with its rule, the owner's steps and every undo.
	v := w.verify(t)
	if !v.Resolved {
		t.Fatalf("%+v", v)
	}
	for _, want := range []string{"Re-send today's usage", "no new approval (L3): L3 clean record", "approval #", "by ann",
		"owner_steps: flink_statement on flink:statement/usage-hourly-rollup is the owner's", "## Undo", "unpause sync_metered_usage_to_stripe again"} {
		if !strings.Contains(v.Receipt, want) {
			t.Errorf("receipt lacks %q:\n%s", want, v.Receipt)
		}
	}
}

func TestRemediateRunsNoUnrequestedStepBelowL3OrOnADirtyRecord(t *testing.T) {
	for _, tc := range []struct {
		name, autonomy string
		dirty          bool
		want           string
	}{
		{"L2 with a clean record", "L2", false, "needs L3"},
		{"L3 after a failed run", "L3", true, "1 runs failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRemediationWorld(t, tc.autonomy)
			w.cleanRecord(t)
			if tc.dirty {
				// Airflow refuses the run (a revoked token): a failed run of the step's class and target.
				token := w.cfg.Airflow.Token
				w.cfg.Airflow.Token = "revoked"
				a, err := w.exec.Run(context.Background(), w.approve(t, 0, planSteps[1]).ID)
				w.cfg.Airflow.Token = token
				if err == nil || a.Status != remediation.StatusFailed {
					t.Fatalf("setup: %+v %v", a, err)
				}
			}
			w.fixData(t)
			out, err := w.remediate(t)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Actions) != 0 || len(w.airflow.Runs()) != remediation.CleanRecordRuns {
				t.Fatalf("something ran without an approval: %+v", out.Actions)
			}
			if r := skipReason(out, 2); !strings.Contains(r, tc.want) {
				t.Errorf("rerun skipped for %q, want %q", r, tc.want)
			}
			if r := skipReason(out, 4); !strings.Contains(r, "owner's") {
				t.Errorf("owner step skipped for %q", r)
			}
			if len(out.Checks) != 0 {
				t.Errorf("checks re-ran although nothing was executed: %+v", out.Checks)
			}
		})
	}
}

func TestTheStopBlocksRemediateEntirely(t *testing.T) {
	ctx := context.Background()
	w := newRemediationWorld(t, "L3")
	w.cleanRecord(t)
	w.approve(t, w.incident, planSteps[0])
	if _, err := w.svc.SetStop(ctx, "ann", approverToken, true, "numbers wrong"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.remediate(t); err == nil || !strings.Contains(err.Error(), "org-wide stop is on") {
		t.Fatalf("remediate during the stop: %v", err)
	}
	if as, _ := w.exec.ForIncident(ctx, w.incident); len(as) != 0 || w.airflow.Paused("sync_metered_usage_to_stripe") || len(w.airflow.Runs()) != remediation.CleanRecordRuns {
		t.Fatalf("dispatched during the stop: %+v", as)
	}
}

// withoutOwnerSteps replaces the incident's plan by one whose steps are all Data Workers'.
func (w *remediationWorld) withoutOwnerSteps(t *testing.T) {
	t.Helper()
	var err error
	if w.plan, err = plans.Save(context.Background(), w.st, plans.Plan{IncidentID: w.incident, CreatedBy: "dw-incidents", Proposals: planSteps[:2]}, *w.clock); err != nil {
		t.Fatal(err)
	}
}

func TestAFailingCheckAfterActingGoesToAPerson(t *testing.T) {
	ctx := context.Background()
	w := newRemediationWorld(t, "L2")
	w.withoutOwnerSteps(t)
	w.approve(t, w.incident, planSteps[0]) // the pause runs; the data is still broken
	out, err := w.remediate(t)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Failed || len(out.Actions) != 1 || !strings.Contains(out.NeedsPerson, "egress_bytes") {
		t.Fatalf("%+v", out)
	}
	inc, _ := w.incs.Get(ctx, w.incident)
	if inc.Status == incidents.StatusResolved {
		t.Fatal("remediate resolved the incident")
	}
	var kinds []string
	for _, e := range inc.Events {
		kinds = append(kinds, e.Kind)
		if e.Kind == "needs_person" && !strings.Contains(e.Detail, "needs a person") {
			t.Errorf("event %+v", e)
		}
	}
	if !strings.Contains(strings.Join(kinds, ","), "needs_person,notified") {
		t.Errorf("timeline kinds %v", kinds)
	}
	sent := w.slack.sent() // the approval request's notification, then this one
	if last := sent[len(sent)-1]; len(sent) != 2 || !strings.Contains(last, "needs a person: incident #1") || !strings.Contains(last, "egress_bytes") {
		t.Fatalf("slack got %q", sent)
	}
	// The pause's record says its checks did not pass, so L3 would not repeat it on this record.
	_, pauseHash, _ := approvals.Canonical(planSteps[0].Payload)
	if ok, why, _ := w.exec.MayActWithoutNewApproval(ctx, config.ClassPauseJob, syncDAG, pauseHash); ok || !strings.Contains(why, "L2") {
		t.Errorf("%v %s", ok, why)
	}
	as, _ := w.exec.ForIncident(ctx, w.incident)
	var verified sql.NullInt64
	if err := w.st.DB.QueryRow(`SELECT verified FROM actions WHERE id = ?`, as[0].ID).Scan(&verified); err != nil || !verified.Valid || verified.Int64 != 0 {
		t.Errorf("verified = %+v %v", verified, err)
	}
}

// Right after pausing, while the owner has not done their side, the data still fails: that is
// expected, so nobody is paged and the pause stays unverified (neither clean nor failed) until
// verify_incident judges the data; a later verification that passes marks it verified.
func TestChecksFailingWhileOwnerStepsAreOutstandingAreNotAFailure(t *testing.T) {
	ctx := context.Background()
	w := newRemediationWorld(t, "L2")
	w.approve(t, w.incident, planSteps[0])
	out, err := w.remediate(t)
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed || out.NeedsPerson != "" || len(out.Actions) != 1 || len(out.OwnerSteps) != 1 || len(out.Checks) == 0 {
		t.Fatalf("%+v", out)
	}
	if !strings.Contains(strings.Join(out.OwnerSteps, ";"), "flink_statement on flink:statement/usage-hourly-rollup") {
		t.Errorf("owner steps %v", out.OwnerSteps)
	}
	var verified sql.NullInt64
	if err := w.st.DB.QueryRow(`SELECT verified FROM actions WHERE id = ?`, out.Actions[0].ID).Scan(&verified); err != nil || verified.Valid {
		t.Errorf("verified = %+v %v, want NULL (pending)", verified, err)
	}
	inc, _ := w.incs.Get(ctx, w.incident)
	var said bool
	for _, e := range inc.Events {
		if e.Kind == "needs_person" {
			t.Errorf("a person was paged: %+v", e)
		}
		said = said || e.Kind == "checked" && strings.Contains(e.Detail, "still fail while owner steps are outstanding")
	}
	if !said {
		t.Errorf("no timeline event says why: %+v", inc.Events)
	}
	if sent := w.slack.sent(); len(sent) != 1 { // only the approval request's notification
		t.Errorf("slack got %q", sent)
	}
	// The owner does their side; verify resolves and the pause's record is clean.
	w.fixData(t)
	if v := w.verify(t); !v.Resolved {
		t.Fatalf("%+v", v)
	}
	if err := w.st.DB.QueryRow(`SELECT verified FROM actions WHERE id = ?`, out.Actions[0].ID).Scan(&verified); err != nil || !verified.Valid || verified.Int64 != 1 {
		t.Errorf("verified = %+v %v, want 1 after the incident verified", verified, err)
	}
}

// A check that failed right after acting stays failed in the record when the incident later verifies.
func TestAVerificationThatFailedAfterActingIsNotOverwritten(t *testing.T) {
	w := newRemediationWorld(t, "L2")
	w.withoutOwnerSteps(t)
	w.approve(t, w.incident, planSteps[0])
	out, err := w.remediate(t)
	if err != nil || !out.Failed {
		t.Fatalf("%v %+v", err, out)
	}
	w.fixData(t)
	if v := w.verify(t); !v.Resolved {
		t.Fatalf("%+v", v)
	}
	var verified sql.NullInt64
	if err := w.st.DB.QueryRow(`SELECT verified FROM actions WHERE id = ?`, out.Actions[0].ID).Scan(&verified); err != nil || !verified.Valid || verified.Int64 != 0 {
		t.Errorf("verified = %+v %v, want the failure kept", verified, err)
	}
}

// remediate re-runs the checks in the caller's time zone, as verify_incident does.
func TestRemediateChecksUseTheTimeZone(t *testing.T) {
	ctx := context.Background()
	w := newRemediationWorld(t, "L2")
	w.withoutOwnerSteps(t)
	w.approve(t, w.incident, planSteps[0])
	// 12:05 UTC is 02:05 tomorrow in Kiritimati (UTC+14): "today" starts at 10:00 UTC.
	if _, err := w.life.Remediate(ctx, RemediateInput{IncidentID: w.incident, Checks: CheckOptions{TimestampColumn: "hour", TimeZone: "Pacific/Kiritimati"}}); err != nil {
		t.Fatal(err)
	}
	runs, err := quality.NewHistory(w.st).Runs(ctx, quality.HistoryQuery{Limit: 1})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%v %v", runs, err)
	}
	if want := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC); !runs[0].WindowStart.Equal(want) {
		t.Errorf("window starts %s, want %s", runs[0].WindowStart, want)
	}
}

// When the plan's checks read a table the owner has yet to create (the -v2 sink), the re-check after
// acting cannot run: while owner steps are outstanding that is expected, not a page.
func TestChecksThatCannotRunYetWhileOwnerStepsAreOutstandingAreNotAFailure(t *testing.T) {
	ctx := context.Background()
	w := newRemediationWorld(t, "L2")
	inc, err := w.incs.Get(ctx, w.incident)
	if err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(inc.Asset, "usage_hourly", "usage_hourly_v2", 1)
	if w.plan, err = plans.Save(ctx, w.st, plans.Plan{IncidentID: w.incident, CreatedBy: "dw-incidents", Proposals: planSteps,
		Checks: []plans.Check{{Asset: v2, Check: "null_rate", Columns: []string{"egress_bytes"}, Supersedes: inc.Asset, Why: "the corrected statement writes here"}}}, *w.clock); err != nil {
		t.Fatal(err)
	}
	w.approve(t, w.incident, planSteps[0])
	out, err := w.remediate(t)
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed || out.NeedsPerson != "" || len(out.Actions) != 1 || len(out.OwnerSteps) == 0 {
		t.Fatalf("%+v", out)
	}
	inc, _ = w.incs.Get(ctx, w.incident)
	var said bool
	for _, ev := range inc.Events {
		if ev.Kind == "needs_person" {
			t.Errorf("a person was paged: %+v", ev)
		}
		// The corrected table does not exist yet: its check is not judged, which is said.
		said = said || ev.Kind == "checked" && strings.Contains(ev.Detail, "while owner steps are outstanding") &&
			strings.Contains(ev.Detail, "was not judged") && strings.Contains(ev.Detail, "usage_hourly_v2")
	}
	if !said {
		t.Errorf("no timeline event says why: %+v", inc.Events)
	}
}

// The stop set while remediate is running ends the run before the next dispatch; what ran before it
// comes back with why the run stopped, never only the error.
func TestAStopSetMidRunReturnsWhatRan(t *testing.T) {
	ctx := context.Background()
	w := newRemediationWorld(t, "L3")
	w.cleanRecord(t)
	w.approve(t, w.incident, planSteps[0])
	// Airflow answers the pause; then a person sets the stop, before the L3 re-run is dispatched.
	var armed atomic.Bool
	armed.Store(true)
	target, _ := url.Parse(w.airflow.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		proxy.ServeHTTP(rw, r)
		if r.Method == http.MethodPatch && armed.CompareAndSwap(true, false) {
			if _, err := w.svc.SetStop(ctx, "ann", approverToken, true, "numbers wrong"); err != nil {
				t.Error(err)
			}
		}
	}))
	t.Cleanup(front.Close)
	w.cfg.Airflow.URL = front.URL
	w.fixData(t)

	out, err := w.remediate(t)
	if !errors.Is(err, approvals.ErrStopped) {
		t.Fatalf("err = %v, want the stop", err)
	}
	if len(out.Actions) != 1 || out.Actions[0].Class != config.ClassPauseJob || !out.Failed || !strings.Contains(out.Stopped, "org-wide stop") {
		t.Fatalf("the run's partial result: %+v", out)
	}
	if !w.airflow.Paused("sync_metered_usage_to_stripe") || len(w.airflow.Runs()) != remediation.CleanRecordRuns {
		t.Fatalf("paused=%v, %d runs: the re-run was dispatched after the stop", w.airflow.Paused("sync_metered_usage_to_stripe"), len(w.airflow.Runs()))
	}
	if as, _ := w.exec.ForIncident(ctx, w.incident); len(as) != 1 {
		t.Fatalf("actions recorded: %+v", as)
	}
}

// A person settles an action a stopped process left running: the action takes their word and the
// incident's timeline says so; the settled action no longer shows as interrupted.
func TestSettleAnInterruptedActionRecordsItOnTheIncident(t *testing.T) {
	ctx := context.Background()
	w := newRemediationWorld(t, "L2")
	r := w.approve(t, w.incident, planSteps[0])
	if _, err := w.st.DB.Exec(`INSERT INTO actions (request_id, incident_id, class, target, payload, approved_by, status, started_at, finished_at)
		VALUES (?, ?, 'pause_job', ?, '{"dag_id":"sync_metered_usage_to_stripe"}', 'ann', 'running', '2026-11-29T12:00:00Z', '2026-11-29T12:00:00Z')`, r.ID, w.incident, syncDAG); err != nil {
		t.Fatal(err)
	}
	if list, err := w.life.Interrupted(ctx); err != nil || len(list) != 1 {
		t.Fatalf("interrupted: %+v %v", list, err)
	}
	a, err := w.life.Settle(ctx, 1, remediation.StatusFailed, "ann", "no pause in Airflow's audit log")
	if err != nil || a.Status != remediation.StatusFailed {
		t.Fatalf("%+v %v", a, err)
	}
	inc, _ := w.incs.Get(ctx, w.incident)
	if last := inc.Events[len(inc.Events)-1]; last.Kind != "action" || last.Actor != "ann" || !strings.Contains(last.Detail, "settled as failed: no pause in Airflow's audit log") {
		t.Fatalf("timeline: %+v", last)
	}
	if list, _ := w.life.Interrupted(ctx); len(list) != 0 {
		t.Fatalf("still interrupted: %+v", list)
	}
}
