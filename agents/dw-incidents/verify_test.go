package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// usageWarehouse writes a SQLite warehouse with a week of hourly usage up to today's noon; today's
// egress_bytes is null in every other hour (the incident's data).
func usageWarehouse(t *testing.T, today time.Time) (path string, rw *sql.DB) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "wh.db")
	rw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rw.Close() })
	if _, err := rw.Exec(`CREATE TABLE usage_hourly (usage_id TEXT NOT NULL UNIQUE, account_id INTEGER, hour TEXT NOT NULL, egress_bytes BIGINT)`); err != nil {
		t.Fatal(err)
	}
	tx, err := rw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for h := today.Add(-6 * 24 * time.Hour); h.Before(today.Add(12 * time.Hour)); h = h.Add(time.Hour) {
		for acct := 1; acct <= 2; acct++ {
			var egress any = 1000 * acct
			if !h.Before(today) && h.Hour()%2 == 1 {
				egress = nil
			}
			if _, err := tx.Exec(`INSERT INTO usage_hourly VALUES (?, ?, ?, ?)`, fmt.Sprintf("u-%d-%s", acct, h.Format("2006010215")), acct, h.Format("2006-01-02 15:04:05"), egress); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return path, rw
}

// seedHistory runs the null-rate check at noon on each of the six days before today (all pass) and
// today (fails), as dw-quality's monitor would, and returns today's failing report. It leaves the
// clock at today's noon.
func seedHistory(t *testing.T, env *mcpkit.Env, clock *time.Time, today time.Time) *quality.Report {
	t.Helper()
	ctx := context.Background()
	st, err := env.Store.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wh, err := warehouse.Connect(env.Config.Warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	checker := quality.NewChecker(wh, quality.NewHistory(st), env.Now)
	var rep *quality.Report
	for day := 6; day >= 0; day-- {
		*clock = today.Add(time.Duration(-day)*24*time.Hour + 12*time.Hour)
		w, err := quality.ParseWindow(quality.WindowSpec{}, *clock)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err = checker.Run(ctx, quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Window: w, Checks: []quality.Check{quality.NullRate}}); err != nil {
			t.Fatal(err)
		}
		if want := day == 0; rep.Failed != want {
			t.Fatalf("day -%d: failed=%v, want %v: %s", day, rep.Failed, want, rep.Summary)
		}
	}
	return rep
}

func TestVerifyIncidentResolvesOnlyWhenTheCheckPasses(t *testing.T) {
	ctx := context.Background()
	today := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	clock := today.Add(-6*24*time.Hour + 12*time.Hour)
	env := mcpkittest.Env(t, "dw-incidents")
	env.Now = func() time.Time { return clock }
	path, rw := usageWarehouse(t, today)
	env.Config.Warehouse = &config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 10 * time.Second, MaxSampleRows: 5}

	// History: six good days at noon, then today's run fails on egress_bytes nulls.
	rep := seedHistory(t, env, &clock, today)
	st, err := env.Store.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	incs := incidents.New(st, env.Now)
	opened, err := incs.Open(ctx, rep.Asset, "null_rate", "sev2", "egress_bytes 50% null today against 0% in every earlier check", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	var diag diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": opened.ID}, &diag); e != "" {
		t.Fatal(e)
	}
	cause := diag.Cause
	t.Logf("diagnosis: %+v", diag.Diagnosis)

	// Still broken: not resolved, failed, and the timeline says what still fails.
	clock = today.Add(12*time.Hour + 10*time.Minute)
	var got verifyResult
	if e := mcpkittest.Call(t, verifyIncident(env), map[string]any{"incident_id": opened.ID, "timestamp_column": "hour"}, &got); e != "" {
		t.Fatal(e)
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
	if _, err := rw.Exec(`UPDATE usage_hourly SET egress_bytes = 1000 * account_id WHERE egress_bytes IS NULL`); err != nil {
		t.Fatal(err)
	}
	clock = today.Add(12*time.Hour + 20*time.Minute)
	got = verifyResult{}
	if e := mcpkittest.Call(t, verifyIncident(env), map[string]any{"incident_id": opened.ID, "timestamp_column": "hour"}, &got); e != "" {
		t.Fatal(e)
	}
	if !got.Resolved || got.Failed || got.Incident.Status != incidents.StatusResolved || got.ReceiptSeq == 0 {
		t.Fatalf("fixed data not resolved: %+v", got)
	}
	t.Log(got.Receipt)
	for _, want := range []string{cause, "## Checks before", "## Checks after", "resolved"} {
		if !strings.Contains(got.Receipt, want) {
			t.Errorf("receipt lacks %q:\n%s", want, got.Receipt)
		}
	}
	chain, err := receiptChain(ctx, env)
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
	var v receipts.Verification
	if e := mcpkittest.Call(t, verifyReceipts(env), nil, &v); e != "" || !v.OK {
		t.Fatalf("%s %+v", e, v)
	}
	// A resolved incident is not verified again.
	if e := mcpkittest.Call(t, verifyIncident(env), map[string]any{"incident_id": opened.ID}, nil); !strings.Contains(e, "already resolved") {
		t.Errorf("second verify: %q", e)
	}
}

func TestVerifyIncidentErrors(t *testing.T) {
	ctx := context.Background()
	env := mcpkittest.Env(t, "dw-incidents")
	env.Config.Warehouse = nil
	incs, err := incidentStore(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	open := func(asset, mode string) int64 {
		o, err := incs.Open(ctx, asset, mode, "sev2", "s", "test")
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
			env.Config.Warehouse = tc.wh
			e := mcpkittest.Call(t, verifyIncident(env), map[string]any{"incident_id": open(tc.asset, tc.mode)}, nil)
			if !strings.Contains(e, tc.want) {
				t.Errorf("got %q, want it to mention %q", e, tc.want)
			}
		})
	}
	if e := mcpkittest.Call(t, verifyIncident(env), map[string]any{"incident_id": 999}, nil); e == "" {
		t.Error("unknown incident accepted")
	}
}

