package estates

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL warehouses
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	_ "github.com/mattn/go-sqlite3" // the SQLite warehouses
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dataworkers/dw/agents/internal/agentbin"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/connect/connecttest"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/orchestrators/orchtest"
	"github.com/dataworkers/dw/pkg/registry/srtest"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/warehouse/warehousetest"
)

func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	if err := agentbin.BuildAll(func(c *exec.Cmd) { c.Stderr = os.Stderr }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	warehousetest.StopSharedPostgres()
	os.Exit(code)
}

// The people every estate's policy names.
const (
	approver      = "ines.duarte"
	approverEmail = "ines.duarte@example.com"
	dataOwner     = "logistics-data@example.com"
)

// clock anchors an estate at the real time (the servers keep their own clocks): the incident
// window runs from windowHours before the current hour to now, the change lands onsetAfter into
// it, and a week of clean history lies before it. Scenarios land one row per event up to now,
// so every hour of a window, the current one too, holds its share of rows.
type clock struct {
	Start, End, Onset, HistStart time.Time
}

const (
	windowHours = 6
	onsetAfter  = 2 * time.Hour
	historyDays = 7
)

func newClock() clock {
	end := time.Now().UTC()
	start := end.Truncate(time.Hour).Add(-windowHours * time.Hour)
	return clock{Start: start, End: end, Onset: start.Add(onsetAfter), HistStart: start.Add(-historyDays * 24 * time.Hour)}
}

// zone is the fixed-offset IANA zone whose midnight is the window's first hour, so "today" there
// is exactly the incident window whatever the hour of the run.
func (c clock) zone() string {
	h := c.Start.Hour()
	switch {
	case h == 0:
		return "UTC"
	case h <= 12:
		return fmt.Sprintf("Etc/GMT+%d", h)
	default:
		return fmt.Sprintf("Etc/GMT-%d", 24-h)
	}
}

// baselines are the same hours on the six days before, the windows the clean checks ran over.
func (c clock) baselines() [][2]time.Time {
	var out [][2]time.Time
	for d := 6; d >= 1; d-- {
		off := time.Duration(d) * 24 * time.Hour
		out = append(out, [2]time.Time{c.Start.Add(-off), c.End.Add(-off)})
	}
	return out
}

// ticks are the event times every step from the history's start up to the window's end.
func (c clock) ticks(step time.Duration) []time.Time {
	var out []time.Time
	for at := c.HistStart; at.Before(c.End); at = at.Add(step) {
		out = append(out, at)
	}
	return out
}

// estate is one company's systems on loopback plus the five servers pointed at them.
type estate struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	clock clock
	token string

	kafka     *config.Kafka
	cluster   *kfake.Cluster
	registry  *srtest.Server
	confluent *confluenttest.Server
	connect   *connecttest.Server
	airflow   *orchtest.Airflow

	// Warehouse is the config's warehouse section (engine and DSN).
	warehouse config.Warehouse
	// catalogFiles, openLineage and manifest feed the context graph.
	catalogFiles []string
	openLineage  []string
	manifest     string

	env     []string
	clients map[string]*client.Client
	dumped  int
}

// newEstate starts Kafka (the topics with three partitions each), the registry with our
// compatibility checker and a Confluent Cloud stand-in with the given statements.
func newEstate(t *testing.T, statements []confluenttest.Statement, topics ...string) *estate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	e := &estate{t: t, ctx: ctx, dir: t.TempDir(), clock: newClock(), clients: map[string]*client.Client{}}
	c, kc, err := kafkatest.StartBroker(topics...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e.cluster, e.kafka = c, kc
	if e.registry, err = srtest.Start(srtest.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.registry.Close() })
	e.confluent = confluenttest.New(t, statements, nil)
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	e.token = hex.EncodeToString(b)
	return e
}

// seedSchema registers a version of subject under id, of the given type.
func (e *estate) seedSchema(subject string, version, id int, typ sr.SchemaType, text string) {
	e.registry.Registry.SeedSchema(subject, version, id, sr.Schema{Schema: text, Type: typ})
}

// frame writes a payload in the Confluent wire format (magic 0, the schema id), with prefix
// (the Protobuf message indexes) before it.
func frame(id int, prefix, payload []byte) []byte {
	out := []byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
	out = append(out, prefix...)
	return append(out, payload...)
}

// produce writes records to the broker and waits for every acknowledgement.
func (e *estate) produce(recs []*kgo.Record) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka.BootstrapServers...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(e.ctx, recs...).FirstErr(); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
}

