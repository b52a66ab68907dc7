package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/connect/connecttest"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/lineage/scenario"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/store"
)

// The story's failing table, as the scenario graph names it.
var usageHourly = graph.WarehouseURN("snowflake", "ANALYTICS", "USAGE", "USAGE_HOURLY")

// story builds the design's scenario on a real store: the lineage graph, api-usage-value v11
// (first seen days ago) and, when v12 is not empty, that schema text as v12 first seen at 14:05,
// the egress_bytes null-rate history (0 in every run until 0.18 failing at 15:05), and the
// incident a failed check opens.
func story(t *testing.T, v12 string) (*mcpkit.Env, *store.Store, int64) {
	t.Helper()
	return storyOf(t, v12, "null_rate", "null_rate", "egress_bytes")
}

// storyOf is story with another failing check: its failure mode, metric and subject column.
func storyOf(t *testing.T, v12, mode, metric, column string) (*mcpkit.Env, *store.Store, int64) {
	t.Helper()
	ctx := context.Background()
	env := mcpkittest.Env(t, "dw-incidents")
	now := time.Date(2026, 8, 14, 15, 30, 0, 0, time.UTC)
	env.Now = func() time.Time { return now }
	st, err := env.Store.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := scenario.Load(ctx, graph.New(st, env.Now), "../../pkg/lineage/testdata/scenario", "../../configs/catalog.example.yaml"); err != nil {
		t.Fatal(err)
	}
	v11 := registry.SubjectVersion{Subject: "api-usage-value", Version: 11, ID: 100011, Type: schema.Avro, Schema: scenarioSchema(t, 11)}
	if _, err := registry.RecordVersions(ctx, st, now.Add(-5*24*time.Hour), []registry.SubjectVersion{v11}); err != nil {
		t.Fatal(err)
	}
	seen := []registry.SubjectVersion{v11}
	if v12 != "" {
		seen = append(seen, registry.SubjectVersion{Subject: "api-usage-value", Version: 12, ID: 100012, Type: schema.Avro, Schema: v12})
	}
	if _, err := registry.RecordVersions(ctx, st, time.Date(2026, 8, 14, 14, 5, 0, 0, time.UTC), seen); err != nil {
		t.Fatal(err)
	}
	// The check history as pkg/quality records it (migration 0003): one run per hour, one point each.
	points := []point{{11, 0, "pass"}, {12, 0, "pass"}, {13, 0, "pass"}, {14, 0, "pass"}, {15, 0.18, "fail"}}
	id := history(t, st, env, usageHourly, mode, metric, column, points)
	return env, st, id
}

type point struct {
	hour   int
	value  float64
	status string
}