// The receipt's evidence is the stored diagnosis's top candidate, read from the shape diagnose_incident stores.
func TestReceiptBodyTakesTheTopCandidatesEvidence(t *testing.T) {
	ctx := context.Background()
	env := mcpkittest.Env(t, "dw-incidents")
	incs, err := incidentStore(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	o, err := incs.Open(ctx, "warehouse:sqlite/main.usage_hourly", "null_rate", "sev1", "egress_bytes 18% null", "test")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(struct {
		Result diagnosis.Result `json:"result"`
	}{diagnosis.Result{Candidates: []diagnosis.Candidate{
		{Cause: "v12 removed response_bytes", Kind: "schema_change", Source: "schema:api-usage-value", Evidence: []string{"v12 first seen 22:41", "usage-hourly-rollup pinned to v11"}},
		{Cause: "connector task failed", Kind: "component_failure", Source: "connector:x", Evidence: []string{"task 0 FAILED"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := incs.RecordDiagnosis(ctx, o.ID, string(raw), "v12 removed response_bytes", "test"); err != nil {
		t.Fatal(err)
	}
	inc, err := incs.Get(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := receiptBody(ctx, env, incs, inc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Cause != "v12 removed response_bytes" || len(b.Evidence) != 2 || b.Evidence[0].Source != "schema:api-usage-value" || b.Evidence[1].Detail != "usage-hourly-rollup pinned to v11" {
		t.Fatalf("%+v", b)
	}
	// A diagnosis that is not JSON contributes no evidence instead of failing the receipt.
	if err := incs.RecordDiagnosis(ctx, o.ID, "not json", "c", "test"); err != nil {
		t.Fatal(err)
	}
	if b, err = receiptBody(ctx, env, incs, inc, nil, nil); err != nil || len(b.Evidence) != 0 {
		t.Fatalf("%v %+v", err, b)
	}
}

// When the plan moves the data to a -v2 table, the incident is judged on the new table (the old one
// keeps its bad rows), together with every other check the plan names; all must pass.
func TestVerifyIncidentJudgesThePlansChecksAndTheSupersedingOne(t *testing.T) {
	ctx := context.Background()
	today := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	var clock time.Time
	env := mcpkittest.Env(t, "dw-incidents")
	env.Now = func() time.Time { return clock }
	path, rw := usageWarehouse(t, today)
	env.Config.Warehouse = &config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 10 * time.Second, MaxSampleRows: 5}
	rep := seedHistory(t, env, &clock, today)
	st, err := env.Store.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The corrected statement writes usage_hourly_v2: every hour has egress_bytes, but one usage_id is doubled.
	if _, err := rw.Exec(`CREATE TABLE usage_hourly_v2 AS SELECT usage_id, account_id, hour, COALESCE(egress_bytes, 1000 * account_id) AS egress_bytes FROM usage_hourly`); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`INSERT INTO usage_hourly_v2 SELECT usage_id, account_id, hour, egress_bytes FROM usage_hourly_v2 WHERE hour = ?`, today.Add(3*time.Hour).Format("2006-01-02 15:04:05")); err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(rep.Asset, "usage_hourly", "usage_hourly_v2", 1)
	incs := incidents.New(st, env.Now)
	opened, err := incs.Open(ctx, rep.Asset, "null_rate", "sev1", "egress_bytes null", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := plans.Save(ctx, st, plans.Plan{IncidentID: opened.ID, CreatedBy: "dw-incidents",
		Proposals: []plans.Proposal{{Order: 1, Class: config.ClassFlinkStatement, Target: "flink:statement/usage-hourly-rollup", Title: "Corrected statement into usage-hourly-v2",
			Payload: map[string]any{"statement": "INSERT INTO `usage-hourly-v2` SELECT 1"}, Executor: plans.ExecutorOwner, Undo: "stop the -v2 statement"}},
		Checks: []plans.Check{
			{Asset: v2, Check: "null_rate", Columns: []string{"egress_bytes"}, Supersedes: rep.Asset, Why: "the data now lands in usage_hourly_v2"},
			{Asset: v2, Check: "uniqueness", KeyColumns: []string{"usage_id"}, Why: "usage_id stays unique"},
		}}, clock)
	if err != nil {
		t.Fatal(err)
	}

	clock = today.Add(12*time.Hour + 10*time.Minute)
	var got verifyResult
	if e := mcpkittest.Call(t, verifyIncident(env), map[string]any{"incident_id": opened.ID, "timestamp_column": "hour"}, &got); e != "" {
		t.Fatal(e)
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
	clock = clock.Add(10 * time.Minute)
	got = verifyResult{}
	if e := mcpkittest.Call(t, verifyIncident(env), map[string]any{"incident_id": opened.ID, "timestamp_column": "hour"}, &got); e != "" {
		t.Fatal(e)
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
func supersedeWorld(t *testing.T, oldChecks []quality.Check, planChecks []string) (env *mcpkit.Env, clock *time.Time, rw *sql.DB, incident int64) {
	t.Helper()
	ctx := context.Background()
	today := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	clock = new(time.Time)
	env = mcpkittest.Env(t, "dw-incidents")
	env.Now = func() time.Time { return *clock }
	path, rw := usageWarehouse(t, today)
	env.Config.Warehouse = &config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 10 * time.Second, MaxSampleRows: 5}
	st, err := env.Store.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wh, err := warehouse.Connect(env.Config.Warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	checker := quality.NewChecker(wh, quality.NewHistory(st), env.Now)
	var rep *quality.Report
	for day := 6; day >= 0; day-- {
		*clock = today.Add(time.Duration(-day)*24*time.Hour + 12*time.Hour)
		w, _ := quality.ParseWindow(quality.WindowSpec{}, *clock)
		if rep, err = checker.Run(ctx, quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Window: w, Checks: oldChecks}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rw.Exec(`CREATE TABLE usage_hourly_v2 AS SELECT * FROM usage_hourly WHERE hour >= ?`, today.Add(8*time.Hour).Format("2006-01-02 15:04:05")); err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(rep.Asset, "usage_hourly", "usage_hourly_v2", 1)
	inc, err := incidents.New(st, env.Now).Open(ctx, rep.Asset, "null_rate", "sev1", "egress_bytes null", "dw-quality")
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
	if _, err := plans.Save(ctx, st, plans.Plan{IncidentID: inc.ID, CreatedBy: "dw-incidents", Checks: checks}, *clock); err != nil {
		t.Fatal(err)
	}
	*clock = today.Add(12*time.Hour + 10*time.Minute)
	return env, clock, rw, inc.ID
}

func verifyOnce(t *testing.T, env *mcpkit.Env, incident int64) verifyResult {
	t.Helper()
	var got verifyResult
	if e := mcpkittest.Call(t, verifyIncident(env), map[string]any{"incident_id": incident, "timestamp_column": "hour"}, &got); e != "" {
		t.Fatal(e)
	}
	return got
}

func statusOf(got verifyResult) map[string]string {
	m := map[string]string{}
	for _, c := range got.Checks {
		m[c.Metric] = c.Status
	}
	return m
}

// A new -v2 table has no history of its own: it is judged by the history of the table it
// supersedes, so the same 50% nulls still fail there, and clean data resolves the incident.
func TestVerifyJudgesANewTableByTheHistoryOfTheTableItSupersedes(t *testing.T) {
	env, _, rw, incident := supersedeWorld(t, []quality.Check{quality.NullRate, quality.Volume, quality.Freshness}, []string{"null_rate", "volume", "freshness"})
	got := verifyOnce(t, env, incident)
	if got.Resolved || !got.Failed || statusOf(got)["null_rate"] != "fail" {
		t.Fatalf("the same nulls on the new table passed: %+v", got.Checks)
	}
	for _, c := range got.Checks {
		if c.Metric == "null_rate" && !strings.Contains(c.Why, "the table it supersedes") {
			t.Errorf("why: %s", c.Why)
		}
	}
	if _, err := rw.Exec(`UPDATE usage_hourly_v2 SET egress_bytes = 1000 * account_id WHERE egress_bytes IS NULL`); err != nil {
		t.Fatal(err)
	}
	got = verifyOnce(t, env, incident)
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _, rw, incident := supersedeWorld(t, tc.oldChecks, tc.planChecks)
			if _, err := rw.Exec(`UPDATE usage_hourly_v2 SET egress_bytes = 1000 * account_id WHERE egress_bytes IS NULL`); err != nil {
				t.Fatal(err)
			}
			got := verifyOnce(t, env, incident)
			last := got.Incident.Events[len(got.Incident.Events)-1]
			if got.Resolved || !got.Failed || !strings.Contains(last.Detail, tc.want) {
				t.Fatalf("resolved=%v; timeline %q; checks %+v", got.Resolved, last.Detail, got.Checks)
			}
		})
	}
}
