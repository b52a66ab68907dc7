package demo

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	os.Exit(m.Run())
}

func repo(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root, err := FindRoot(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// buildAgents builds the five agents into the repository's bin/ through start-agent.sh, exactly
// as `./start-agent.sh demo` and an MCP client's first start do (it rebuilds only when stale);
// the tests write nothing else there.
func buildAgents(t testing.TB, root string) {
	t.Helper()
	if err := BuildAgents(context.Background(), root, os.Stderr); err != nil {
		t.Fatal(err)
	}
}

// assertNothingLeft checks that every process the run started has exited and that every
// stand-in's own shutdown returned (its listener closed), by the servers' state rather than by
// dialling the freed ports, which another process may take.
func assertNothingLeft(t *testing.T, res *Result) {
	t.Helper()
	for _, pid := range res.PIDs {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d is still there (kill 0: %v)", pid, err)
		}
	}
	for _, addr := range res.Listeners {
		msg, ok := res.Stopped[addr]
		if !ok {
			t.Errorf("stand-in on %s was never shut down", addr)
		} else if msg != "" {
			t.Errorf("stand-in on %s: shutdown failed: %s", addr, msg)
		}
	}
}

// The whole afternoon through the five built binaries, asserting each step's facts rather than
// exit codes: one incident opened then joined, the cause, the blast radius, the pause on the
// Airflow stand-in, the resolution, the receipt chain (and that it catches tampering), the L4
// gate, and that nothing the run started outlives it. The user's own DW_* settings (read-only,
// a tool allow-list, a stray approver token) must not reach the story's agents.
func TestTheAfternoonEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the five agents")
	}
	theAfternoon(t, "")
}

// The same afternoon with the agents' store on PostgreSQL (DW_STORE_URL), the same facts asserted.
func TestTheAfternoonOnAPostgresStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the five agents")
	}
	_, opts := storetest.LocationOn(t, store.PostgreSQL)
	theAfternoon(t, opts.URL)
}