// history records the check history as pkg/quality does (migration 0003: one run per hour, one
// point each) and opens the incident the failure opens.
func history(t *testing.T, st *store.Store, env *mcpkit.Env, asset graph.URN, mode, metric, column string, points []point) int64 {
	t.Helper()
	ctx := context.Background()
	err := st.Write(ctx, func(tx *sql.Tx) error {
		for _, p := range points {
			at := store.Timestamp(time.Date(2026, 8, 14, p.hour, 5, 0, 0, time.UTC))
			res, err := tx.ExecContext(ctx, `INSERT INTO check_runs (asset, monitor, started_at, finished_at, window_label, status, summary)
VALUES (?, 'm', ?, ?, 'last hour', ?, '')`, string(asset), at, at, p.status)
			if err != nil {
				return err
			}
			run, _ := res.LastInsertId()
			if _, err := tx.ExecContext(ctx, `INSERT INTO metric_points (run_id, asset, metric, subject, at, value, status)
VALUES (?, ?, ?, ?, ?, ?, ?)`, run, string(asset), metric, column, at, p.value, p.status); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := incidents.New(st, env.Now).Open(ctx, string(asset), mode, "sev2", column+" failed its "+metric+" check", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	return o.ID
}

// scenarioSchema is the story's api-usage-value schema text at version v.
func scenarioSchema(t *testing.T, v int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "pkg", "schema", "testdata", "scenario", "api-usage-value.v"+strconv.Itoa(v)+".avsc"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestDiagnoseNamesV12RemovalAndTheStatementPinnedToV11(t *testing.T) {
	env, st, id := story(t, scenarioSchema(t, 12))
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
		t.Fatal(e)
	}
	t.Logf("conclusion: %s\nevidence: %+v", out.Diagnosis.Conclusion, out.Evidence)
	ev := out.Evidence
	if ev.Column != "egress_bytes" || ev.Metric != "null_rate" || !ev.Onset.Equal(time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC)) || ev.FailingRuns != 1 {
		t.Errorf("evidence: %+v", ev)
	}
	if len(ev.Versions) != 1 || ev.Versions[0].Version != 12 || ev.Versions[0].DiffedTo != 11 {
		t.Errorf("versions considered: %+v", ev.Versions)
	}
	if len(out.Diagnosis.Candidates) == 0 {
		t.Fatalf("no candidates: %+v", out)
	}
	top := out.Diagnosis.Candidates[0]
	if top.Kind != "schema_change" || top.Source != "schema:api-usage-value v12" || !strings.Contains(top.Cause, "removed response_bytes") {
		t.Errorf("top candidate: %+v", top)
	}
	ev12 := strings.Join(top.Evidence, "\n")
	for _, want := range []string{"flink:statement/usage-hourly-rollup reads SUM(response_bytes), pinned to v11", "first seen 14:05", "response_bytes lies on the upstream lineage of egress_bytes (5 hops)"} {
		if !strings.Contains(ev12, want) {
			t.Errorf("evidence misses %q:\n%s", want, ev12)
		}
	}
	for _, k := range []string{"timing", "lineage", "reader", "mode"} {
		if !slices.Contains(top.Supports, k) {
			t.Errorf("supports %v: want %s", top.Supports, k)
		}
	}
	if slices.Contains(top.Supports, "data") || top.Score != 4 {
		t.Errorf("nothing measured the data, yet supports=%v score=%d", top.Supports, top.Score)
	}
	if !strings.Contains(strings.Join(out.Diagnosis.Unchecked, "\n"), "confluent_cloud not configured") {
		t.Errorf("unchecked: %v", out.Diagnosis.Unchecked)
	}
	inc, err := incidents.New(st, env.Now).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if inc.Cause != top.Cause || out.Cause != top.Cause || inc.Status != incidents.StatusInvestigating {
		t.Errorf("incident after diagnosis: cause %q status %s, want %q", inc.Cause, inc.Status, top.Cause)
	}
	stored, err := incidents.New(st, env.Now).Diagnosis(context.Background(), id)
	if err != nil || !strings.Contains(stored, "usage-hourly-rollup") {
		t.Errorf("stored diagnosis %q, %v", stored, err)
	}
	// The blast radius of egress_bytes reaches billing and the Stripe push, so the incident is sev1.
	reached := map[graph.URN]bool{}
	for _, im := range append(out.Impact.BlastRadius.FieldLevel, out.Impact.BlastRadius.TableLevel...) {
		reached[im.URN] = true
	}
	for _, u := range []graph.URN{"dbt:model.billing.fct_billable_egress", "bi:sigma/revenue-today", "job:airflow/sync_metered_usage_to_stripe", "sink:stripe"} {
		if !reached[u] {
			t.Errorf("blast radius misses %s", u)
		}
	}
	if out.Severity != "sev1" || inc.Severity != "sev1" || out.Impact.Rule == "" || !strings.Contains(out.Impact.Why, "sink:stripe") {
		t.Errorf("severity %s (incident %s): %q", out.Severity, inc.Severity, out.Impact.Why)
	}
	if len(out.Impact.SinkJobs) != 1 || out.Impact.SinkJobs[0].NextRun == nil || out.Impact.SinkJobs[0].NextRun.Hour() != 23 ||
		!strings.Contains(out.Next, "hold job:airflow/sync_metered_usage_to_stripe") {
		t.Errorf("sink jobs %+v, next %q", out.Impact.SinkJobs, out.Next)
	}
}

// TestDiagnoseWithLiveBackendsMeasuresTheData: the story with Confluent Cloud, Kafka and the
// registry configured (loopback peers): nothing is left unchecked and the sample adds the data.
func TestDiagnoseWithLiveBackendsMeasuresTheData(t *testing.T) {
	env, _, id := story(t, scenarioSchema(t, 12))
	cc := confluenttest.New(t,
		[]confluenttest.Statement{{Name: "usage-hourly-rollup", Phase: "RUNNING", CreatedAt: time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)}},
		[]confluenttest.Tableflow{{Topic: "usage-hourly", Phase: "RUNNING"}})
	kfx := kafkatest.Start(t, "api-usage")
	kfx.SeedUsageSchemas()
	kfx.Produce(t, "api-usage", kafkatest.ScenarioDay(time.Date(2026, 8, 14, 0, 0, 0, 0, time.UTC), 200))
	env.Config.ConfluentCloud, env.Config.Kafka, env.Config.SchemaRegistry = cc.Config(), kfx.Kafka, kfx.SchemaRegistry
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
		t.Fatal(e)
	}
	top := out.Diagnosis.Candidates[0]
	if top.Source != "schema:api-usage-value v12" || top.Score != 5 || len(out.Diagnosis.Unchecked) != 0 {
		t.Fatalf("top %+v, unchecked %v", top, out.Diagnosis.Unchecked)
	}
	if len(out.Evidence.Live) != 2 || len(out.Evidence.Samples) != 1 || out.Evidence.Samples[0].FieldNullRates["response_bytes"] <= 0 {
		t.Errorf("live %+v, samples %+v", out.Evidence.Live, out.Evidence.Samples)
	}
}

func TestDiagnoseAStoppedStatementAsTheCauseOfStaleness(t *testing.T) {
	env, _, id := storyOf(t, "", "freshness", "freshness_lag_seconds", "HOUR")
	cc := confluenttest.New(t,
		[]confluenttest.Statement{{Name: "usage-hourly-rollup", Phase: "STOPPED", CreatedAt: time.Date(2026, 8, 14, 14, 20, 0, 0, time.UTC)}}, nil)
	env.Config.ConfluentCloud = cc.Config()
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
		t.Fatal(e)
	}
	top := out.Diagnosis.Candidates[0]
	if top.Kind != "component_failure" || top.Cause != "statement flink:statement/usage-hourly-rollup is STOPPED" || !slices.Contains(top.Supports, "timing") {
		t.Fatalf("top: %+v", out.Diagnosis.Candidates)
	}
	// Tableflow is on the path too; the fake has no such topic: its 404 is unchecked, not a failure.
	if !strings.Contains(strings.Join(out.Diagnosis.Unchecked, "\n"), "Tableflow status of tableflow:usage-hourly") {
		t.Errorf("unchecked: %v", out.Diagnosis.Unchecked)
	}
}

