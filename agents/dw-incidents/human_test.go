package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/store"
)

func sum(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// approvalWorld writes a config with one billing domain and returns a runner for the binary's
// subcommands (exactly what main runs) with DW_APPROVER_TOKEN as given.
func approvalWorld(t *testing.T) func(token, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return approvalWorldIn(t, t.TempDir())
}

// approvalWorldIn is approvalWorld with the store at dir/dw.db.
func approvalWorldIn(t *testing.T, dir string) func(token, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cfg := filepath.Join(dir, "dw.yaml")
	os.WriteFile(cfg, []byte(`store:
  path: `+filepath.Join(dir, "dw.db")+`
domains:
  - name: billing
    assets: ["job:airflow/*"]
    owners: [billing-data-owner]
    approvers:
      - {name: platform-owner, token_sha256: `+sum("s3cret-platform")+`}
    autonomy: L2
`), 0o600)
	// request_approval checks a job proposal against the context graph, as the catalog sync fills it.
	st, err := store.Open(context.Background(), filepath.Join(dir, "dw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = graph.New(st, nil).Import(context.Background(), graph.Batch{Source: "test:airflow",
		Assets: []graph.Asset{{URN: "job:airflow/sync_metered_usage_to_stripe", Kind: graph.KindJob}}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	agent := mcpkit.Agent{Name: "dw-incidents", Tools: tools, Commands: humanCommands()}
	return func(token, stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		env := func(k string) (string, bool) {
			switch k {
			case "DW_CONFIG":
				return cfg, true
			case "DW_APPROVER_TOKEN":
				return token, token != ""
			}
			return "", false
		}
		code := mcpkit.Run(context.Background(), agent, args, mcpkit.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb}, env)
		return code, out.String(), errb.String()
	}
}

func TestAnApproverDecidesFromTheCLIWhatAToolRequested(t *testing.T) {
	run := approvalWorld(t)
	code, out, errOut := run("", "", "call", "request_approval", `{"incident_id":7,"proposals":[{"class":"pause_job","target":"job:airflow/sync_metered_usage_to_stripe","title":"Pause the 23:00 Stripe sync","payload":{"dag_id":"sync_metered_usage_to_stripe"}}]}`)
	if code != 0 {
		t.Fatalf("request_approval: %d %s %s", code, out, errOut)
	}
	var res approvalsResult
	json.Unmarshal([]byte(out), &res)
	if len(res.Requests) != 1 || res.Requests[0].Status != "pending" || res.Requests[0].Approvers[0] != "platform-owner" {
		t.Fatalf("%s", out)
	}
	hash := res.Requests[0].PayloadSHA256

	code, out, _ = run("", "", "approvals", "show", "1")
	if code != 0 || !strings.Contains(out, hash) || !strings.Contains(out, `"dag_id": "sync_metered_usage_to_stripe"`) {
		t.Fatalf("show: %d %s", code, out)
	}
	if code, _, errOut = run("wrong-token", "", "approvals", "approve", "1", "--as", "platform-owner", "--sha256", hash); code != 1 || !strings.Contains(errOut, "wrong token") {
		t.Fatalf("wrong token: %d %s", code, errOut)
	}
	if code, _, errOut = run("", "", "approvals", "approve", "1", "--as", "platform-owner", "--sha256", hash); code != 2 || !strings.Contains(errOut, "DW_APPROVER_TOKEN") {
		t.Fatalf("no token: %d %s", code, errOut)
	}
	code, out, errOut = run("s3cret-platform", "", "approvals", "approve", "1", "--as", "platform-owner", "--sha256", hash, "--comment", "hold it")
	if code != 0 || !strings.Contains(out, "request #1 approved by platform-owner") {
		t.Fatalf("approve: %d %s %s", code, out, errOut)
	}
	code, out, _ = run("", "", "call", "get_approval_status", `{"request_id":1}`)
	if code != 0 || !strings.Contains(out, `"status": "approved"`) || !strings.Contains(out, `"decided_by": "platform-owner"`) {
		t.Fatalf("status: %s", out)
	}
	if strings.Contains(out, "s3cret-platform") {
		t.Fatal("a token leaked into tool output")
	}
}

func TestOnlyAnAuthenticatedApproverStopsAndResumes(t *testing.T) {
	run := approvalWorld(t)
	if code, _, _ := run("nope", "", "stop", "--as", "platform-owner", "--reason", "bad numbers"); code != 1 {
		t.Fatalf("stop with a wrong token exited %d", code)
	}
	if code, _, _ := run("s3cret-platform", "", "stop", "--as", "platform-owner"); code != 2 {
		t.Fatalf("stop without a reason exited %d", code)
	}
	code, out, _ := run("s3cret-platform", "", "stop", "--as", "platform-owner", "--reason", "bad numbers")
	if code != 0 || !strings.Contains(out, "stop ON") {
		t.Fatalf("stop: %d %s", code, out)
	}
	_, out, _ = run("", "", "call", "get_approval_status", `{}`)
	if !strings.Contains(out, `"stopped": true`) {
		t.Fatalf("status does not show the stop: %s", out)
	}
	code, out, _ = run("s3cret-platform", "", "resume", "--as", "platform-owner")
	if code != 0 || !strings.Contains(out, "lifted") {
		t.Fatalf("resume: %d %s", code, out)
	}
}

func TestNoToolCanApproveStopOrChangeAutonomy(t *testing.T) {
	for _, tl := range tools(nil) {
		n := tl.Name
		for _, banned := range []string{"approve", "reject", "stop", "resume", "autonomy", "decide", "grant", "severity", "settle", "set_status"} {
			if strings.Contains(n, banned) {
				t.Errorf("tool %s looks like it could %s; that must stay a human command", n, banned)
			}
		}
	}
}

func TestOnlyAnAuthenticatedApproverSetsAPersonsSeverity(t *testing.T) {
	run := approvalWorld(t)
	code, out, errOut := run("", "", "call", "open_incident", `{"asset":"job:airflow/sync_metered_usage_to_stripe","failure_mode":"volume","summary":"no rows pushed"}`)
	if code != 0 {
		t.Fatalf("open_incident: %d %s %s", code, out, errOut)
	}
	if code, _, errOut = run("wrong-token", "", "severity", "1", "sev1", "--as", "platform-owner"); code != 1 || !strings.Contains(errOut, "wrong token") {
		t.Fatalf("wrong token: %d %s", code, errOut)
	}
	if code, _, errOut = run("", "", "severity", "1", "sev1", "--as", "platform-owner"); code != 2 || !strings.Contains(errOut, "DW_APPROVER_TOKEN") {
		t.Fatalf("no token: %d %s", code, errOut)
	}
	if code, _, errOut = run("s3cret-platform", "", "severity", "1", "sev7", "--as", "platform-owner"); code != 2 || !strings.Contains(errOut, "sev1, sev2, sev3 or sev4") {
		t.Fatalf("bad severity: %d %s", code, errOut)
	}
	if code, _, _ = run("s3cret-platform", "", "severity", "1", "sev1"); code != 2 {
		t.Fatalf("no --as: %d", code)
	}
	if code, _, errOut = run("s3cret-platform", "", "severity", "99", "sev1", "--as", "platform-owner"); code != 1 || !strings.Contains(errOut, "no incident #99") {
		t.Fatalf("unknown incident: %d %s", code, errOut)
	}
	code, out, errOut = run("s3cret-platform", "", "severity", "1", "sev1", "--as", "platform-owner", "--reason", "Stripe invoices tonight")
	if code != 0 || !strings.Contains(out, "incident #1 is sev1, set by platform-owner") {
		t.Fatalf("severity: %d %s %s", code, out, errOut)
	}
	_, out, _ = run("", "", "call", "get_incident_history", `{"incident_id":1}`)
	if !strings.Contains(out, `"severity": "sev1"`) || !strings.Contains(out, `"kind": "severity_set"`) || !strings.Contains(out, `"actor": "platform-owner"`) ||
		!strings.Contains(out, "Stripe invoices tonight") {
		t.Fatalf("history: %s", out)
	}
	if strings.Contains(out, "s3cret-platform") {
		t.Fatal("a token leaked into tool output")
	}
}

// An action a crashed process left running is listed for approvers and settled only by one of them,
// with the token; the outcome lands on the action and the incident's timeline.
func TestAnApproverSettlesAnInterruptedAction(t *testing.T) {
	dir := t.TempDir()
	run := approvalWorldIn(t, dir)
	if code, out, errOut := run("", "", "call", "open_incident", `{"asset":"warehouse:sqlite/main.usage_hourly","failure_mode":"null_rate","summary":"egress_bytes null"}`); code != 0 {
		t.Fatalf("open_incident: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := run("", "", "call", "request_approval", `{"incident_id":1,"proposals":[{"class":"trigger_job","target":"job:airflow/sync_metered_usage_to_stripe","title":"Re-send today","payload":{"dag_id":"sync_metered_usage_to_stripe"}}]}`); code != 0 {
		t.Fatalf("request_approval: %d %s %s", code, out, errOut)
	}
	// What a process that died between dispatch and recording leaves behind.
	code, out, errOut := run("", "", "actions", "interrupted")
	if code != 0 || !strings.Contains(out, "no interrupted actions") {
		t.Fatalf("interrupted on an empty store: %d %q %q", code, out, errOut)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "dw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.DB.Exec(`INSERT INTO actions (request_id, incident_id, class, target, payload, approved_by, status, started_at, finished_at)
		VALUES (1, 1, 'trigger_job', 'job:airflow/sync_metered_usage_to_stripe', '{"dag_id":"sync_metered_usage_to_stripe"}', 'platform-owner', 'running', '2026-11-29T15:00:00Z', '2026-11-29T15:00:00Z')`); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run("", "", "actions", "interrupted"); code != 0 || !strings.Contains(out, "#1") || !strings.Contains(out, "trigger_job") {
		t.Fatalf("interrupted: %d %q", code, out)
	}
	if code, _, errOut := run("wrong", "", "actions", "settle", "1", "failed", "--as", "platform-owner", "--reason", "no run in Airflow"); code != mcpkit.ExitToolError || !strings.Contains(errOut, "wrong token") {
		t.Fatalf("a wrong token settled it: %d %q", code, errOut)
	}
	if code, _, _ := run("s3cret-platform", "", "actions", "settle", "1", "failed", "--as", "platform-owner"); code != mcpkit.ExitUsage {
		t.Fatalf("settled without a reason: %d", code)
	}
	code, out, errOut = run("s3cret-platform", "", "actions", "settle", "1", "failed", "--as", "platform-owner", "--reason", "no run in Airflow")
	if code != 0 || !strings.Contains(out, "settled as failed by platform-owner") {
		t.Fatalf("settle: %d %q %q", code, out, errOut)
	}
	var status, detail string
	if err := st.DB.QueryRow(`SELECT status FROM actions WHERE id = 1`).Scan(&status); err != nil || status != "failed" {
		t.Fatalf("action status %q (%v)", status, err)
	}
	if err := st.DB.QueryRow(`SELECT detail FROM incident_events WHERE incident_id = 1 AND kind = 'action' ORDER BY id DESC LIMIT 1`).Scan(&detail); err != nil || !strings.Contains(detail, "settled as failed: no run in Airflow") {
		t.Fatalf("incident event %q (%v)", detail, err)
	}
}

// A person's judgement of an incident — false positive, expected, mitigated — is theirs alone, with
// the token; resolved is left to verify_incident.
func TestOnlyAnAuthenticatedApproverSetsAnIncidentsStatus(t *testing.T) {
	run := approvalWorld(t)
	if code, out, errOut := run("", "", "call", "open_incident", `{"asset":"warehouse:sqlite/main.usage_hourly","failure_mode":"volume","summary":"rows per hour dropped"}`); code != 0 {
		t.Fatalf("open_incident: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := run("s3cret-platform", "", "status", "1", "resolved", "--as", "platform-owner", "--reason", "looks fine"); code != mcpkit.ExitUsage || !strings.Contains(errOut, "verify_incident") {
		t.Fatalf("a person resolved it without checks: %d %q", code, errOut)
	}
	if code, _, errOut := run("wrong", "", "status", "1", "false_positive", "--as", "platform-owner", "--reason", "backfill"); code != mcpkit.ExitToolError || !strings.Contains(errOut, "wrong token") {
		t.Fatalf("a wrong token set the status: %d %q", code, errOut)
	}
	if code, _, _ := run("s3cret-platform", "", "status", "1", "false_positive", "--as", "platform-owner"); code != mcpkit.ExitUsage {
		t.Fatalf("set without a reason: %d", code)
	}
	code, out, errOut := run("s3cret-platform", "", "status", "1", "false_positive", "--as", "platform-owner", "--reason", "planned backfill")
	if code != 0 || !strings.Contains(out, "incident #1 is false_positive, set by platform-owner") {
		t.Fatalf("status: %d %q %q", code, out, errOut)
	}
	code, out, _ = run("", "", "call", "get_incident_history", `{"incident_id":1}`)
	if code != 0 || !strings.Contains(out, `"status": "false_positive"`) || !strings.Contains(out, "planned backfill") {
		t.Fatalf("history after status: %d %s", code, out)
	}
}