func theAfternoon(t *testing.T, storeURL string) {
	root := repo(t)
	buildAgents(t, root)
	t.Setenv("DW_READ_ONLY", "true")
	t.Setenv("DW_APPROVER_TOKEN", "junk")
	t.Setenv("DW_TOOLS", "list_tools")
	t.Setenv("DW_EXCLUDE_TOOLS", "remediate,sync_catalog")
	t.Setenv("DW_LOG_LEVEL", "debug")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var live bytes.Buffer
	res, err := Run(ctx, Options{Root: root, Bin: filepath.Join(root, "bin"), Home: t.TempDir(), Out: &live, StoreURL: storeURL})
	t.Logf("timeline:\n%s\n%s", Header(), live.String())
	if err != nil {
		dir := ""
		if res != nil {
			dir = res.Dir
		}
		t.Fatalf("the story broke: %v (tool results under %s)", err, filepath.Join(dir, "calls"))
	}

	// Nothing outlives the run: every child process has exited, every stand-in shut down.
	if len(res.PIDs) < len(AgentNames) {
		t.Errorf("only %d processes recorded", len(res.PIDs))
	}
	assertNothingLeft(t, res)

	// Detection: one incident, opened by the first failing check and joined by the second.
	if (res.StoreURL != "") != (storeURL != "") {
		t.Fatalf("asked for a PostgreSQL store: %v; the agents used one: %v", storeURL != "", res.StoreURL != "")
	}
	dw, err := store.Open(ctx, filepath.Join(res.Dir, "dw.db"), store.Options{URL: res.StoreURL})
	if err != nil {
		t.Fatal(err)
	}
	defer dw.Close()
	st := dw.DB
	var incidents int
	if err := st.QueryRow(`SELECT COUNT(*) FROM incidents`).Scan(&incidents); err != nil {
		t.Fatal(err)
	}
	if !res.Opened || !res.Joined || incidents != 1 || res.IncidentID == 0 {
		t.Errorf("opened=%v joined=%v incidents=%d id=%d", res.Opened, res.Joined, incidents, res.IncidentID)
	}
	if res.NullShare < 0.1 || res.NullShare > 0.3 {
		t.Errorf("egress_bytes null share %.3f, want the story's ~18%%", res.NullShare)
	}

	// The lake: Tableflow's Iceberg table holds the week of history and the v12 hours as two
	// snapshots, and the check from its manifests alone found the warehouse's null share.
	if math.Abs(res.LakeNullShare-res.NullShare) > 1e-6 { // a result's value keeps six decimals
		t.Errorf("lake null share %v, warehouse %v", res.LakeNullShare, res.NullShare)
	}
	l, err := lake.Open(ctx, lakeConfig(res.Dir))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tbl, err := l.Load(ctx, "tableflow:"+HourlyTopic)
	if err != nil {
		t.Fatal(err)
	}
	if loads := lake.LoadHistory(tbl); len(loads) != 2 || loads[0].AddedRecords == 0 || loads[1].AddedRecords == 0 {
		t.Errorf("lake snapshots = %+v, want the history and the v12 hours", loads)
	}
	if !slices.ContainsFunc(res.Timeline, func(st Step) bool {
		return st.Tool == "run_quality_check" && strings.Contains(st.Found, "tableflow:"+HourlyTopic) && strings.Contains(st.Found, "FAIL egress_bytes")
	}) {
		t.Error("the timeline has no lake check of the hourly topic")
	}

	// Diagnosis: v12's removal of response_bytes, and the statement still pinned to v11.
	ev := strings.Join(res.CauseEvidence, "\n")
	if !strings.Contains(res.Cause, "v12") || !strings.Contains(res.Cause, "response_bytes") ||
		!strings.Contains(ev, "flink:statement/usage-hourly-rollup reads SUM(response_bytes), pinned to v11") {
		t.Errorf("cause %q, evidence:\n%s", res.Cause, ev)
	}

	// Blast radius: the model, the workbook, the 23:00 Stripe DAG and Stripe; not the unrelated DAG.
	for _, want := range []string{"dbt:model.billing.fct_billable_egress", "bi:sigma/revenue-today", "job:airflow/" + StripeDAG} {
		if !slices.Contains(res.BlastRadius, want) {
			t.Errorf("blast radius lacks %s: %v", want, res.BlastRadius)
		}
	}
	if !slices.Contains(res.ExternalSinks, "sink:stripe") || !slices.Contains(res.ScheduledJobs, "job:airflow/"+StripeDAG) {
		t.Errorf("sinks %v, scheduled jobs %v", res.ExternalSinks, res.ScheduledJobs)
	}
	if slices.Contains(res.BlastRadius, "job:airflow/"+OtherDAG) {
		t.Errorf("the unrelated DAG is in the blast radius: %v", res.BlastRadius)
	}

	// The plan came from propose_remediation and every step was approved by the named owner.
	if res.PlanID == 0 || len(res.RequestIDs) != 5 {
		t.Errorf("plan %d, requests %v", res.PlanID, res.RequestIDs)
	}
	var approvedBy []string
	rows, err := st.Query(`SELECT decided_by FROM approval_requests WHERE incident_id = ? ORDER BY id`, res.IncidentID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var who sql.NullString
		if err := rows.Scan(&who); err != nil {
			t.Fatal(err)
		}
		approvedBy = append(approvedBy, who.String)
	}
	rows.Close()
	if len(approvedBy) != 5 || slices.ContainsFunc(approvedBy, func(s string) bool { return s != Approver }) {
		t.Errorf("decided by %v, want %s on every request", approvedBy, Approver)
	}

	// Hold and the owner's side: the DAG paused on the Airflow stand-in, the owner steps handed
	// over, v13 registered with its approval.
	if !res.DAGPaused || len(res.OwnerSteps) == 0 || res.V13Version != 13 {
		t.Errorf("paused=%v owner steps=%d v13=%d", res.DAGPaused, len(res.OwnerSteps), res.V13Version)
	}

	// Verification and the receipt.
	if !res.Resolved || res.ReceiptSeq == 0 || !res.ReceiptsOK {
		t.Errorf("resolved=%v receipt=%d chain ok=%v", res.Resolved, res.ReceiptSeq, res.ReceiptsOK)
	}
	md, err := os.ReadFile(res.ReceiptMD)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"api-usage-value v12 removed response_bytes", "maya.okafor", "pause_job", "usage_hourly_v2", "resolved"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("receipt lacks %q", want)
		}
	}
	var rc struct {
		Seq  int64           `json:"seq"`
		MAC  string          `json:"mac"`
		Body json.RawMessage `json:"body"`
	}
	raw, err := os.ReadFile(res.ReceiptJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rc); err != nil || rc.Seq != res.ReceiptSeq || rc.MAC == "" || len(rc.Body) == 0 {
		t.Errorf("receipt JSON %s: %v", raw, err)
	}

	// L4: the CI gate blocks v12 (exit 100) before registration and lets v13 through (exit 0).
	if res.GateV12 != 100 || res.GateV13 != 0 {
		t.Errorf("check_schema_change exits: v12 %d, v13 %d", res.GateV12, res.GateV13)
	}

	// Tampering with the stored receipt is caught by the chain.
	if _, err := st.Exec(`UPDATE receipts SET body = replace(body, 'maya.okafor', 'mallory') WHERE seq = ?`, res.ReceiptSeq); err != nil {
		t.Fatal(err)
	}
	agentEnv := []string{"DW_CONFIG=" + res.Config, "DW_HOME=" + res.Dir}
	if res.StoreURL != "" {
		agentEnv = append(agentEnv, "DW_STORE_URL="+res.StoreURL)
	}
	a := newAgents(filepath.Join(root, "bin"), agentEnv, filepath.Join(res.Dir, "logs"))
	out, code, _ := a.run(ctx, "dw-incidents", nil, "call", "verify_receipts")
	var v struct {
		OK       bool `json:"ok"`
		Problems []struct {
			Seq int64 `json:"seq"`
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 100 || v.OK || len(v.Problems) == 0 || v.Problems[0].Seq != res.ReceiptSeq {
		t.Errorf("tampered receipt not caught: exit %d, %s (%v)", code, out, err)
	}
}

// cancelOn cancels the run when the timeline prints a line containing word.
type cancelOn struct {
	word   string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.word) {
		c.cancel()
	}
	return len(p), nil
}