// connectorStory: topic orders → sink connector orders-snowflake-sink → RAW.SALES.ORDERS, whose
// freshness check fails at 15:05.
func connectorStory(t *testing.T) (*mcpkit.Env, int64) {
	t.Helper()
	env := mcpkittest.Env(t, "dw-incidents")
	env.Now = func() time.Time { return time.Date(2026, 8, 14, 15, 30, 0, 0, time.UTC) }
	st, err := env.Store.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	orders := graph.WarehouseURN("snowflake", "RAW", "SALES", "ORDERS")
	conn := graph.URN("connect:connector/orders-snowflake-sink")
	_, err = graph.New(st, env.Now).Import(context.Background(), graph.Batch{Source: "test:connector-story", Assets: []graph.Asset{
		{URN: graph.TopicURN("orders"), Kind: graph.KindKafkaTopic}, {URN: conn, Kind: graph.KindConnector},
		{URN: orders, Kind: graph.KindWarehouseTable}}, Edges: []graph.Edge{
		{From: graph.TopicURN("orders").Field(""), To: conn.Field(""), Kind: graph.EdgeReads},
		{From: conn.Field(""), To: orders.Field(""), Kind: graph.EdgeWrites}}})
	if err != nil {
		t.Fatal(err)
	}
	return env, history(t, st, env, orders, "freshness", "freshness_lag_seconds", "LOADED_AT",
		[]point{{13, 60, "pass"}, {14, 120, "pass"}, {15, 7200, "fail"}})
}

func TestDiagnoseAFailedConnectorTaskAsTheCause(t *testing.T) {
	env, id := connectorStory(t)
	srv := connecttest.New(t, connecttest.Connector{Name: "orders-snowflake-sink", Type: "sink", State: "RUNNING",
		Tasks: []connecttest.Task{{State: "FAILED", WorkerID: "w1:8083",
			Trace: "org.apache.kafka.connect.errors.ConnectException: Exiting WorkerSinkTask due to unrecoverable exception.\n\tat x\nCaused by: net.snowflake.client.jdbc.SnowflakeSQLException: JWT token is invalid."}}})
	env.Config.Connect = &config.Connect{URL: srv.URL}
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
		t.Fatal(e)
	}
	top := out.Diagnosis.Candidates[0]
	if top.Kind != "component_failure" || !strings.Contains(top.Cause, "orders-snowflake-sink is FAILED") ||
		!strings.Contains(strings.Join(top.Evidence, " "), "task 0 FAILED: org.apache.kafka.connect.errors.ConnectException") {
		t.Fatalf("top: %+v", out.Diagnosis.Candidates)
	}
	if out.Severity != "sev3" || out.Impact.BlastRadius.Total != 0 {
		t.Errorf("nothing reads the table: severity %s, %q", out.Severity, out.Impact.Why)
	}
}