// consume reads every record of topic back from the broker, as a reader starting from the
// earliest offsets does.
func (e *estate) consume(topic string, want int) []*kgo.Record {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka.BootstrapServers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(e.ctx)
		if err := fs.Err0(); err != nil {
			e.t.Fatalf("consume %s after %d of %d records: %v", topic, len(out), want, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// writeFile writes a file under the estate's directory and returns its path.
func (e *estate) writeFile(name, text string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func q(s string) string { return strconv.Quote(s) }

// start writes the configuration and points the servers at it; they start on first use.
func (e *estate) start() {
	e.t.Helper()
	sum := sha256.Sum256([]byte(e.token))
	cc := e.confluent.Config()
	var b strings.Builder
	fmt.Fprintf(&b, "store:\n  path: %s\n  busy_timeout: 15s\n", q(filepath.Join(e.dir, "dw.db")))
	fmt.Fprintf(&b, "kafka:\n  bootstrap_servers: [%s]\n  client_id: estates\n  timeout: 5s\n", q(e.kafka.BootstrapServers[0]))
	fmt.Fprintf(&b, "schema_registry:\n  url: %s\n  timeout: 5s\n", q(e.registry.URL))
	fmt.Fprintf(&b, "confluent_cloud:\n  api_url: %s\n  api_key: %s\n  api_secret: %s\n  flink_url: %s\n  flink_api_key: %s\n  flink_api_secret: %s\n  organization_id: %s\n  environment_id: %s\n  kafka_cluster_id: %s\n  timeout: 5s\n",
		q(cc.APIURL), q(confluenttest.APIKey), q(confluenttest.APISecret), q(cc.FlinkURL), q(confluenttest.FlinkKey), q(confluenttest.FlinkSecret),
		q(confluenttest.Org), q(confluenttest.Env), q(confluenttest.Cluster))
	if e.connect != nil {
		fmt.Fprintf(&b, "connect:\n  url: %s\n  timeout: 5s\n", q(e.connect.URL))
	}
	if e.airflow != nil {
		fmt.Fprintf(&b, "airflow:\n  url: %s\n  api_version: v2\n  username: %s\n  password: %s\n  timeout: 5s\n", q(e.airflow.URL), q(e.airflow.User), q(e.airflow.Password))
	}
	fmt.Fprintf(&b, "warehouse:\n  engine: %s\n  dsn: %s\n  statement_timeout: 30s\n  max_sample_rows: 5\n", e.warehouse.Engine, q(e.warehouse.DSN))
	if e.manifest != "" {
		fmt.Fprintf(&b, "dbt:\n  manifest_path: %s\n", q(e.manifest))
	}
	var files, ol []string
	for _, f := range e.catalogFiles {
		files = append(files, q(f))
	}
	for _, f := range e.openLineage {
		ol = append(ol, q(f))
	}
	fmt.Fprintf(&b, "catalog:\n  files: [%s]\n  openlineage: [%s]\n", strings.Join(files, ", "), strings.Join(ol, ", "))
	fmt.Fprintf(&b, `domains:
  - name: estate
    assets: ["*"]
    owners: [%s]
    approvers:
      - name: %s
        email: %s
        token_sha256: %s
    autonomy: L2
`, q(dataOwner), q(approver), q(approverEmail), q(hex.EncodeToString(sum[:])))
	cfg := e.writeFile("dw.yaml", b.String())
	e.env = []string{"DW_CONFIG=" + cfg, "DW_HOME=" + e.dir, "DW_LOG_LEVEL=warn"}
	e.t.Cleanup(func() {
		for _, c := range e.clients {
			_ = c.Close()
		}
	})
}

// childEnv is the environment without the caller's DW_* settings, plus the estate's.
func (e *estate) childEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DW_") {
			out = append(out, kv)
		}
	}
	return append(append(out, e.env...), extra...)
}

func binary(agent string) string { return filepath.Join(agentbin.RepoRoot(), "bin", agent) }

func (e *estate) client(agent string) *client.Client {
	e.t.Helper()
	if c := e.clients[agent]; c != nil {
		return c
	}
	c, err := client.NewStdioMCPClient(binary(agent), e.childEnv())
	if err != nil {
		e.t.Fatalf("start %s: %v", agent, err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "estates-test", Version: "1"}
	if _, err := c.Initialize(e.ctx, init); err != nil {
		_ = c.Close()
		e.t.Fatalf("initialize %s: %v", agent, err)
	}
	e.clients[agent] = c
	return c
}

// try calls a tool and returns its structured result as JSON, or the error text of an isError
// result.
func (e *estate) try(agent, tool string, args map[string]any) (json.RawMessage, string) {
	e.t.Helper()
	res, err := e.client(agent).CallTool(e.ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		e.t.Fatalf("%s %s: %v", agent, tool, err)
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return nil, strings.Join(text, " ")
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		e.t.Fatal(err)
	}
	if dump := os.Getenv("ESTATES_DUMP"); dump != "" {
		// A directory to keep each result in, for whoever reads a failing scenario.
		e.dumped++
		_ = os.WriteFile(filepath.Join(dump, fmt.Sprintf("%s-%02d-%s.json", e.t.Name(), e.dumped, tool)), raw, 0o600)
	}
	return raw, ""
}

// call calls a tool that must succeed and decodes its structured result into out (when not nil).
func (e *estate) call(agent, tool string, args map[string]any, out any) json.RawMessage {
	e.t.Helper()
	raw, errText := e.try(agent, tool, args)
	if errText != "" {
		e.t.Fatalf("%s %s failed: %s", agent, tool, errText)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", agent, tool, raw, err)
		}
	}
	return raw
}

// human runs the dw-incidents command line a person runs at their terminal (never an MCP tool).
func (e *estate) human(args ...string) string {
	e.t.Helper()
	cmd := exec.CommandContext(e.ctx, binary("dw-incidents"), args...)
	cmd.Env = e.childEnv("DW_APPROVER_TOKEN=" + e.token)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		e.t.Fatalf("dw-incidents %s: %v: %s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// syncGraph builds the context graph from the running stand-ins, the catalog files, the dbt
// manifest and the OpenLineage events, and requires every system to sync.
func (e *estate) syncGraph() {
	e.t.Helper()
	var sync struct {
		Systems []struct {
			System, Status, Error string
		} `json:"systems"`
	}
	e.call("dw-context-catalog", "sync_catalog", map[string]any{}, &sync)
	for _, s := range sync.Systems {
		if s.Status != "synced" && s.Status != "not_configured" {
			e.t.Fatalf("sync_catalog: %s %s: %s", s.System, s.Status, s.Error)
		}
	}
	if e.manifest != "" {
		e.call("dw-context-catalog", "import_dbt_manifest", map[string]any{}, nil)
	}
	if len(e.openLineage) > 0 {
		e.call("dw-context-catalog", "import_openlineage_events", map[string]any{}, nil)
	}
}

// qualityResult and qualityReport are the parts of run_quality_check and verify_incident the
// scenarios read.
type qualityResult struct {
	Asset   string  `json:"asset"`
	Check   string  `json:"check"`
	Metric  string  `json:"metric"`
	Subject string  `json:"subject"`
	Value   float64 `json:"value"`
	Status  string  `json:"status"`
	Why     string  `json:"why"`
}

type qualityReport struct {
	Asset     string          `json:"asset"`
	Failed    bool            `json:"failed"`
	Summary   string          `json:"summary"`
	Results   []qualityResult `json:"results"`
	Incidents []struct {
		ID          int64  `json:"id"`
		FailureMode string `json:"failure_mode"`
		Opened      bool   `json:"opened"`
	} `json:"incidents"`
}

// status is the status of the result for metric on subject ("" when there is none).
func (r qualityReport) status(metric, subject string) string {
	for _, x := range r.Results {
		if x.Metric == metric && strings.EqualFold(x.Subject, subject) {
			return x.Status
		}
	}
	return ""
}

// incident is the incident the report opened or joined for failure mode (fails the test when
// there is none).
func (r qualityReport) incident(t *testing.T, mode string) int64 {
	t.Helper()
	for _, inc := range r.Incidents {
		if inc.FailureMode == mode {
			return inc.ID
		}
	}
	t.Fatalf("no %s incident: %s (%+v)", mode, r.Summary, r.Incidents)
	return 0
}

// checkBaselines runs args over the same hours of the six days before; every check must pass.
func (e *estate) checkBaselines(args map[string]any) {
	e.t.Helper()
	for _, w := range e.clock.baselines() {
		a := copyArgs(args)
		a["since"], a["until"] = w[0].Format(time.RFC3339), w[1].Format(time.RFC3339)
		var rep qualityReport
		e.call("dw-quality", "run_quality_check", a, &rep)
		if rep.Failed {
			e.t.Fatalf("baseline check over %s failed: %s", w[0], rep.Summary)
		}
	}
}

// checkToday runs args over the incident window ("today" in the window's zone).
func (e *estate) checkToday(args map[string]any) qualityReport {
	e.t.Helper()
	a := copyArgs(args)
	a["window"], a["time_zone"] = "today", e.clock.zone()
	var rep qualityReport
	e.call("dw-quality", "run_quality_check", a, &rep)
	return rep
}

func copyArgs(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// diagnosis is the part of diagnose_incident's result the scenarios assert.
type diagnosis struct {
	Cause     string `json:"cause"`
	Diagnosis struct {
		Conclusion string `json:"conclusion"`
		Candidates []struct {
			Cause    string   `json:"cause"`
			Kind     string   `json:"kind"`
			Source   string   `json:"source"`
			Evidence []string `json:"evidence"`
		} `json:"candidates"`
	} `json:"diagnosis"`
}

func (e *estate) diagnose(incident int64) (diagnosis, string) {
	e.t.Helper()
	var d diagnosis
	raw := e.call("dw-incidents", "diagnose_incident", map[string]any{"incident_id": incident}, &d)
	if len(d.Diagnosis.Candidates) == 0 {
		e.t.Fatalf("the diagnosis names no cause: %s", raw)
	}
	return d, string(raw)
}

// proposal and plan are propose_remediation's result.
type proposal struct {
	Order        int            `json:"order"`
	Class        string         `json:"class"`
	Target       string         `json:"target"`
	Title        string         `json:"title"`
	Why          string         `json:"why"`
	Payload      map[string]any `json:"payload"`
	Executor     string         `json:"executor"`
	NeedsMapping []string       `json:"needs_mapping"`
	ByHand       string         `json:"by_hand"`
	Mappings     []struct {
		Field  string `json:"field"`
		With   string `json:"with"`
		Origin string `json:"origin"`
	} `json:"mappings"`
}

type plan struct {
	Plan struct {
		ID        int64      `json:"id"`
		Proposals []proposal `json:"proposals"`
		Checks    []struct {
			Asset      string `json:"asset"`
			Check      string `json:"check"`
			Column     string `json:"column"`
			Supersedes string `json:"supersedes"`
		} `json:"checks"`
		Notes []string `json:"notes"`
	} `json:"plan"`
}

// step is the plan's first proposal of class (fails the test when there is none).
func (p plan) step(t *testing.T, class string) proposal {
	t.Helper()
	for _, s := range p.Plan.Proposals {
		if s.Class == class {
			return s
		}
	}
	t.Fatalf("the plan has no %s step: %+v", class, p.Plan.Proposals)
	return proposal{}
}

// verification is verify_incident's result.
type verification struct {
	Resolved   bool            `json:"resolved"`
	Failed     bool            `json:"failed"`
	ReceiptSeq int64           `json:"receipt_seq"`
	Checks     []qualityResult `json:"checks"`
	NotPassing []string        `json:"not_passing"`
	// Values is the comparison of the restored values with the topic recomputed.
	Values *struct {
		Status   string `json:"status"`
		Compared int    `json:"compared"`
		Why      string `json:"why"`
	} `json:"values"`
}

func (e *estate) verify(incident int64, timestampColumn string) (verification, string) {
	e.t.Helper()
	var v verification
	raw := e.call("dw-incidents", "verify_incident", map[string]any{"incident_id": incident, "timestamp_column": timestampColumn,
		"window": "today", "time_zone": e.clock.zone()}, &v)
	return v, string(raw)
}

// requireResolved verifies, requires the incident resolved with a receipt, and reads the
// receipt back. wantValues is the value comparison's status the verification must carry ("pass"
// when the plan's corrected statement can be recomputed from the topic, "" when it cannot).
func (e *estate) requireResolved(incident int64, timestampColumn, wantValues string) {
	e.t.Helper()
	v, raw := e.verify(incident, timestampColumn)
	if !v.Resolved || v.Failed || v.ReceiptSeq == 0 {
		e.t.Fatalf("verify_incident did not resolve #%d once the fix's effect is in: %s", incident, raw)
	}
	if wantValues != "" && (v.Values == nil || v.Values.Status != wantValues || v.Values.Compared == 0) {
		e.t.Fatalf("verify_incident for #%d: restored values %+v, want %s over compared rows: %s", incident, v.Values, wantValues, raw)
	}
	var rec struct {
		Receipts []struct {
			Seq int64 `json:"seq"`
		} `json:"receipts"`
	}
	e.call("dw-incidents", "get_receipt", map[string]any{"incident_id": incident}, &rec)
	if len(rec.Receipts) != 1 || rec.Receipts[0].Seq != v.ReceiptSeq {
		e.t.Fatalf("get_receipt for #%d: %+v, want receipt #%d", incident, rec, v.ReceiptSeq)
	}
	var chain struct {
		OK bool `json:"ok"`
	}
	e.call("dw-incidents", "verify_receipts", map[string]any{}, &chain)
	if !chain.OK {
		e.t.Fatal("verify_receipts: the chain does not verify")
	}
}

// requireOpen verifies before the fix's effect is applied: the incident must stay open, and the
// answer must name each of failing (a failing metric, or the table that does not exist yet).
func (e *estate) requireOpen(incident int64, timestampColumn string, failing ...string) {
	e.t.Helper()
	raw, errText := e.try("dw-incidents", "verify_incident", map[string]any{"incident_id": incident, "timestamp_column": timestampColumn,
		"window": "today", "time_zone": e.clock.zone()})
	answer := errText
	if errText == "" {
		var v verification
		if err := json.Unmarshal(raw, &v); err != nil {
			e.t.Fatal(err)
		}
		if v.Resolved || !v.Failed || v.ReceiptSeq != 0 {
			e.t.Fatalf("verify_incident resolved #%d before the fix's effect: %s", incident, raw)
		}
		var failed []string
		for _, c := range v.Checks {
			if c.Status != "pass" {
				failed = append(failed, c.Metric+" "+c.Check+" "+c.Subject+" "+c.Asset+": "+c.Why)
			}
		}
		answer = strings.Join(append(failed, v.NotPassing...), "\n")
	}
	mustContain(e.t, "verify_incident before the fix", answer, failing...)
	var hist struct {
		Incidents []struct {
			Status string `json:"status"`
		} `json:"incidents"`
	}
	e.call("dw-incidents", "get_incident_history", map[string]any{"incident_id": incident}, &hist)
	if len(hist.Incidents) != 1 || hist.Incidents[0].Status == "resolved" {
		e.t.Fatalf("incident #%d after verifying before the fix: %+v", incident, hist.Incidents)
	}
}

// mustContain fails when text lacks any of wants.
func mustContain(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// dbtModel is one model of a project the test writes: its compiled SQL reads the source
// relation, and its file in the project is that SQL with the relation written back as the
// source() call dbt compiled it from (so a plan's diff applies to it).
type dbtModel struct {
	Name, SQL string
	Columns   []string
}

// dbtSource is the relation a project reads, as source(Source, Table).
type dbtSource struct {
	Source, Table, Relation string
	Columns                 []string
}

// writeDBT writes a dbt project (target/manifest.json, v12, and models/<name>.sql) for the
// adapter and sets it as the estate's manifest.
func (e *estate) writeDBT(project, adapter, database, schema string, src dbtSource, models ...dbtModel) {
	e.t.Helper()
	cols := func(names []string) map[string]any {
		out := map[string]any{}
		for _, n := range names {
			out[n] = map[string]any{"name": n, "data_type": nil, "meta": map[string]any{}, "tags": []string{}}
		}
		return out
	}
	srcID := "source." + project + "." + src.Source + "." + src.Table
	nodes := map[string]any{}
	for _, m := range models {
		id := "model." + project + "." + m.Name
		rel := fmt.Sprintf(`"%s"."%s"."%s"`, database, schema, m.Name)
		if database == "" {
			rel = fmt.Sprintf(`"%s"."%s"`, schema, m.Name)
		}
		if adapter == "snowflake" {
			rel = strings.ToUpper(database + "." + schema + "." + m.Name)
		}
		file := "models/" + m.Name + ".sql"
		nodes[id] = map[string]any{
			"unique_id": id, "resource_type": "model", "name": m.Name, "package_name": project,
			"database": nullable(database), "schema": schema, "alias": m.Name, "relation_name": rel,
			"config":        map[string]any{"enabled": true, "materialized": "table", "meta": map[string]any{"owner": dataOwner}, "tags": []string{}},
			"columns":       cols(m.Columns),
			"depends_on":    map[string]any{"nodes": []string{srcID}, "macros": []string{}},
			"compiled_code": m.SQL, "raw_code": "-- see " + file, "language": "sql", "compiled": true,
			"original_file_path": file, "path": m.Name + ".sql", "fqn": []string{project, m.Name},
			"meta": map[string]any{"owner": dataOwner}, "tags": []string{}, "description": "",
		}
		e.writeFile(filepath.Join("dbt", file), strings.ReplaceAll(m.SQL, src.Relation, fmt.Sprintf("{{ source('%s', '%s') }}", src.Source, src.Table))+"\n")
	}
	manifest := map[string]any{
		"metadata": map[string]any{"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json", "dbt_version": "1.10.3",
			"generated_at": e.clock.HistStart.Format(time.RFC3339), "project_name": project, "adapter_type": adapter},
		"nodes": nodes,
		"sources": map[string]any{srcID: map[string]any{
			"unique_id": srcID, "resource_type": "source", "name": src.Table, "source_name": src.Source, "package_name": project,
			"database": nullable(database), "schema": schema, "identifier": src.Table, "relation_name": src.Relation,
			"columns": cols(src.Columns), "config": map[string]any{"enabled": true}, "meta": map[string]any{}, "tags": []string{},
			"fqn": []string{project, src.Source, src.Table}, "description": "",
		}},
		"exposures": map[string]any{}, "metrics": map[string]any{}, "macros": map[string]any{}, "docs": map[string]any{},
		"parent_map": map[string]any{}, "child_map": map[string]any{}, "disabled": map[string]any{},
	}
	raw, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		e.t.Fatal(err)
	}
	e.manifest = e.writeFile("dbt/target/manifest.json", string(raw))
}

// postgres gives the estate a fresh database on the shared PostgreSQL cluster as its warehouse
// and returns a connection to it and the database's name.
func (e *estate) postgres() (*sql.DB, string) {
	e.t.Helper()
	dsn := warehousetest.SharedPostgres(e.t).NewDatabase(e.t)
	wh, err := sql.Open("pgx", dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { wh.Close() })
	var db string
	if err := wh.QueryRow("SELECT current_database()").Scan(&db); err != nil {
		e.t.Fatal(err)
	}
	e.warehouse.Engine, e.warehouse.DSN = "postgres", dsn
	return wh, db
}

// sqlite gives the estate a SQLite file as its warehouse.
func (e *estate) sqlite() *sql.DB {
	e.t.Helper()
	path := filepath.Join(e.dir, "warehouse.db")
	wh, err := sql.Open("sqlite3", path+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { wh.Close() })
	e.warehouse.Engine, e.warehouse.DSN = "sqlite", path
	return wh
}

// olRun is one OpenLineage run of a job, as an integration emits it on completion.
type olRun struct {
	Namespace, Job, Integration string
	// Parent names the parent job (an Airflow task's DAG), in the same namespace.
	Parent  string
	Owner   string
	Inputs  [][2]string // namespace, name
	Outputs [][2]string
	At      time.Time
}

// writeOpenLineage writes the runs as NDJSON RunEvents (spec 2-0-2) and adds the file to the
// estate's OpenLineage paths.
func (e *estate) writeOpenLineage(name string, runs ...olRun) {
	e.t.Helper()
	var lines []string
	for i, r := range runs {
		ds := func(list [][2]string) []map[string]any {
			out := []map[string]any{}
			for _, d := range list {
				out = append(out, map[string]any{"namespace": d[0], "name": d[1]})
			}
			return out
		}
		run := map[string]any{"runId": fmt.Sprintf("01939d2e-0000-7000-8000-%012d", i+1), "facets": map[string]any{}}
		if r.Parent != "" {
			run["facets"] = map[string]any{"parent": map[string]any{
				"_producer":  "https://github.com/apache/airflow/tree/providers-openlineage/1.9.0",
				"_schemaURL": "https://openlineage.io/spec/facets/1-0-1/ParentRunFacet.json#/$defs/ParentRunFacet",
				"run":        map[string]any{"runId": fmt.Sprintf("01939d2e-0000-7000-9000-%012d", i+1)},
				"job":        map[string]any{"namespace": r.Namespace, "name": r.Parent}}}
		}
		facets := map[string]any{"jobType": map[string]any{"processingType": "BATCH", "integration": r.Integration, "jobType": "TASK"}}
		if r.Owner != "" {
			facets["ownership"] = map[string]any{"owners": []map[string]any{{"name": r.Owner, "type": "team"}}}
		}
		ev := map[string]any{"eventTime": r.At.UTC().Format(time.RFC3339Nano), "producer": "https://github.com/OpenLineage/OpenLineage",
			"schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent", "eventType": "COMPLETE", "run": run,
			"job": map[string]any{"namespace": r.Namespace, "name": r.Job, "facets": facets}, "inputs": ds(r.Inputs), "outputs": ds(r.Outputs)}
		b, err := json.Marshal(ev)
		if err != nil {
			e.t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	e.openLineage = append(e.openLineage, e.writeFile(name, strings.Join(lines, "\n")+"\n"))
}

// nullable is nil for "" (a manifest's null), the string otherwise.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// protoMessage is the first message of a Protobuf schema, compiled as the registry holds it.
func protoMessage(t *testing.T, text string) protoreflect.MessageDescriptor {
	t.Helper()
	s, err := schema.Parse(schema.Protobuf, text)
	if err != nil {
		t.Fatal(err)
	}
	return s.ProtoFile().Messages().Get(0)
}

// sfTable is a table the Snowflake stand-in holds: its columns (name, Snowflake type) and rows.
type sfTable struct {
	Database, Schema, Name string
	Columns                [][2]string
	Rows                   [][]any
}

// snowflake answers the queries the warehouse and catalog code send (INFORMATION_SCHEMA.TABLES
// and COLUMNS, and the aggregate passes of the checks: per-hour buckets, counts, max/min, zeros,
// sums) over tables the test holds. Any other query fails the way Snowflake does, quoting it.
type snowflake struct {
	mu     sync.Mutex
	tables []*sfTable
}

func (s *snowflake) set(tables ...*sfTable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables = tables
}

// update changes the tables' rows while no query reads them.
func (s *snowflake) update(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

func (s *snowflake) answer(q warehousetest.SnowflakeQuery) warehousetest.SnowflakeResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := func(n string) warehousetest.SnowflakeColumn {
		return warehousetest.SnowflakeColumn{Name: n, Type: "text"}
	}
	fixed := func(n string) warehousetest.SnowflakeColumn {
		return warehousetest.SnowflakeColumn{Name: n, Type: "fixed"}
	}
	bound := func() []string {
		var out []string
		for i := 1; i <= len(q.Bindings); i++ {
			if v, ok := q.Bindings[strconv.Itoa(i)].Value.(string); ok {
				out = append(out, strings.ToUpper(v))
			}
		}
		return out
	}
	switch {
	case strings.Contains(q.SQL, "INFORMATION_SCHEMA.TABLES"):
		b := bound()
		res := warehousetest.SnowflakeResult{Columns: []warehousetest.SnowflakeColumn{text("TABLE_CATALOG"), text("TABLE_SCHEMA"), text("TABLE_NAME"), text("TABLE_TYPE"), fixed("ROW_COUNT")}}
		for _, t := range s.tables {
			if len(b) > 0 && !slices.Contains(b, t.Name) || len(b) > 1 && !slices.Contains(b, t.Schema) {
				continue
			}
			res.Rows = append(res.Rows, []any{t.Database, t.Schema, t.Name, "BASE TABLE", len(t.Rows)})
		}
		return res
	case strings.Contains(q.SQL, "INFORMATION_SCHEMA.COLUMNS"):
		b := bound()
		bulk := strings.HasPrefix(q.SQL, "SELECT TABLE_CATALOG")
		res := warehousetest.SnowflakeResult{Columns: []warehousetest.SnowflakeColumn{text("COLUMN_NAME"), text("DATA_TYPE"), text("IS_NULLABLE"), fixed("ORDINAL_POSITION")}}
		if bulk {
			res.Columns = append([]warehousetest.SnowflakeColumn{text("TABLE_CATALOG"), text("TABLE_SCHEMA"), text("TABLE_NAME")}, res.Columns...)
		}
		for _, t := range s.tables {
			if len(b) == 0 || b[0] != t.Schema || !slices.Contains(b[1:], t.Name) {
				continue
			}
			for i, c := range t.Columns {
				row := []any{c[0], c[1], "YES", i + 1}
				if bulk {
					row = append([]any{t.Database, t.Schema, t.Name}, row...)
				}
				res.Rows = append(res.Rows, row)
			}
		}
		return res
	case strings.HasPrefix(q.SQL, "SELECT "):
		if res, ok := s.aggregate(q); ok {
			return res
		}
	}
	return warehousetest.SnowflakeResult{ErrCode: "001003", ErrMsg: "SQL compilation error: the stand-in does not answer: " + q.SQL}
}

var (
	sfFrom  = regexp.MustCompile(`(?i)\bFROM\s+"([^"]+)"\."([^"]+)"\."([^"]+)"`)
	sfWhere = regexp.MustCompile(`(?i)\bWHERE\s+"([^"]+)"\s*(>=|<=)\s*\?(?:\s+AND\s+"[^"]+"\s*<\s*\?)?`)
	sfCol   = regexp.MustCompile(`"([^"]+)"`)
)

// aggregate answers one aggregate pass over a table: SELECT items FROM "D"."S"."T" [WHERE "c" >= ?
// AND "c" < ? | WHERE "c" <= ?] [GROUP BY 1].
func (s *snowflake) aggregate(q warehousetest.SnowflakeQuery) (warehousetest.SnowflakeResult, bool) {
	m := sfFrom.FindStringSubmatchIndex(q.SQL)
	if m == nil {
		return warehousetest.SnowflakeResult{}, false
	}
	var t *sfTable
	for _, x := range s.tables {
		if x.Database == q.SQL[m[2]:m[3]] && x.Schema == q.SQL[m[4]:m[5]] && x.Name == q.SQL[m[6]:m[7]] {
			t = x
		}
	}
	if t == nil {
		return warehousetest.SnowflakeResult{ErrCode: "002003", ErrMsg: "SQL compilation error: Object does not exist or not authorized."}, true
	}
	col := func(name string) int {
		for i, c := range t.Columns {
			if c[0] == name {
				return i
			}
		}
		return -1
	}
	ts := func(i int) time.Time {
		n, _ := strconv.ParseInt(q.Bindings[strconv.Itoa(i)].Value.(string), 10, 64)
		return time.Unix(0, n).UTC()
	}
	rows := t.Rows
	if w := sfWhere.FindStringSubmatch(q.SQL[m[1]:]); w != nil {
		c := col(w[1])
		var kept [][]any
		for _, r := range rows {
			at := r[c].(time.Time)
			switch {
			case w[2] == "<=" && !at.After(ts(1)):
				kept = append(kept, r)
			case w[2] == ">=" && !at.Before(ts(1)) && (len(q.Bindings) < 2 || at.Before(ts(2))):
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	items := splitTop(q.SQL[len("SELECT "):m[0]])
	groups := map[time.Time][][]any{}
	bucket := -1
	for i, it := range items {
		if strings.HasPrefix(strings.ToUpper(it), "DATE_TRUNC('HOUR'") {
			bucket = i
			c := col(sfCol.FindStringSubmatch(it)[1])
			for _, r := range rows {
				h := r[c].(time.Time).Truncate(time.Hour)
				groups[h] = append(groups[h], r)
			}
		}
	}
	if bucket < 0 {
		groups[time.Time{}] = rows
	}
	var hours []time.Time
	for h := range groups {
		hours = append(hours, h)
	}
	sort.Slice(hours, func(i, j int) bool { return hours[i].Before(hours[j]) })
	res := warehousetest.SnowflakeResult{}
	for i, it := range items {
		u := strings.ToUpper(it)
		c := -1
		if n := sfCol.FindStringSubmatch(it); n != nil {
			c = col(n[1])
		}
		typ := "fixed"
		switch {
		case i == bucket || (strings.HasPrefix(u, "MAX(") || strings.HasPrefix(u, "MIN(")) && c >= 0 && strings.HasPrefix(t.Columns[c][1], "TIMESTAMP"):
			res.Columns = append(res.Columns, warehousetest.SnowflakeColumn{Type: "timestamp_ntz", Scale: 9})
			continue
		case strings.HasPrefix(u, "SUM("), strings.HasPrefix(u, "AVG("):
			typ = "real"
		case strings.HasPrefix(u, "NULL"):
			typ = "text"
		}
		res.Columns = append(res.Columns, warehousetest.SnowflakeColumn{Type: typ})
	}
	for _, h := range hours {
		g := groups[h]
		var row []any
		for i, it := range items {
			u := strings.ToUpper(it)
			c := -1
			if n := sfCol.FindStringSubmatch(it); n != nil {
				c = col(n[1])
			}
			switch {
			case i == bucket:
				row = append(row, h)
			case strings.HasPrefix(u, "NULL"):
				row = append(row, nil)
			case u == "COUNT(*)":
				row = append(row, len(g))
			case strings.HasPrefix(u, "COUNT(CASE WHEN") && strings.Contains(u, "= 0"):
				row = append(row, countIf(g, func(v any) bool { return v != nil && toFloat(v) == 0 }, c))
			case strings.HasPrefix(u, "COUNT("):
				row = append(row, countIf(g, func(v any) bool { return v != nil }, c))
			case strings.HasPrefix(u, "SUM("):
				sum := 0.0
				for _, r := range g {
					if r[c] != nil {
						sum += toFloat(r[c])
					}
				}
				row = append(row, sum)
			case strings.HasPrefix(u, "MAX("), strings.HasPrefix(u, "MIN("):
				var best any
				for _, r := range g {
					v := r[c]
					if v == nil {
						continue
					}
					if best == nil || less(v, best) == strings.HasPrefix(u, "MIN(") {
						best = v
					}
				}
				row = append(row, best)
			default:
				return warehousetest.SnowflakeResult{ErrCode: "001003", ErrMsg: "SQL compilation error: the stand-in does not compute " + it}, true
			}
		}
		res.Rows = append(res.Rows, row)
	}
	return res, true
}

// splitTop splits a select list at its top-level commas.
func splitTop(list string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range list {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(list[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(list[start:]))
}

func countIf(rows [][]any, ok func(any) bool, c int) int {
	n := 0
	for _, r := range rows {
		if c >= 0 && ok(r[c]) {
			n++
		}
	}
	return n
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func less(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		return ta.Before(b.(time.Time))
	}
	if sa, ok := a.(string); ok {
		return sa < b.(string)
	}
	return toFloat(a) < toFloat(b)
}

// protoRecord frames a Protobuf message for topic under schema id (message indexes: the first
// message), timestamped at.
func protoRecord(t *testing.T, topic string, id int, m proto.Message, at time.Time) *kgo.Record {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: topic, Value: frame(id, []byte{0}, b), Timestamp: at}
}
