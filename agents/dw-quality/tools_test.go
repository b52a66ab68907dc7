package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/store"
)

func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	os.Exit(m.Run())
}

func TestToolSnapshots(t *testing.T) {
	mcpkittest.CheckSnapshots(t, tools(mcpkittest.Env(t, "dw-quality")))
}

func TestToolSurfaceInvariants(t *testing.T) {
	mcpkittest.CheckInvariants(t, "dw-quality", tools(mcpkittest.Env(t, "dw-quality")))
}

// env builds the agent's env on the embedded config with a small SQLite warehouse: usage_hourly
// with 10 hours × 10 rows a day for 8 days; on the last day egress_bytes is null in 18 % of rows.
func env(t *testing.T) (*mcpkit.Env, *time.Time) {
	t.Helper()
	e := mcpkittest.Env(t, "dw-quality")
	db, err := sql.Open("sqlite3", e.Config.Warehouse.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{
		`CREATE TABLE usage_hourly (usage_id TEXT NOT NULL PRIMARY KEY, account_id INTEGER, hour TEXT NOT NULL, egress_bytes INTEGER)`,
		`INSERT INTO usage_hourly WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < 799)
		 SELECT 'u-' || i, i % 7, strftime('%Y-%m-%dT%H:00:00Z', '2025-12-08', '+' || (i / 100) || ' days', '+' || ((i % 100) / 10) || ' hours'),
		   CASE WHEN i / 100 = 7 AND i % 50 < 9 THEN NULL ELSE i END FROM seq`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2025, 12, 8, 16, 5, 0, 0, time.UTC)
	e.Now = func() time.Time { return now }
	return e, &now
}

func tool(t *testing.T, e *mcpkit.Env, name string) mcpkit.Tool {
	t.Helper()
	for _, tl := range tools(e) {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return mcpkit.Tool{}
}

func TestRunQualityCheckExplainsTheNullSpike(t *testing.T) {
	e, now := env(t)
	run := tool(t, e, "run_quality_check")
	var rep quality.Report
	for day := 0; day < 7; day++ {
		if msg := mcpkittest.Call(t, run, map[string]any{"table": "main.usage_hourly", "timestamp_column": "hour"}, &rep); msg != "" {
			t.Fatalf("day %d: %s", day, msg)
		}
		if rep.Failed {
			t.Fatalf("day %d failed: %s", day, rep.Summary)
		}
		*now = now.Add(24 * time.Hour)
	}
	if msg := mcpkittest.Call(t, run, map[string]any{"table": "usage_hourly", "timestamp_column": "hour", "open_incident": true}, &rep); msg != "" {
		t.Fatal(msg)
	}
	if !rep.Failed || rep.Asset != "warehouse:sqlite/main.usage_hourly" || len(rep.Incidents) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	if !strings.Contains(rep.Summary, "egress_bytes: 18% null today against 0% in every earlier check") {
		t.Errorf("summary = %q", rep.Summary)
	}

	var hist getCheckHistoryResult
	if msg := mcpkittest.Call(t, tool(t, e, "get_check_history"), map[string]any{"table": "usage_hourly", "metric": "null_rate", "subject": "egress_bytes", "limit": 3}, &hist); msg != "" {
		t.Fatal(msg)
	}
	if len(hist.Runs) != 3 || hist.Runs[0].Status != "fail" || hist.Runs[0].Metrics[0].Value != 0.18 || hist.Runs[1].Metrics[0].Value != 0 {
		t.Errorf("history = %+v", hist.Runs)
	}
}

func TestRunQualityCheckErrorsSayWhatToDo(t *testing.T) {
	e, _ := env(t)
	run := tool(t, e, "run_quality_check")
	cases := map[string]struct {
		args map[string]any
		want string
	}{
		"missing table":  {map[string]any{"table": "nope"}, "list_tables"},
		"hostile column": {map[string]any{"table": "usage_hourly", "timestamp_column": `hour"; DROP TABLE usage_hourly; --`}, "is not in main.usage_hourly"},
		"bad window":     {map[string]any{"table": "usage_hourly", "window": "fortnight"}, "use today, yesterday"},
		"bad zone":       {map[string]any{"table": "usage_hourly", "time_zone": "Mars/Olympus"}, "IANA"},
		"bad metric":     {map[string]any{"table": "usage_hourly", "metrics": []string{"nulls"}}, "unknown"},
		"write sql":      {map[string]any{"table": "usage_hourly", "metrics": []string{"custom"}, "assertions": []map[string]any{{"name": "x", "sql": "DELETE FROM usage_hourly"}}}, "SELECT"},
		"unknown arg":    {map[string]any{"table": "usage_hourly", "tabel": "x"}, "invalid arguments"},
	}
	for name, c := range cases {
		if msg := mcpkittest.Call(t, run, c.args, nil); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q does not contain %q", name, msg, c.want)
		}
	}
	e.Config.Warehouse = nil
	if msg := mcpkittest.Call(t, tool(t, e, "run_quality_check"), map[string]any{"table": "usage_hourly"}, nil); !strings.Contains(msg, "warehouse.engine") {
		t.Errorf("unconfigured warehouse: %q", msg)
	}
}

func TestProfileTableInOnePass(t *testing.T) {
	e, _ := env(t)
	var p quality.Profile
	if msg := mcpkittest.Call(t, tool(t, e, "profile_table"), map[string]any{"table": "usage_hourly", "distinct": true}, &p); msg != "" {
		t.Fatal(msg)
	}
	if p.Rows != 800 || len(p.Columns) != 4 || strings.Count(p.SQL, "SELECT") != 1 {
		t.Fatalf("profile = %+v", p)
	}
	eg := p.Columns[3]
	if eg.Name != "egress_bytes" || eg.Nulls != 18 || eg.Distinct == nil || *eg.Distinct != 782 || eg.Max != float64(799) || eg.Min != float64(0) {
		t.Errorf("egress_bytes = %+v (min %T)", eg, eg.Min)
	}
}

func TestRunMonitorsRunsDueOnesAndFailsTheGate(t *testing.T) {
	e, now := env(t)
	e.Config.Domains = []config.Domain{{Name: "billing", Assets: []string{"warehouse:sqlite/*"}, Autonomy: "L1"}}
	e.Config.Monitors = []config.Monitor{
		{Name: "usage", Domain: "billing", Table: "usage_hourly", TimestampColumn: "hour", KeyColumns: []string{"usage_id"}, Schedule: "5 * * * *",
			Assertions: []config.MonitorAssertion{{Name: "egress_present", SQL: "SELECT * FROM usage_hourly WHERE egress_bytes IS NULL AND hour >= {{window_start}}"}}},
		{Name: "usage-volume", Table: "usage_hourly", TimestampColumn: "hour", Checks: []string{"volume"}, Schedule: "@daily"},
	}
	mon := tool(t, e, "run_monitors")
	var res runMonitorsResult
	*now = time.Date(2025, 12, 1, 16, 5, 0, 0, time.UTC) // a day without data: no failure yet, first runs
	if msg := mcpkittest.Call(t, mon, nil, &res); msg != "" {
		t.Fatal(msg)
	}
	if res.Ran != 2 {
		t.Fatalf("first call ran %d: %+v", res.Ran, res)
	}
	// Ten minutes later neither is due.
	*now = now.Add(10 * time.Minute)
	if msg := mcpkittest.Call(t, mon, nil, &res); msg != "" || res.Ran != 0 || res.NotDue != 2 || res.Failed {
		t.Fatalf("second call: %q %+v", msg, res)
	}
	// On the spike day the hourly monitor is due and its custom rule fails: the gate fails and
	// the L1 domain opens an incident.
	*now = time.Date(2025, 12, 15, 16, 5, 0, 0, time.UTC)
	if msg := mcpkittest.Call(t, mon, map[string]any{"names": []string{"usage"}}, &res); msg != "" {
		t.Fatal(msg)
	}
	if !res.Failed || res.Runs[0].Status != "fail" || len(res.Runs[0].Incidents) == 0 || len(res.Runs[0].Failures) == 0 {
		t.Fatalf("spike day: %+v", res)
	}
	var list listMonitorsResult
	if msg := mcpkittest.Call(t, tool(t, e, "list_monitors"), nil, &list); msg != "" {
		t.Fatal(msg)
	}
	if len(list.Monitors) != 2 || list.Monitors[0].LastStatus != "fail" || list.Monitors[0].Autonomy != "L1" || list.Monitors[0].Due {
		t.Errorf("list = %+v", list.Monitors)
	}
	if msg := mcpkittest.Call(t, mon, map[string]any{"names": []string{"ghost"}}, nil); !strings.Contains(msg, "not configured") {
		t.Errorf("unknown monitor: %q", msg)
	}
}

// TestCallRunMonitorsExitsOneWhenAMonitorFails is the cron/CI contract: `dw-quality call
// run_monitors` exits 100 (mcpkit.ExitBlocked) when any monitor fails, 0 when all pass.
func TestCallRunMonitorsExitsOneWhenAMonitorFails(t *testing.T) {
	dir := t.TempDir()
	whPath := ordersWarehouse(t, dir, -5)
	for _, c := range []struct {
		rule string
		exit int
	}{{"amount < 0", mcpkit.ExitBlocked}, {"amount > 1000", mcpkit.ExitOK}} {
		cfg := filepath.Join(dir, "dw.yaml")
		yaml := "store: {path: " + filepath.Join(dir, "dw.db") + "}\nwarehouse: {engine: sqlite, dsn: " + whPath + "}\n" +
			"monitors:\n  - name: orders-" + strings.Fields(c.rule)[1] + "\n    table: orders\n    timestamp_column: created_at\n    checks: [custom]\n    schedule: '@hourly'\n" +
			"    assertions: [{name: amount_ok, sql: 'SELECT * FROM orders WHERE " + c.rule + "'}]\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut strings.Builder
		code := mcpkit.Run(context.Background(), mcpkit.Agent{Name: "dw-quality", Tools: tools}, []string{"--config", cfg, "call", "run_monitors"},
			mcpkit.IO{In: strings.NewReader(""), Out: &out, Err: &errOut}, func(string) (string, bool) { return "", false })
		if code != c.exit {
			t.Errorf("rule %s: exit %d, want %d\nstdout: %s\nstderr: %s", c.rule, code, c.exit, out.String(), errOut.String())
		}
		if want := `"failed": ` + map[int]string{0: "false", 1: "true"}[c.exit]; !strings.Contains(out.String(), want) {
			t.Errorf("rule %s: stdout lacks %s: %s", c.rule, want, out.String())
		}
	}
}

func TestRunQualityCheckColumnDimensionAndSchemaThroughTheTool(t *testing.T) {
	e, _ := env(t)
	run := tool(t, e, "run_quality_check")
	var rep quality.Report
	args := map[string]any{"table": "usage_hourly", "timestamp_column": "hour", "metrics": []string{"column", "dimension", "schema_changes"},
		"columns": []string{"egress_bytes"}, "column_metrics": []string{"sum_per_hour", "mean", "distinct"},
		"dimension": map[string]any{"column": "account_id", "top": 3}, "thresholds": []map[string]any{{"metric": "mean", "column": "egress_bytes", "min": 1}}}
	if msg := mcpkittest.Call(t, run, args, &rep); msg != "" {
		t.Fatal(msg)
	}
	got := map[string]quality.Result{}
	for _, r := range rep.Results {
		got[r.Metric+" "+r.Subject] = r
	}
	for _, k := range []string{"sum_per_hour egress_bytes", "mean egress_bytes", "distinct egress_bytes", "keys_moved account_id", "schema_changes "} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %s in %+v", k, rep.Results)
		}
	}
	if r := got["mean egress_bytes"]; r.Status != quality.Pass || !strings.HasSuffix(r.Why, "within its limit") {
		t.Errorf("mean: %s %q", r.Status, r.Why)
	}
	if r := got["distinct egress_bytes"]; r.Value != 100 { // the first day's 100 rows, each its own value
		t.Errorf("distinct = %v", r.Value)
	}
	for name, c := range map[string]struct {
		args map[string]any
		want string
	}{
		"unknown column metric": {map[string]any{"table": "usage_hourly", "metrics": []string{"column"}, "column_metrics": []string{"median"}}, `"median" is unknown`},
		"dimension without key": {map[string]any{"table": "usage_hourly", "timestamp_column": "hour", "metrics": []string{"dimension"}}, "needs dimension.column"},
		"bad load lag":          {map[string]any{"table": "usage_hourly", "max_load_lag": "soon"}, "max_load_lag"},
		"unknown upstream":      {map[string]any{"table": "usage_hourly", "timestamp_column": "hour", "metrics": []string{"reconciliation"}, "reconcile": map[string]any{"upstream": "nope"}}, "reconcile.upstream"},
	} {
		if msg := mcpkittest.Call(t, run, c.args, nil); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q does not contain %q", name, msg, c.want)
		}
	}
}

