package diagnosis

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/connect"
	"github.com/dataworkers/dw/pkg/connect/connecttest"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/lineage/scenario"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// The story's clock and failing table.
var (
	storyNow    = time.Date(2026, 8, 14, 15, 30, 0, 0, time.UTC)
	usageHourly = graph.WarehouseURN("snowflake", "ANALYTICS", "USAGE", "USAGE_HOURLY")
)

type fixture struct {
	st  *store.Store
	g   *graph.Graph
	inc *incidents.Store
	now func() time.Time
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	st := storetest.Open(t)
	now := func() time.Time { return storyNow }
	return fixture{st: st, g: graph.New(st, now), inc: incidents.New(st, now), now: now}
}

// story loads the scenario graph, api-usage-value v11 (days old) and, when v12 is not empty, that
// text as v12 first seen at 14:05.
func story(t *testing.T, v12 string) fixture {
	t.Helper()
	f := newFixture(t)
	ctx := context.Background()
	if err := scenario.Load(ctx, f.g, "../lineage/testdata/scenario", "../../configs/catalog.example.yaml"); err != nil {
		t.Fatal(err)
	}
	v11 := registry.SubjectVersion{Subject: "api-usage-value", Version: 11, ID: 100011, Type: schema.Avro, Schema: scenarioSchema(t, 11)}
	if _, err := registry.RecordVersions(ctx, f.st, storyNow.Add(-5*24*time.Hour), []registry.SubjectVersion{v11}); err != nil {
		t.Fatal(err)
	}
	if v12 != "" {
		v := registry.SubjectVersion{Subject: "api-usage-value", Version: 12, ID: 100012, Type: schema.Avro, Schema: v12}
		if _, err := registry.RecordVersions(ctx, f.st, time.Date(2026, 8, 14, 14, 5, 0, 0, time.UTC), []registry.SubjectVersion{v11, v}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func scenarioSchema(t *testing.T, v int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "schema", "testdata", "scenario", "api-usage-value.v"+map[int]string{11: "11", 12: "12"}[v]+".avsc"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// history records one check run per hour from 11:05 to 15:05 as pkg/quality does, failing at 15:05,
// and opens the incident the failure opens.
func (f fixture) history(t *testing.T, asset graph.URN, mode, metric, subject string) incidents.Incident {
	t.Helper()
	return failingNow(t, f, asset, mode, metric, subject, time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC))
}

func (f fixture) diagnose(t *testing.T, inc incidents.Incident, live Live, cfg *config.Config) Report {
	t.Helper()
	rep, err := NewGatherer(f.st, f.g, cfg, f.now, live, nil, 10*time.Second).Diagnose(context.Background(), inc, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func confluentLive(t *testing.T, srv *confluenttest.Server) Live {
	t.Helper()
	cl, err := confluent.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return Live{Statement: cl.GetStatement, Tableflow: cl.GetTableflowTopic}
}

func sampler(fx *kafkatest.Fixture) func(context.Context, string, kafka.SampleOptions) (kafka.Sample, error) {
	return func(ctx context.Context, topic string, opt kafka.SampleOptions) (kafka.Sample, error) {
		return kafka.SampleFromConfig(ctx, fx.Kafka, fx.SchemaRegistry, topic, opt)
	}
}

func runningStory(t *testing.T) *confluenttest.Server {
	return confluenttest.New(t,
		[]confluenttest.Statement{{Name: "usage-hourly-rollup", Phase: "RUNNING", CreatedAt: storyNow.Add(-30 * 24 * time.Hour), ComputePoolID: confluenttest.Pool}},
		[]confluenttest.Tableflow{{Topic: "usage-hourly", Phase: "RUNNING"}})
}

func TestTheStoryNamesV12TheStatementPinnedToV11TheDataAndTheBillingBlastRadius(t *testing.T) {
	f := story(t, scenarioSchema(t, 12))
	inc := f.history(t, usageHourly, ModeNullRate, "null_rate", "egress_bytes")
	kfx := kafkatest.Start(t, "api-usage")
	kfx.SeedUsageSchemas()
	kfx.Produce(t, "api-usage", kafkatest.ScenarioDay(storyNow, 200))
	live := confluentLive(t, runningStory(t))
	live.Sample = sampler(kfx)
	cfg := &config.Config{Domains: []config.Domain{{Name: "billing", Assets: []string{"warehouse:snowflake/ANALYTICS.*"}}}}

	rep := f.diagnose(t, inc, live, cfg)
	t.Logf("conclusion: %s\nsamples: %+v\nimpact: %s %s", rep.Result.Conclusion, rep.Evidence.Samples, rep.Impact.Severity, rep.Impact.Why)
	top := rep.Result.Candidates[0]
	if top.Source != "schema:api-usage-value v12" || !strings.Contains(top.Cause, "removed response_bytes") || top.Score != 5 {
		t.Fatalf("top: %+v\nunchecked: %v", top, rep.Result.Unchecked)
	}
	ev := strings.Join(top.Evidence, "\n")
	for _, want := range []string{"flink:statement/usage-hourly-rollup reads SUM(response_bytes), pinned to v11", "of the topic sample", "response_bytes is null or missing in 100% of the sample's v12-or-later records against 11% of older ones",
		"flink:statement/usage-hourly-rollup: `SUM(response_bytes)` skips nulls: sums shrink"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	if len(rep.Result.Unchecked) != 0 {
		t.Errorf("every backend was configured and up, yet unchecked: %v", rep.Result.Unchecked)
	}
	if len(rep.Evidence.Live) != 2 || len(rep.Evidence.Samples) != 1 || rep.Evidence.Samples[0].FieldNullRates["response_bytes"] <= 0 {
		t.Errorf("live %+v samples %+v", rep.Evidence.Live, rep.Evidence.Samples)
	}

	imp := rep.Impact
	reached := map[graph.URN]bool{}
	for _, im := range append(imp.BlastRadius.FieldLevel, imp.BlastRadius.TableLevel...) {
		reached[im.URN] = true
	}
	for _, u := range []graph.URN{"dbt:model.billing.fct_billable_egress", "bi:sigma/revenue-today", "job:airflow/sync_metered_usage_to_stripe", "sink:stripe"} {
		if !reached[u] {
			t.Errorf("blast radius misses %s: %v", u, reached)
		}
	}
	if reached["dbt:model.billing.fct_request_counts"] {
		t.Error("a model that never reads egress_bytes is not hit by its nulls")
	}
	if imp.Severity != Sev1 || !strings.Contains(imp.Why, "sink:stripe is an external sink") || imp.Domain != "billing" {
		t.Errorf("impact: %s %q domain %q", imp.Severity, imp.Why, imp.Domain)
	}
	if len(imp.SinkJobs) != 1 || imp.SinkJobs[0].Job != "job:airflow/sync_metered_usage_to_stripe" || imp.SinkJobs[0].NextRun == nil ||
		!imp.SinkJobs[0].NextRun.Equal(time.Date(2026, 8, 14, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("sink jobs: %+v", imp.SinkJobs)
	}

	sev, err := Record(context.Background(), f.inc, rep, "dw-incidents")
	if err != nil || sev != Sev1 {
		t.Fatalf("record: %s %v", sev, err)
	}
	got, _ := f.inc.Get(context.Background(), inc.ID)
	if got.Severity != Sev1 || got.Domain != "billing" || got.Cause != top.Cause {
		t.Errorf("incident after record: %+v", got)
	}
}

func TestAStoppedStatementIsTheCauseOfAFreshnessFailure(t *testing.T) {
	f := story(t, "")
	inc := f.history(t, usageHourly, ModeFreshness, "freshness_lag_seconds", "HOUR")
	srv := confluenttest.New(t,
		[]confluenttest.Statement{{Name: "usage-hourly-rollup", Phase: "STOPPED", CreatedAt: time.Date(2026, 8, 14, 14, 20, 0, 0, time.UTC)}},
		[]confluenttest.Tableflow{{Topic: "usage-hourly", Phase: "RUNNING"}})
	rep := f.diagnose(t, inc, confluentLive(t, srv), nil)
	top := rep.Result.Candidates[0]
	if top.Kind != "component_failure" || top.Source != "flink:statement/usage-hourly-rollup" || !strings.Contains(top.Cause, "STOPPED") {
		t.Fatalf("top: %+v", rep.Result.Candidates)
	}
	for _, k := range []string{KindLineage, KindTiming, KindMode} {
		if !has(top.Supports, k) {
			t.Errorf("supports %v lacks %s", top.Supports, k)
		}
	}
}

// connectorStory: topic orders → sink connector orders-snowflake-sink → RAW.SALES.ORDERS, read by
// a dbt model; the table's freshness check fails.
func connectorStory(t *testing.T) (fixture, incidents.Incident) {
	t.Helper()
	f := newFixture(t)
	orders := graph.WarehouseURN("snowflake", "RAW", "SALES", "ORDERS")
	conn := graph.URN("connect:connector/orders-snowflake-sink")
	b := graph.Batch{Source: "test:connector-story", Assets: []graph.Asset{
		{URN: graph.TopicURN("orders"), Kind: graph.KindKafkaTopic},
		{URN: conn, Kind: graph.KindConnector, Name: "orders-snowflake-sink"},
		{URN: orders, Kind: graph.KindWarehouseTable, Fields: []graph.Field{{Path: "LOADED_AT", Type: "TIMESTAMP_NTZ"}}},
		{URN: "dbt:model.sales.fct_orders", Kind: graph.KindDBTModel},
	}, Edges: []graph.Edge{
		{From: graph.TopicURN("orders").Field(""), To: conn.Field(""), Kind: graph.EdgeReads},
		{From: conn.Field(""), To: orders.Field(""), Kind: graph.EdgeWrites},
		{From: orders.Field(""), To: graph.URN("dbt:model.sales.fct_orders").Field(""), Kind: graph.EdgeDependsOn},
	}}
	if _, err := f.g.Import(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return f, f.history(t, orders, ModeFreshness, "freshness_lag_seconds", "LOADED_AT")
}

const snowflakeTrace = "org.apache.kafka.connect.errors.ConnectException: Exiting WorkerSinkTask due to unrecoverable exception.\n" +
	"\tat org.apache.kafka.connect.runtime.WorkerSinkTask.deliverMessages(WorkerSinkTask.java:618)\n" +
	"Caused by: net.snowflake.client.jdbc.SnowflakeSQLException: JWT token is invalid.\n\t... 10 more"

func TestAFailedConnectorTaskIsTheCauseWithItsTrace(t *testing.T) {
	f, inc := connectorStory(t)
	srv := connecttest.New(t, connecttest.Connector{Name: "orders-snowflake-sink", Type: "sink", State: "RUNNING",
		Config: map[string]string{"connector.class": "com.snowflake.kafka.connector.SnowflakeSinkConnector", "topics": "orders"},
		Tasks:  []connecttest.Task{{State: "RUNNING", WorkerID: "w1:8083"}, {State: "FAILED", WorkerID: "w2:8083", Trace: snowflakeTrace}}})
	cl, err := connect.New(&config.Connect{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rep := f.diagnose(t, inc, Live{ConnectorStatus: cl.Status}, nil)
	top := rep.Result.Candidates[0]
	if top.Kind != "component_failure" || !strings.Contains(top.Cause, "orders-snowflake-sink is FAILED") {
		t.Fatalf("top: %+v", rep.Result.Candidates)
	}
	ev := strings.Join(top.Evidence, "\n")
	if !strings.Contains(ev, "task 1 FAILED") || !strings.Contains(ev, "JWT token is invalid") || !has(top.Supports, KindMode) {
		t.Errorf("evidence: %s", ev)
	}
	if rep.Impact.Severity != Sev2 || !strings.Contains(rep.Impact.Why, "1 downstream") {
		t.Errorf("a table read by one untagged model is sev2: %s %q", rep.Impact.Severity, rep.Impact.Why)
	}
}

// connect500 answers every request as a Connect worker does on an internal error.
func connect500(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error_code":500,"message":"Request timed out"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestABackendAnswering500IsNamedInUncheckedNotAFailedDiagnosis(t *testing.T) {
	f, inc := connectorStory(t)
	cl, err := connect.New(&config.Connect{URL: connect500(t).URL})
	if err != nil {
		t.Fatal(err)
	}
	rep := f.diagnose(t, inc, Live{ConnectorStatus: cl.Status}, nil)
	un := strings.Join(rep.Result.Unchecked, "\n")
	if !strings.Contains(un, "connector and task state of connect:connector/orders-snowflake-sink") || !strings.Contains(un, "500") {
		t.Errorf("unchecked: %s", un)
	}
	if rep.Result.Candidates[0].Kind != "none_upstream" || !strings.Contains(rep.Result.Conclusion, "Not checked") {
		t.Errorf("%+v", rep.Result)
	}

	// The same for Flink: the statement's state is unchecked, Tableflow (another listener) is still read.
	s := story(t, "")
	flinkDown := confluenttest.New(t, nil, nil)
	flinkDown.Inject = []int{500, 500, 500}
	cc, err := confluent.New(flinkDown.Config())
	if err != nil {
		t.Fatal(err)
	}
	live := confluentLive(t, runningStory(t))
	live.Statement = cc.GetStatement
	rep = s.diagnose(t, s.history(t, usageHourly, ModeNullRate, "null_rate", "egress_bytes"), live, nil)
	un = strings.Join(rep.Result.Unchecked, "\n")
	if !strings.Contains(un, "Flink statement state of flink:statement/usage-hourly-rollup: confluent flink") || !strings.Contains(un, "500") {
		t.Errorf("unchecked: %s", un)
	}
	if len(rep.Evidence.Live) != 1 || rep.Evidence.Live[0].Kind != ComponentTableflow {
		t.Errorf("live: %+v", rep.Evidence.Live)
	}
}

func TestBackendsNotConfiguredNameTheirConfigKeys(t *testing.T) {
	f := story(t, "")
	rep := f.diagnose(t, f.history(t, usageHourly, ModeNullRate, "null_rate", "egress_bytes"), Live{}, nil)
	un := strings.Join(rep.Result.Unchecked, "\n")
	for _, key := range []string{"confluent_cloud.flink_url", "confluent_cloud.api_key", "kafka.bootstrap_servers"} {
		if !strings.Contains(un, key) {
			t.Errorf("unchecked does not name %s:\n%s", key, un)
		}
	}
}

func TestNoUpstreamChangeWithEverythingRunningIsSaid(t *testing.T) {
	f := story(t, "")
	rep := f.diagnose(t, f.history(t, usageHourly, ModeNullRate, "null_rate", "egress_bytes"), confluentLive(t, runningStory(t)), nil)
	if len(rep.Result.Candidates) != 1 || rep.Result.Candidates[0].Kind != "none_upstream" || !strings.Contains(rep.Result.Conclusion, "not at the deepest upstream node") {
		t.Fatalf("%+v", rep.Result)
	}
	if len(rep.Evidence.Live) != 2 {
		t.Errorf("the running statement and Tableflow were read: %+v", rep.Evidence.Live)
	}
}

func TestNothingDownstreamIsSev3AndAPersonsSeverityIsKept(t *testing.T) {
	f, _ := connectorStory(t)
	ctx := context.Background()
	leaf := graph.URN("dbt:model.sales.fct_orders")
	o, err := f.inc.Open(ctx, string(leaf), ModeVolume, "sev2", "rows low", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	inc, _ := f.inc.Get(ctx, o.ID)
	rep := f.diagnose(t, inc, Live{}, nil)
	if rep.Impact.Severity != Sev3 || rep.Impact.BlastRadius.Total != 0 {
		t.Fatalf("impact: %+v", rep.Impact)
	}
	if sev, err := Record(ctx, f.inc, rep, "dw-incidents"); err != nil || sev != Sev3 {
		t.Fatalf("the rule may lower a severity no person set: %s %v", sev, err)
	}
	if err := f.inc.SetSeverity(ctx, inc.ID, "sev1", "alice@example.com", "the CFO looks at this"); err != nil {
		t.Fatal(err)
	}
	sev, err := Record(ctx, f.inc, rep, "dw-incidents")
	got, _ := f.inc.Get(ctx, inc.ID)
	if err != nil || sev != Sev1 || got.Severity != Sev1 {
		t.Fatalf("a person's sev1 was lowered: %s %s %v", sev, got.Severity, err)
	}
}

func TestTableflowStates(t *testing.T) {
	at := time.Date(2026, 8, 14, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   confluent.TableflowTopic
		want string
	}{
		{"running", confluent.TableflowTopic{Phase: "RUNNING"}, "RUNNING"},
		{"suspended", confluent.TableflowTopic{Phase: "RUNNING", Suspended: true, UpdatedAt: &at}, "SUSPENDED"},
		{"failing format", confluent.TableflowTopic{Phase: "RUNNING", FailingFormats: []confluent.FailingFormat{{Format: "DELTA", ErrorMessage: "x"}}}, "DEGRADED"},
		{"catalog sync failed", confluent.TableflowTopic{Phase: "RUNNING", CatalogSync: []confluent.CatalogSync{{SyncStatus: "FAILED"}}}, "DEGRADED"},
		{"failed", confluent.TableflowTopic{Phase: "FAILED", ErrorMessage: "schema incompatible"}, "FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := tableflowState("tableflow:t", 1, tc.in)
			if cs.State != tc.want || cs.Kind != ComponentTableflow {
				t.Errorf("%+v", cs)
			}
			if tc.in.Suspended && !cs.Since.Equal(at) {
				t.Errorf("suspended since %v", cs.Since)
			}
		})
	}
}

func TestTraceHeadKeepsTheExceptionAndItsCause(t *testing.T) {
	got := traceHead(snowflakeTrace)
	if !strings.HasPrefix(got, "org.apache.kafka.connect.errors.ConnectException") || !strings.HasSuffix(got, "JWT token is invalid.") || strings.Contains(got, "WorkerSinkTask.java") {
		t.Errorf("%q", got)
	}
	if long := traceHead(strings.Repeat("x", 1000)); len(long) > 410 {
		t.Errorf("not bounded: %d", len(long))
	}
	if traceHead("") != "" {
		t.Errorf("empty trace: %q", traceHead(""))
	}
}

func TestAnAssetOutsideTheGraphKeepsItsSeverity(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	o, err := f.inc.Open(ctx, "warehouse:sqlite/main.nowhere", ModeVolume, "sev2", "no rows", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	inc, _ := f.inc.Get(ctx, o.ID)
	rep := f.diagnose(t, inc, Live{}, nil)
	if rep.Impact.Severity != "" || !strings.Contains(rep.Impact.Why, "not in the context graph") || !strings.Contains(rep.Result.Conclusion, "No upstream lineage") {
		t.Fatalf("impact %+v, result %+v", rep.Impact, rep.Result)
	}
	if sev, err := Record(ctx, f.inc, rep, "dw-incidents"); err != nil || sev != "sev2" {
		t.Fatalf("unknown downstream lowered the severity: %s %v", sev, err)
	}
}

func TestStatementSinceComesFromEndTimeOrTheStop(t *testing.T) {
	end := time.Date(2026, 8, 14, 14, 30, 0, 0, time.UTC)
	upd := time.Date(2026, 8, 14, 14, 20, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   confluent.Statement
		want time.Time
	}{
		{"end time", confluent.Statement{Phase: "FAILED", EndTime: &end, UpdatedAt: &upd, Detail: "Deserialization failed"}, end},
		{"stopped", confluent.Statement{Phase: "STOPPED", Stopped: true, UpdatedAt: &upd}, upd},
		{"failed without end time claims no time", confluent.Statement{Phase: "FAILED", UpdatedAt: &upd}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := statementState("flink:statement/s", 3, tc.in)
			if !cs.Since.Equal(tc.want) || cs.State != tc.in.Phase || cs.Detail != tc.in.Detail || cs.Distance != 3 {
				t.Errorf("%+v", cs)
			}
		})
	}
}

func FuzzTraceHead(f *testing.F) {
	for _, s := range []string{snowflakeTrace, "", "\n\n", "Caused by: x", "a\nCaused by:\nCaused by: b", strings.Repeat("é", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, trace string) {
		got := traceHead(trace)
		if len(got) > 400+len("…") {
			t.Errorf("%d bytes", len(got))
		}
		if utf8.ValidString(trace) && !utf8.ValidString(got) {
			t.Errorf("split a character: %q", got)
		}
	})
}

// A freshness failure walks the lineage at table level; the statement's SQL still says it reads
// the removed field, and its failure to deserialize ties it to the change.
func TestAFreshnessIncidentGetsFieldLevelReasoningFromTheStatementSQL(t *testing.T) {
	f := story(t, scenarioSchema(t, 12))
	inc := f.history(t, usageHourly, ModeFreshness, "freshness_lag_seconds", "")
	srv := confluenttest.New(t,
		[]confluenttest.Statement{{Name: "usage-hourly-rollup", Phase: "FAILED", CreatedAt: storyNow.Add(-30 * 24 * time.Hour), ComputePoolID: confluenttest.Pool,
			Detail: "Failed to deserialize Avro record: field response_bytes could not be resolved"}},
		[]confluenttest.Tableflow{{Topic: "usage-hourly", Phase: "RUNNING"}})
	rep := f.diagnose(t, inc, confluentLive(t, srv), &config.Config{})
	top := rep.Result.Candidates[0]
	if top.Source != "schema:api-usage-value v12" || !has(top.Supports, KindReader) {
		t.Fatalf("top %+v\nall %+v", top, rep.Result.Candidates)
	}
	ev := strings.Join(top.Evidence, "\n")
	for _, want := range []string{"flink:statement/usage-hourly-rollup: `SUM(response_bytes)` skips nulls", "its error names response_bytes, which v12 changed"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	for _, c := range rep.Result.Candidates[1:] {
		if c.Kind == "component_failure" && c.EffectOf != top.Source {
			t.Errorf("the failed statement is a rival cause: %+v", c)
		}
	}
}
