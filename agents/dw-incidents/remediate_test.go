package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/orchestrators/orchtest"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/remediation"
	"github.com/dataworkers/dw/pkg/store"
)

const (
	stripeDAG     = "job:airflow/sync_metered_usage_to_stripe"
	approverToken = "ann-token"
)

// slackHook is a loopback incoming webhook that keeps what it was sent (Slack answers a plain "ok").
type slackHook struct {
	mu    sync.Mutex
	texts []string
}

func (h *slackHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]string
	if r.Method != http.MethodPost || r.URL.Path != "/services/T000/B000/XXXX" || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.texts = append(h.texts, body["text"])
	h.mu.Unlock()
	w.Write([]byte("ok"))
}

func (h *slackHook) sent() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.texts...)
}

// remediationWorld is the scenario after the diagnosis: a broken usage table with its check history,
// an open incident with a four-step plan (pause the Stripe DAG, re-run it, register v13, the
// corrected statement), Airflow and dbt Cloud stand-ins, a Slack webhook and one domain at the
// given autonomy whose approver is ann.
type remediationWorld struct {
	env      *mcpkit.Env
	clock    *time.Time
	st       *store.Store
	svc      *approvals.Service
	exec     *remediation.Executor
	incs     *incidents.Store
	incident int64
	plan     plans.Plan
	airflow  *orchtest.Airflow
	slack    *slackHook
	rw       *sql.DB
}

var planSteps = []plans.Proposal{
	{Order: 1, Class: config.ClassPauseJob, Target: stripeDAG, Title: "Pause the 23:00 Stripe sync", Executor: plans.ExecutorDataWorkers, Reversible: true,
		Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}, Undo: "unpause the DAG"},
	{Order: 2, Class: config.ClassTriggerJob, Target: stripeDAG, Title: "Re-send today's usage to Stripe", Executor: plans.ExecutorDataWorkers, Reversible: true,
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
	w := &remediationWorld{clock: new(time.Time), slack: &slackHook{}}
	w.env = mcpkittest.Env(t, "dw-incidents")
	w.env.Now = func() time.Time { return *w.clock }
	path, rw := usageWarehouse(t, today)
	w.rw = rw
	w.env.Config.Warehouse = &config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 10 * time.Second, MaxSampleRows: 5}
	rep := seedHistory(t, w.env, w.clock, today)
	*w.clock = today.Add(12*time.Hour + 5*time.Minute)

	w.airflow = orchtest.NewAirflow("v2", map[string]bool{"sync_metered_usage_to_stripe": false})
	t.Cleanup(w.airflow.Close)
	hook := httptest.NewServer(w.slack)
	t.Cleanup(hook.Close)
	sum := sha256.Sum256([]byte(approverToken))
	w.env.Config.Airflow = &config.Airflow{URL: w.airflow.URL, APIVersion: "v2", Token: w.airflow.Token, Timeout: 5 * time.Second}
	w.env.Config.Slack = &config.Slack{WebhookURL: hook.URL + "/services/T000/B000/XXXX"}
	w.env.Config.Domains = []config.Domain{{Name: "usage-billing", Assets: []string{"job:*", "schema:*", "flink:*", "warehouse:*"}, Autonomy: autonomy,
		Owners: []string{"billing-data-owner"}, Approvers: []config.Approver{{Name: "ann", TokenSHA256: hex.EncodeToString(sum[:])}}}}

	var err error
	if w.st, err = w.env.Store.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if w.svc, err = approvalService(ctx, w.env); err != nil {
		t.Fatal(err)
	}
	w.exec = executor(w.st, w.env, w.svc)
	w.incs = incidents.New(w.st, w.env.Now)
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

// cleanRecord gives the re-run of the Stripe DAG the approved, verified runs L3 needs (earlier incidents).
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

func (w *remediationWorld) fixData(t *testing.T) {
	t.Helper()
	if _, err := w.rw.Exec(`UPDATE usage_hourly SET egress_bytes = 1000 * account_id WHERE egress_bytes IS NULL`); err != nil {
		t.Fatal(err)
	}
}

func (w *remediationWorld) remediate(t *testing.T) (remediateResult, string) {
	t.Helper()
	var out remediateResult
	e := mcpkittest.Call(t, remediate(w.env), map[string]any{"incident_id": w.incident, "timestamp_column": "hour"}, &out)
	return out, e
}

func skipReason(out remediateResult, step int) string {
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

	out, e := w.remediate(t)
	if e != "" {
		t.Fatal(e)
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
	again, e := w.remediate(t)
	if e != "" || len(again.Actions) != 0 || len(w.airflow.Runs()) != remediation.CleanRecordRuns+1 {
		t.Fatalf("second remediate: %s %+v", e, again)
	}

	// The receipt shows the plan, the approval, the L3 action with its rule, the owner's steps and every undo.
	var v verifyResult
	if e := mcpkittest.Call(t, verifyIncident(w.env), map[string]any{"incident_id": w.incident, "timestamp_column": "hour"}, &v); e != "" || !v.Resolved {
		t.Fatalf("%s %+v", e, v)
	}
	for _, want := range []string{"Re-send today's usage to Stripe", "no new approval (L3): L3 clean record", "approval #", "by ann",
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
				token := w.env.Config.Airflow.Token
				w.env.Config.Airflow.Token = "revoked"
				a, err := w.exec.Run(context.Background(), w.approve(t, 0, planSteps[1]).ID)
				w.env.Config.Airflow.Token = token
				if err == nil || a.Status != remediation.StatusFailed {
					t.Fatalf("setup: %+v %v", a, err)
				}
			}
			w.fixData(t)
			out, e := w.remediate(t)
			if e != "" {
				t.Fatal(e)
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
	if _, e := w.remediate(t); !strings.Contains(e, "org-wide stop is on") {
		t.Fatalf("remediate during the stop: %q", e)
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
	out, e := w.remediate(t)
	if e != "" {
		t.Fatal(e)
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
	if ok, why, _ := w.exec.MayActWithoutNewApproval(ctx, config.ClassPauseJob, stripeDAG, pauseHash); ok || !strings.Contains(why, "L2") {
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
	out, e := w.remediate(t)
	if e != "" {
		t.Fatal(e)
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
	var v verifyResult
	if e := mcpkittest.Call(t, verifyIncident(w.env), map[string]any{"incident_id": w.incident, "timestamp_column": "hour"}, &v); e != "" || !v.Resolved {
		t.Fatalf("%s %+v", e, v)
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
	out, e := w.remediate(t)
	if e != "" || !out.Failed {
		t.Fatalf("%s %+v", e, out)
	}
	w.fixData(t)
	var v verifyResult
	if e := mcpkittest.Call(t, verifyIncident(w.env), map[string]any{"incident_id": w.incident, "timestamp_column": "hour"}, &v); e != "" || !v.Resolved {
		t.Fatalf("%s %+v", e, v)
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
	var out remediateResult
	// 12:05 UTC is 02:05 tomorrow in Kiritimati (UTC+14): "today" starts at 10:00 UTC.
	if e := mcpkittest.Call(t, remediate(w.env), map[string]any{"incident_id": w.incident, "timestamp_column": "hour", "time_zone": "Pacific/Kiritimati"}, &out); e != "" {
		t.Fatal(e)
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
	out, e := w.remediate(t)
	if e != "" {
		t.Fatal(e)
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
		said = said || ev.Kind == "checked" && strings.Contains(ev.Detail, "cannot run yet while owner steps are outstanding")
	}
	if !said {
		t.Errorf("no timeline event says why: %+v", inc.Events)
	}
}