func TestMonitorsCarryTheNewChecks(t *testing.T) {
	e, now := env(t)
	*now = time.Date(2025, 12, 15, 16, 5, 0, 0, time.UTC)
	e.Config.Monitors = []config.Monitor{{Name: "usage-values", Table: "usage_hourly", TimestampColumn: "hour", Schedule: "@hourly",
		Checks: []string{"column", "dimension", "schema_changes"}, Columns: []string{"egress_bytes"}, ColumnMetrics: []string{"zero_rate", "mean"},
		Dimension: &config.MonitorDimension{Column: "account_id"}}}
	var res runMonitorsResult
	if msg := mcpkittest.Call(t, tool(t, e, "run_monitors"), nil, &res); msg != "" {
		t.Fatal(msg)
	}
	if res.Ran != 1 || res.Runs[0].Status == "error" || !strings.Contains(res.Runs[0].Summary, "checks pass") {
		t.Fatalf("run = %+v", res.Runs)
	}
	var list listMonitorsResult
	if msg := mcpkittest.Call(t, tool(t, e, "list_monitors"), nil, &list); msg != "" {
		t.Fatal(msg)
	}
	if got := list.Monitors[0].Checks; len(got) != 3 || got[2] != "schema_changes" {
		t.Errorf("checks = %v", got)
	}
}