func TestDiagnoseNamesABackendAnswering500AsUnchecked(t *testing.T) {
	env, id := connectorStory(t)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error_code":500,"message":"Request timed out"}`))
	}))
	t.Cleanup(down.Close)
	env.Config.Connect = &config.Connect{URL: down.URL}
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
		t.Fatalf("a backend down must not fail the diagnosis: %s", e)
	}
	un := strings.Join(out.Diagnosis.Unchecked, "\n")
	if !strings.Contains(un, "connector and task state of connect:connector/orders-snowflake-sink") || !strings.Contains(un, "500") {
		t.Errorf("unchecked: %s", un)
	}
	if out.Diagnosis.Candidates[0].Kind != "none_upstream" {
		t.Errorf("%+v", out.Diagnosis.Candidates)
	}
}

func TestDiagnoseWithNoUpstreamChangeSaysSo(t *testing.T) {
	v11 := scenarioSchema(t, 11)
	for name, tc := range map[string]struct {
		v12      string
		versions int
	}{
		"no new version": {"", 0},
		// status_code is not on egress_bytes' lineage: its removal must not be blamed.
		"unrelated field removed": {strings.Replace(v11, `{"name": "status_code", "type": "int"},`, "", 1), 1},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.v12 == v11 {
				t.Fatal("fixture did not change")
			}
			env, st, id := story(t, tc.v12)
			var out diagnoseResult
			if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
				t.Fatal(e)
			}
			if len(out.Diagnosis.Candidates) != 1 || out.Diagnosis.Candidates[0].Kind != "none_upstream" || len(out.Evidence.Versions) != tc.versions {
				t.Fatalf("want none_upstream: %+v", out)
			}
			if !strings.Contains(out.Diagnosis.Conclusion, "Nothing upstream changed") {
				t.Errorf("conclusion: %s", out.Diagnosis.Conclusion)
			}
			inc, err := incidents.New(st, env.Now).Get(context.Background(), id)
			if err != nil || inc.Cause == "" {
				t.Errorf("incident cause %q, %v", inc.Cause, err)
			}
		})
	}
}

func TestDiagnoseUpstreamTypeChange(t *testing.T) {
	v11 := scenarioSchema(t, 11)
	v12 := strings.Replace(v11, `{"name": "response_bytes", "type": ["null", "long"], "default": null}`, `{"name": "response_bytes", "type": ["null", "string"], "default": null}`, 1)
	if v12 == v11 {
		t.Fatal("fixture did not change")
	}
	env, _, id := story(t, v12)
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
		t.Fatal(e)
	}
	top := out.Diagnosis.Candidates[0]
	if top.Kind != "schema_change" || !strings.Contains(top.Cause, "type_changed response_bytes") || !slices.Contains(top.Supports, "reader") || !slices.Contains(top.Supports, "mode") {
		t.Fatalf("top candidate: %+v", top)
	}
}

func TestDiagnoseUnknownIncidentAndUnknownAsset(t *testing.T) {
	env := mcpkittest.Env(t, "dw-incidents")
	tool := diagnoseIncident(env)
	if e := mcpkittest.Call(t, tool, map[string]any{"incident_id": 99}, nil); !strings.Contains(e, "99") {
		t.Errorf("unknown incident: %q", e)
	}
	st, err := env.Store.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o, err := incidents.New(st, env.Now).Open(context.Background(), "warehouse:sqlite/main.nowhere", "volume", "sev3", "no rows", "test")
	if err != nil {
		t.Fatal(err)
	}
	var out diagnoseResult
	if e := mcpkittest.Call(t, tool, map[string]any{"incident_id": o.ID}, &out); e != "" {
		t.Fatal(e)
	}
	if out.Diagnosis.Candidates == nil || len(out.Diagnosis.Candidates) != 0 || !strings.Contains(out.Diagnosis.Conclusion, "No upstream lineage") ||
		!strings.Contains(strings.Join(out.Diagnosis.Unchecked, " "), "not in the context graph") {
		t.Errorf("unknown asset: %+v", out.Diagnosis)
	}
	if e := mcpkittest.Call(t, tool, map[string]any{"incident_id": o.ID, "look_back_hours": -1}, nil); !strings.Contains(e, "look_back_hours") {
		t.Errorf("bad look-back: %q", e)
	}
}

