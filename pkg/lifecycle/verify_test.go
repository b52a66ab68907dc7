package lifecycle

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/store"
)

func hourly() CheckOptions { return CheckOptions{TimestampColumn: "hour"} }

// recordCause stores a diagnosis whose top candidate names cause, in the shape diagnosis.Record stores.
func recordCause(t *testing.T, incs *incidents.Store, id int64, cause string, evidence ...string) {
	t.Helper()
	raw, err := json.Marshal(struct {
		Result diagnosis.Result `json:"result"`
	}{diagnosis.Result{Candidates: []diagnosis.Candidate{{Cause: cause, Kind: "schema_change", Source: "schema:api-usage-value", Evidence: evidence}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := incs.RecordDiagnosis(context.Background(), id, string(raw), cause, "test"); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyResolvesOnlyWhenTheCheckPasses(t *testing.T) {
	ctx := context.Background()
	today := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	e := newEstate(t)
	rw := e.usageWarehouse(t, today)
	// History: six good days at noon, then today's run fails on egress_bytes nulls.
	rep := e.seedHistory(t, today, quality.NullRate)
	if !rep.Failed {
		t.Fatalf("setup: today's check passed: %s", rep.Summary)
	}
	opened, err := e.incs.Open(ctx, rep.Asset, "null_rate", "sev2", "egress_bytes 50% null today against 0% in every earlier check", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	const cause = "v12 removed the field the rollup reads"
	recordCause(t, e.incs, opened.ID, cause, "v12 first seen 22:41")
	life := e.service(t, nil)

	// Still broken: not resolved, failed, and the timeline says what still fails.
	*e.clock = today.Add(12*time.Hour + 10*time.Minute)
	got, err := life.Verify(ctx, VerifyInput{IncidentID: opened.ID, Checks: hourly()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Resolved || !got.Failed || got.ReceiptSeq != 0 || len(got.Checks) != 1 || got.Checks[0].Subject != "egress_bytes" || got.Checks[0].Status != "fail" {
		t.Fatalf("broken data verified: %+v", got)
	}
	if got.Incident.Status == incidents.StatusResolved {
		t.Fatalf("incident resolved while failing: %+v", got.Incident)
	}
	last := got.Incident.Events[len(got.Incident.Events)-1]
	if last.Kind != "verified" || !strings.Contains(last.Detail, "egress_bytes") {
		t.Fatalf("no verified event naming the failure: %+v", got.Incident.Events)
	}

	// Fixed: resolved, receipt written and the chain verifies.
	fixUsage(t, rw, "usage_hourly")
	*e.clock = today.Add(12*time.Hour + 20*time.Minute)
	if got, err = life.Verify(ctx, VerifyInput{IncidentID: opened.ID, Checks: hourly()}); err != nil {
		t.Fatal(err)
	}
	if !got.Resolved || got.Failed || got.Incident.Status != incidents.StatusResolved || got.ReceiptSeq == 0 {
		t.Fatalf("fixed data not resolved: %+v", got)
	}
	for _, want := range []string{cause, "## Checks before", "## Checks after", "resolved"} {
		if !strings.Contains(got.Receipt, want) {
			t.Errorf("receipt lacks %q:\n%s", want, got.Receipt)
		}
	}
	chain, err := e.chain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rcs, err := chain.ForIncident(ctx, opened.ID)
	if err != nil || len(rcs) != 1 {
		t.Fatalf("receipts %v %v", rcs, err)
	}
	b, err := receipts.DecodeBody(rcs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(b.ChecksBefore) == 0 || b.ChecksBefore[0].Status != "fail" || b.ChecksBefore[0].Value <= 0 || len(b.ChecksAfter) != 1 || b.ChecksAfter[0].Value != 0 || b.Outcome != "resolved" {
		t.Fatalf("receipt checks: %+v", b)
	}
	if b.Incident.ResolvedAt == nil || !b.Incident.ResolvedAt.Equal(*got.Incident.ResolvedAt) {
		t.Errorf("the receipt's resolution time %v is not the incident's %v", b.Incident.ResolvedAt, got.Incident.ResolvedAt)
	}
	if v, err := chain.Verify(ctx); err != nil || !v.OK {
		t.Fatalf("%v %+v", err, v)
	}
	// A resolved incident is not verified again.
	if _, err := life.Verify(ctx, VerifyInput{IncidentID: opened.ID}); err == nil || !strings.Contains(err.Error(), "already resolved") {
		t.Errorf("second verify: %v", err)
	}
}

// Resolving, marking the actions verified and writing the receipt are one transaction: a failure
// injected between the resolution and the receipt (the store refuses the receipt row) leaves the
// incident open, its action unverified and no receipt; once the failure is gone, verify succeeds.
func TestAFailureBetweenResolveAndReceiptLeavesNeither(t *testing.T) {
	ctx := context.Background()
	w := newRemediationWorld(t, "L2")
	w.withoutOwnerSteps(t)
	w.approve(t, w.incident, planSteps[0])
	w.fixData(t)
	out, err := w.remediate(t)
	if err != nil || len(out.Actions) != 1 {
		t.Fatalf("%v %+v", err, out)
	}
	// The pause is marked verified by remediate's re-check; clear that so verify's marking shows.
	if _, err := w.st.DB.Exec(`UPDATE actions SET verified = NULL, verified_at = NULL`); err != nil {
		t.Fatal(err)
	}
	refuse := `CREATE TRIGGER refuse_receipt BEFORE INSERT ON receipts BEGIN SELECT RAISE(ABORT, 'injected: disk full'); END`
	if w.st.Dialect() == store.PostgreSQL {
		refuse = `CREATE FUNCTION refuse_receipt() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected: disk full'; END $$;
			CREATE TRIGGER refuse_receipt BEFORE INSERT ON receipts FOR EACH ROW EXECUTE FUNCTION refuse_receipt()`
	}
	if _, err := w.st.DB.Exec(refuse); err != nil {
		t.Fatal(err)
	}
	_, err = w.life.Verify(ctx, VerifyInput{IncidentID: w.incident, Checks: w.checkOptions()})
	if err == nil || !strings.Contains(err.Error(), "injected: disk full") || !strings.Contains(err.Error(), "stays open with no receipt") {
		t.Fatalf("verify with the receipt refused: %v", err)
	}
	inc, err := w.incs.Get(ctx, w.incident)
	if err != nil {
		t.Fatal(err)
	}
	if !incidents.IsOpen(inc.Status) || inc.ResolvedAt != nil || inc.Resolution != "" {
		t.Fatalf("incident resolved without a receipt: %+v", inc)
	}
	for _, ev := range inc.Events {
		if ev.Kind == "status" {
			t.Errorf("a status change was kept: %+v", ev)
		}
	}
	var receiptsWritten, head int64
	if err := w.st.DB.QueryRow(`SELECT (SELECT count(*) FROM receipts), (SELECT count FROM receipt_chain WHERE id = 1)`).Scan(&receiptsWritten, &head); err != nil {
		t.Fatal(err)
	}
	if receiptsWritten != 0 || head != 0 {
		t.Fatalf("%d receipts, chain head at %d", receiptsWritten, head)
	}
	var verified sql.NullInt64
	if err := w.st.DB.QueryRow(`SELECT verified FROM actions WHERE id = ?`, out.Actions[0].ID).Scan(&verified); err != nil || verified.Valid {
		t.Fatalf("action verified = %+v %v, want still NULL", verified, err)
	}

	drop := `DROP TRIGGER refuse_receipt`
	if w.st.Dialect() == store.PostgreSQL {
		drop += ` ON receipts`
	}
	if _, err := w.st.DB.Exec(drop); err != nil {
		t.Fatal(err)
	}
	v := w.verify(t)
	if !v.Resolved || v.ReceiptSeq != 1 {
		t.Fatalf("%+v", v)
	}
	if err := w.st.DB.QueryRow(`SELECT verified FROM actions WHERE id = ?`, out.Actions[0].ID).Scan(&verified); err != nil || !verified.Valid || verified.Int64 != 1 {
		t.Fatalf("action verified = %+v %v, want 1", verified, err)
	}
}

func TestVerifyErrors(t *testing.T) {
	ctx := context.Background()
	e := newEstate(t)
	e.cfg.Warehouse = nil
	life := e.service(t, nil)
	open := func(asset, mode string) int64 {
		o, err := e.incs.Open(ctx, asset, mode, "sev2", "s", "test")
		if err != nil {
			t.Fatal(err)
		}
		return o.ID
	}
	for _, tc := range []struct {
		name, asset, mode, want string
		wh                      *config.Warehouse
	}{
		{"no warehouse", "warehouse:sqlite/main.t1", "null_rate", "warehouse.dsn", nil},
		{"custom", "warehouse:sqlite/main.t2", "custom", "run_quality_check", nil},
		{"not a table", "kafka:topic/api-usage", "volume", "not a warehouse table URN", &config.Warehouse{Engine: "sqlite", DSN: "x"}},
		{"other engine", "warehouse:snowflake/A.B.C", "volume", "warehouse.engine is sqlite", &config.Warehouse{Engine: "sqlite", DSN: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.cfg.Warehouse = tc.wh
			_, err := life.Verify(ctx, VerifyInput{IncidentID: open(tc.asset, tc.mode)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := life.Verify(ctx, VerifyInput{IncidentID: 999}); err == nil {
		t.Error("unknown incident accepted")
	}
}

// The receipt's evidence is the stored diagnosis's top candidate; assembling it only reads what it is given.
func TestAssembleReceiptTakesTheTopCandidatesEvidence(t *testing.T) {
	raw, err := json.Marshal(struct {
		Result diagnosis.Result `json:"result"`
	}{diagnosis.Result{Candidates: []diagnosis.Candidate{
		{Cause: "v12 removed a field", Kind: "schema_change", Source: "schema:orders-value", Evidence: []string{"v12 first seen 22:41", "the rollup pinned to v11"}},
		{Cause: "connector task failed", Kind: "component_failure", Source: "connector:x", Evidence: []string{"task 0 FAILED"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	resolved := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	rec := ReceiptRecord{Incident: incidents.Incident{ID: 7, Asset: "warehouse:sqlite/main.orders", FailureMode: "null_rate", Cause: "v12 removed a field"},
		ResolvedAt: resolved, Diagnosis: string(raw)}
	b := AssembleReceipt(rec)
	if b.Cause != "v12 removed a field" || len(b.Evidence) != 2 || b.Evidence[0].Source != "schema:orders-value" || b.Evidence[1].Detail != "the rollup pinned to v11" {
		t.Fatalf("%+v", b)
	}
	if b.Incident.ResolvedAt == nil || !b.Incident.ResolvedAt.Equal(resolved) || b.Outcome != incidents.StatusResolved {
		t.Fatalf("%+v", b.Incident)
	}
	// The same record gives the same body.
	again, _ := json.Marshal(AssembleReceipt(rec))
	first, _ := json.Marshal(b)
	if string(again) != string(first) {
		t.Fatalf("assembling twice differs:\n%s\n%s", first, again)
	}
	// A diagnosis that is not JSON contributes no evidence instead of failing the receipt.
	rec.Diagnosis, rec.Incident.Cause = "not json", ""
	if b := AssembleReceipt(rec); len(b.Evidence) != 0 || !strings.Contains(b.Cause, "not diagnosed") {
		t.Fatalf("%+v", b)
	}
}

// When the plan moves the data to a -v2 table, the incident is judged on the new table (the old one
// keeps its bad rows), together with every other check the plan names; all must pass.
func TestVerifyJudgesThePlansChecksAndTheSupersedingOne(t *testing.T) {
	ctx := context.Background()
	today := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	e := newEstate(t)
	rw := e.usageWarehouse(t, today)
	rep := e.seedHistory(t, today, quality.NullRate)
	// The corrected statement writes usage_hourly_v2: every hour has egress_bytes, but one usage_id is doubled.
	if _, err := rw.Exec(`CREATE TABLE usage_hourly_v2 AS SELECT usage_id, account_id, hour, COALESCE(egress_bytes, 1000 * account_id) AS egress_bytes FROM usage_hourly`); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`INSERT INTO usage_hourly_v2 SELECT usage_id, account_id, hour, egress_bytes FROM usage_hourly_v2 WHERE hour = ?`, today.Add(3*time.Hour).Format("2006-01-02 15:04:05")); err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(rep.Asset, "usage_hourly", "usage_hourly_v2", 1)
	opened, err := e.incs.Open(ctx, rep.Asset, "null_rate", "sev1", "egress_bytes null", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := plans.Save(ctx, e.st, plans.Plan{IncidentID: opened.ID, CreatedBy: "dw-incidents",
		Proposals: []plans.Proposal{{Order: 1, Class: config.ClassFlinkStatement, Target: "flink:statement/usage-hourly-rollup", Title: "Corrected statement into usage-hourly-v2",
			Payload: map[string]any{"statement": "INSERT INTO `usage-hourly-v2` SELECT 1"}, Executor: plans.ExecutorOwner, Undo: "stop the -v2 statement"}},
		Checks: []plans.Check{
			{Asset: v2, Check: "null_rate", Columns: []string{"egress_bytes"}, Supersedes: rep.Asset, Why: "the data now lands in usage_hourly_v2"},
			{Asset: v2, Check: "uniqueness", KeyColumns: []string{"usage_id"}, Why: "usage_id stays unique"},
		}}, e.now())
	if err != nil {
		t.Fatal(err)
	}
	life := e.service(t, nil)

	*e.clock = today.Add(12*time.Hour + 10*time.Minute)
	got, err := life.Verify(ctx, VerifyInput{IncidentID: opened.ID, Checks: hourly()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Resolved || !got.Failed || len(got.Checks) != 2 {
		t.Fatalf("a failing plan check resolved the incident: %+v", got)
	}
	for _, c := range got.Checks {
		if c.Asset != v2 || !strings.HasPrefix(c.Origin, fmt.Sprintf("plan #%d", plan.ID)) {
			t.Errorf("check %+v: want it on %s from the plan (the old table's own check is superseded)", c, v2)
		}
		if want := map[string]string{"null_rate": "pass", "duplicate_rows": "fail"}[c.Metric]; c.Status != want {
			t.Errorf("%s: %s, want %s", c.Metric, c.Status, want)
		}
	}
	last := got.Incident.Events[len(got.Incident.Events)-1]
	if !strings.Contains(last.Detail, "duplicate_rows") || !strings.Contains(last.Detail, "superseded") {
		t.Errorf("timeline: %+v", last)
	}

	if _, err := rw.Exec(`DELETE FROM usage_hourly_v2 WHERE rowid NOT IN (SELECT MIN(rowid) FROM usage_hourly_v2 GROUP BY usage_id)`); err != nil {
		t.Fatal(err)
	}
	*e.clock = e.clock.Add(10 * time.Minute)
	if got, err = life.Verify(ctx, VerifyInput{IncidentID: opened.ID, Checks: hourly()}); err != nil {
		t.Fatal(err)
	}
	if !got.Resolved || got.Failed {
		t.Fatalf("all plan checks pass but not resolved: %+v", got)
	}
	// The receipt carries the plan's proposals with their undo, and the checks after on the new table.
	for _, want := range []string{"Plan #", "Corrected statement into usage-hourly-v2", "stop the -v2 statement", "| none |", v2, "## Checks before"} {
		if !strings.Contains(got.Receipt, want) {
			t.Errorf("receipt lacks %q:\n%s", want, got.Receipt)
		}
	}
	// The old table still has its nulls: the incident was judged where the data now lands.
	if n := countNulls(t, rw, "usage_hourly"); n == 0 {
		t.Fatal("test setup: the old table was fixed")
	}
}

func countNulls(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM ` + table + ` WHERE egress_bytes IS NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// supersedeWorld is an incident on usage_hourly (null egress_bytes today) whose plan moves the data to
// usage_hourly_v2, a table the corrected job has written since 08:00 today and that has no history.
// oldChecks are the checks the monitor ran on usage_hourly at noon for six days before and today.
func supersedeWorld(t *testing.T, oldChecks []quality.Check, planChecks []string) (life *Service, rw *sql.DB, incident int64) {
	t.Helper()
	ctx := context.Background()
	today := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	e := newEstate(t)
	rw = e.usageWarehouse(t, today)
	rep := e.seedHistory(t, today, oldChecks...)
	if _, err := rw.Exec(`CREATE TABLE usage_hourly_v2 AS SELECT * FROM usage_hourly WHERE hour >= ?`, today.Add(8*time.Hour).Format("2006-01-02 15:04:05")); err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(rep.Asset, "usage_hourly", "usage_hourly_v2", 1)
	inc, err := e.incs.Open(ctx, rep.Asset, "null_rate", "sev1", "egress_bytes null", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	var checks []plans.Check
	for _, c := range planChecks {
		pc := plans.Check{Asset: v2, Check: c, Supersedes: rep.Asset, Why: "the data now lands in usage_hourly_v2"}
		if c == "null_rate" {
			pc.Columns = []string{"egress_bytes"}
		}
		checks = append(checks, pc)
	}
	if _, err := plans.Save(ctx, e.st, plans.Plan{IncidentID: inc.ID, CreatedBy: "dw-incidents", Checks: checks}, e.now()); err != nil {
		t.Fatal(err)
	}
	*e.clock = today.Add(12*time.Hour + 10*time.Minute)
	return e.service(t, nil), rw, inc.ID
}

func verifyOnce(t *testing.T, life *Service, incident int64) Verification {
	t.Helper()
	got, err := life.Verify(context.Background(), VerifyInput{IncidentID: incident, Checks: hourly()})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func statusOf(got Verification) map[string]string {
	m := map[string]string{}
	for _, c := range got.Checks {
		m[c.Metric] = c.Status
	}
	return m
}

// A new -v2 table has no history of its own: it is judged by the history of the table it
// supersedes, so the same 50% nulls still fail there, and clean data resolves the incident.
func TestVerifyJudgesANewTableByTheHistoryOfTheTableItSupersedes(t *testing.T) {
	life, rw, incident := supersedeWorld(t, []quality.Check{quality.NullRate, quality.Volume, quality.Freshness}, []string{"null_rate", "volume", "freshness"})
	got := verifyOnce(t, life, incident)
	if got.Resolved || !got.Failed || statusOf(got)["null_rate"] != "fail" {
		t.Fatalf("the same nulls on the new table passed: %+v", got.Checks)
	}
	for _, c := range got.Checks {
		if c.Metric == "null_rate" && !strings.Contains(c.Why, "the table it supersedes") {
			t.Errorf("why: %s", c.Why)
		}
	}
	fixUsage(t, rw, "usage_hourly_v2")
	got = verifyOnce(t, life, incident)
	// Volume counts the new table's hours since its first row (08:00), not since midnight.
	if want := map[string]string{"null_rate": "pass", "rows_per_hour": "pass", "freshness_lag_seconds": "pass"}; !got.Resolved || fmt.Sprint(statusOf(got)) != fmt.Sprint(want) {
		t.Fatalf("clean data on the new table did not resolve: %+v", got.Checks)
	}
}

func TestVerifyDoesNotResolveOnChecksThatCouldNotJudge(t *testing.T) {
	for _, tc := range []struct {
		name       string
		oldChecks  []quality.Check
		planChecks []string
		want       string
	}{
		// Nothing to judge volume by: the old table's monitor only measured nulls.
		{"no baseline anywhere", []quality.Check{quality.NullRate}, []string{"null_rate", "volume"}, "not_judged"},
		// Checks elsewhere that leave out what failed cannot say it is gone.
		{"without the failure mode", []quality.Check{quality.NullRate, quality.Volume, quality.Freshness}, []string{"volume", "freshness"}, "leave out the incident's failure mode (null_rate)"},
		// A column metric the predicted symptom calls for with no history on either table is not a pass.
		{"a column metric without history", []quality.Check{quality.NullRate, quality.Volume, quality.Freshness}, []string{"null_rate", "zero_rate", "volume", "freshness"}, "zero_rate (egress_bytes) on warehouse:sqlite/main.usage_hourly_v2 not_judged"},
		// A check name no quality check or column metric knows is not judged either.
		{"a check quality cannot run", []quality.Check{quality.NullRate, quality.Volume, quality.Freshness}, []string{"null_rate", "p99_latency", "volume", "freshness"}, "(p99_latency of  on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			life, rw, incident := supersedeWorld(t, tc.oldChecks, tc.planChecks)
			fixUsage(t, rw, "usage_hourly_v2")
			got := verifyOnce(t, life, incident)
			last := got.Incident.Events[len(got.Incident.Events)-1]
			if got.Resolved || !got.Failed || !strings.Contains(last.Detail, tc.want) {
				t.Fatalf("resolved=%v; timeline %q; checks %+v", got.Resolved, last.Detail, got.Checks)
			}
		})
	}
}