// Ctrl-C in the middle of the story (the agents running, the stand-ins listening) still ends
// every process and listener the run started.
func TestACancelledRunLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the five agents")
	}
	root := repo(t)
	buildAgents(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Run(ctx, Options{Root: root, Bin: filepath.Join(root, "bin"), Home: t.TempDir(), Out: cancelOn{"run_quality_check ×6", cancel}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(res.PIDs) == 0 || len(res.Listeners) == 0 {
		t.Fatalf("the run was cancelled before it started anything: %+v", res)
	}
	assertNothingLeft(t, res)
}

// Ctrl-C while a tool call is in flight: the first progress notification of sync_catalog (the
// server is mid-sync) cancels the run; the call is abandoned, and still every process and
// listener ends.
func TestACancelDuringAnInFlightCallLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the five agents")
	}
	root := repo(t)
	buildAgents(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var during []string
	opts := Options{Root: root, Bin: filepath.Join(root, "bin"), Home: t.TempDir(),
		onProgress: func(agent, msg string) {
			mu.Lock()
			during = append(during, agent+": "+msg)
			mu.Unlock()
			cancel()
		}}
	res, err := Run(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(during) == 0 || !strings.HasPrefix(during[0], "dw-context-catalog: ") {
		t.Fatalf("no progress notification arrived during a call before the run ended: %v", during)
	}
	t.Logf("cancelled on %q: %v", during[0], err)
	assertNothingLeft(t, res)
}