// TestAnExplicitOpeningSeverityOutlivesTheDiagnosis: a severity given to open_incident is the
// caller's; the blast-radius rule (nothing downstream: sev3) does not lower it.
func TestAnExplicitOpeningSeverityOutlivesTheDiagnosis(t *testing.T) {
	env, _ := connectorStory(t)
	var opened openIncidentResult
	if e := mcpkittest.Call(t, openIncident(env), map[string]any{"asset": string(graph.WarehouseURN("snowflake", "RAW", "SALES", "ORDERS")),
		"failure_mode": "volume", "summary": "no orders loaded", "severity": "sev2"}, &opened); e != "" || !opened.Opened {
		t.Fatalf("%s %+v", e, opened)
	}
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": opened.Incident.ID}, &out); e != "" {
		t.Fatal(e)
	}
	if out.Impact.Severity != "sev3" || out.Severity != "sev2" {
		t.Fatalf("the rule gives %s; the incident is now %s, want the given sev2 kept", out.Impact.Severity, out.Severity)
	}
	// Without an explicit severity the default is the rule's to change.
	var dflt openIncidentResult
	if e := mcpkittest.Call(t, openIncident(env), map[string]any{"asset": "connect:connector/orders-snowflake-sink",
		"failure_mode": "custom", "summary": "bad rows"}, &dflt); e != "" {
		t.Fatal(e)
	}
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": dflt.Incident.ID}, &out); e != "" {
		t.Fatal(e)
	}
	if out.Severity != "sev2" || out.Impact.Severity != "sev2" {
		t.Errorf("default severity after diagnosis: %s (rule %s)", out.Severity, out.Impact.Severity)
	}
	if e := mcpkittest.Call(t, openIncident(env), map[string]any{"asset": "x", "failure_mode": "volume", "summary": "s", "severity": "SEV1"}, nil); !strings.Contains(e, "sev1, sev2, sev3 or sev4") {
		t.Errorf("bad severity: %q", e)
	}
}

// TestDiagnoseKeepsSecretsOutOfResultsAndTheStore: a connector trace carrying a JDBC URL with its
// password and a configured secret reaches neither the result nor the stored diagnosis.
func TestDiagnoseKeepsSecretsOutOfResultsAndTheStore(t *testing.T) {
	env, id := connectorStory(t)
	const configured = "c0nnect-pa55word"
	srv := connecttest.New(t, connecttest.Connector{Name: "orders-snowflake-sink", Type: "sink", State: "RUNNING",
		Tasks: []connecttest.Task{{State: "FAILED", WorkerID: "w1:8083",
			Trace: "org.apache.kafka.connect.errors.ConnectException: cannot reach jdbc:postgresql://loader:s3cretpw@db.internal:5432/orders\n\tat x\n" +
				"Caused by: org.postgresql.util.PSQLException: password authentication failed (tried " + configured + ")"}}})
	env.Config.Connect = &config.Connect{URL: srv.URL, Username: "dw", Password: configured}
	env.Redact = env.Config.Redactor()
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
		t.Fatal(e)
	}
	st, _ := env.Store.Get(context.Background())
	stored, err := incidents.New(st, env.Now).Diagnosis(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(out)
	for what, text := range map[string]string{"result": string(raw), "stored diagnosis": stored} {
		if strings.Contains(text, "s3cretpw") || strings.Contains(text, configured) {
			t.Errorf("the %s carries a secret: %s", what, text)
		}
		if !strings.Contains(text, "db.internal:5432/orders") || !strings.Contains(text, "password authentication failed") {
			t.Errorf("the %s lost the evidence around the secret: %s", what, text)
		}
	}
}

// TestLiveReadersNameAnUnusableConfluentConfig: confluent.New failing (a bad flink_url) leaves
// readers that return its error (shown in Unchecked), never a nil client to call.
func TestLiveReadersNameAnUnusableConfluentConfig(t *testing.T) {
	env := mcpkittest.Env(t, "dw-incidents")
	env.Config.ConfluentCloud = &config.ConfluentCloud{FlinkURL: "::not a url", APIKey: "k", APISecret: "secret-value", EnvironmentID: "env-1",
		OrganizationID: "org-1", KafkaClusterID: "lkc-1"}
	env.Config.Connect, env.Config.Kafka = nil, nil
	live := liveReaders(env)
	if live.Statement == nil || live.Tableflow == nil {
		t.Fatalf("configured backends without readers: %+v", live)
	}
	if _, err := live.Statement(context.Background(), "s"); err == nil {
		t.Error("statement reader over a broken config returned no error")
	}
	if _, err := live.Tableflow(context.Background(), "t"); err == nil {
		t.Error("tableflow reader over a broken config returned no error")
	}
	if live.Sample != nil {
		t.Errorf("unconfigured kafka got a reader")
	}
}