// TestACheckCalledFromTheCommandLineIsRecordedWhenTheCallReturns: the agent answers a passing
// run before its record is written; `dw-quality call` (a CI step, a cron job) must still leave the
// run in the store when it exits, with the run id its answer named.
func TestACheckCalledFromTheCommandLineIsRecordedWhenTheCallReturns(t *testing.T) {
	dir := t.TempDir()
	whPath := ordersWarehouse(t, dir, 12)
	cfg, storePath := filepath.Join(dir, "dw.yaml"), filepath.Join(dir, "dw.db")
	if err := os.WriteFile(cfg, []byte("store: {path: "+storePath+"}\nwarehouse: {engine: sqlite, dsn: "+whPath+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var reps []quality.Report
	for i := 0; i < 2; i++ {
		var out, errOut strings.Builder
		code := mcpkit.Run(context.Background(), mcpkit.Agent{Name: "dw-quality", Tools: tools},
			[]string{"--config", cfg, "call", "run_quality_check", `{"table": "orders", "timestamp_column": "created_at", "metrics": ["volume", "null_rate"]}`},
			mcpkit.IO{In: strings.NewReader(""), Out: &out, Err: &errOut}, func(string) (string, bool) { return "", false })
		var rep quality.Report
		if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || code != mcpkit.ExitOK || rep.RunID == 0 {
			t.Fatalf("call %d: exit %d, run %d, %v\nstdout: %s\nstderr: %s", i, code, rep.RunID, err, out.String(), errOut.String())
		}
		reps = append(reps, rep)
	}
	st, err := store.Open(context.Background(), storePath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, rep := range reps {
		var status string
		var points int
		if err := st.DB.QueryRow(`SELECT status, (SELECT count(*) FROM metric_points WHERE run_id = check_runs.id) FROM check_runs WHERE id = ?`, rep.RunID).Scan(&status, &points); err != nil || status != string(rep.Status) || points == 0 {
			t.Fatalf("run %d (%s), answered by a call that has returned: the store holds status %q with %d points (%v)", rep.RunID, rep.Status, status, points, err)
		}
	}
}

// ordersWarehouse writes a SQLite warehouse in dir with an orders table of two rows created now,
// amounts 10 and second, and returns its path.
func ordersWarehouse(t *testing.T, dir string, second int) string {
	t.Helper()
	whPath := filepath.Join(dir, "warehouse.db")
	db, err := sql.Open("sqlite3", whPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, amount INTEGER, created_at TEXT);
		INSERT INTO orders (amount, created_at) VALUES (10, datetime('now')), (?, datetime('now'))`, second); err != nil {
		t.Fatal(err)
	}
	return whPath
}
