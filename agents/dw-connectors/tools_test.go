package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/connect"
	"github.com/dataworkers/dw/pkg/connect/connecttest"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

func TestMain(m *testing.M) {
	// The warehouse package links gosnowflake: keep it off cloud metadata endpoints and temp dirs.
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	os.Exit(m.Run())
}

func TestToolSnapshots(t *testing.T) {
	mcpkittest.CheckSnapshots(t, tools(mcpkittest.Env(t, "dw-connectors")))
}

func TestToolSurfaceInvariants(t *testing.T) {
	mcpkittest.CheckInvariants(t, "dw-connectors", tools(mcpkittest.Env(t, "dw-connectors")))
}

func tool(t *testing.T, env *mcpkit.Env, name string) mcpkit.Tool {
	t.Helper()
	for _, tl := range tools(env) {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return mcpkit.Tool{}
}

func TestUnconfiguredBackendsNameTheirKey(t *testing.T) {
	env := mcpkittest.Env(t, "dw-connectors")
	env.Config.Warehouse = nil
	cases := []struct {
		tool string
		args map[string]any
		key  string
	}{
		{"list_topics", nil, "kafka section"},
		{"describe_topic", map[string]any{"topic": "api-usage"}, "kafka section"},
		{"get_consumer_lag", nil, "kafka section"},
		{"sample_topic", map[string]any{"topic": "api-usage"}, "kafka section"},
		{"list_connectors", nil, "connect.url"},
		{"get_connector_status", map[string]any{"connector_name": "x"}, "connect.url"},
		{"list_flink_statements", nil, "confluent_cloud"},
		{"get_flink_statement", map[string]any{"statement_name": "x"}, "confluent_cloud"},
		{"list_tableflow_topics", nil, "confluent_cloud"},
		{"list_tables", nil, "warehouse section"},
		{"describe_table", map[string]any{"table": "t"}, "warehouse section"},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			msg := mcpkittest.Call(t, tool(t, env, c.tool), c.args, nil)
			if msg == "" || !strings.Contains(msg, c.key) {
				t.Fatalf("error %q does not name %q", msg, c.key)
			}
		})
	}
}

func TestKafkaToolsAgainstKfakeAndSrfake(t *testing.T) {
	f := kafkatest.Start(t, "api-usage")
	f.SeedUsageSchemas()
	events := kafkatest.ScenarioDay(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), 150)
	f.Produce(t, "api-usage", events)
	env := mcpkittest.Env(t, "dw-connectors")
	env.Config.Kafka, env.Config.SchemaRegistry = f.Kafka, f.SchemaRegistry

	var lt listTopicsResult
	if msg := mcpkittest.Call(t, tool(t, env, "list_topics"), nil, &lt); msg != "" || lt.Count != 1 || lt.Topics[0].Name != "api-usage" {
		t.Fatalf("list_topics = %+v %s", lt, msg)
	}
	var d kafka.TopicDescription
	if msg := mcpkittest.Call(t, tool(t, env, "describe_topic"), map[string]any{"topic": "api-usage"}, &d); msg != "" || d.TotalRecords != int64(len(events)) {
		t.Fatalf("describe_topic = %+v %s", d, msg)
	}
	if msg := mcpkittest.Call(t, tool(t, env, "describe_topic"), map[string]any{"topic": "nope"}, nil); !strings.Contains(msg, "unknown topic") {
		t.Fatalf("unknown topic: %q", msg)
	}

	// A real consumer group commits part of the topic.
	cons, err := kgo.NewClient(kgo.SeedBrokers(f.Kafka.BootstrapServers...), kgo.ConsumerGroup("rollup"), kgo.ConsumeTopics("api-usage"),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < 50 {
		fs := cons.PollRecords(ctx, 50-len(got))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got = append(got, fs.Records()...)
	}
	if err := cons.CommitRecords(ctx, got...); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	var lag consumerLagResult
	if msg := mcpkittest.Call(t, tool(t, env, "get_consumer_lag"), map[string]any{"group": "rollup"}, &lag); msg != "" || lag.TotalLag != int64(len(events)-len(got)) {
		t.Fatalf("get_consumer_lag = %+v %s (want lag %d)", lag, msg, len(events)-len(got))
	}

	var s kafka.Sample
	msg := mcpkittest.Call(t, tool(t, env, "sample_topic"), map[string]any{"topic": "api-usage", "per_partition": 500}, &s)
	if msg != "" || s.Decoded != len(events) || len(s.Versions) != 2 || s.Versions[1].Label != "api-usage-value v12" {
		t.Fatalf("sample_topic = %+v %s", s.Versions, msg)
	}
	if msg := mcpkittest.Call(t, tool(t, env, "sample_topic"), map[string]any{"topic": "api-usage", "since": "yesterday"}, nil); !strings.Contains(msg, "RFC 3339") {
		t.Fatalf("bad since: %q", msg)
	}
}

func TestDeadKafkaIsAToolErrorNotAHang(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // accepts and never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	env := mcpkittest.Env(t, "dw-connectors")
	env.Config.Kafka = &config.Kafka{BootstrapServers: []string{ln.Addr().String()}, Timeout: 200 * time.Millisecond}
	for _, name := range []string{"list_topics", "get_consumer_lag"} {
		if msg := mcpkittest.Call(t, tool(t, env, name), nil, nil); !strings.Contains(msg, "no answer within 200ms") {
			t.Errorf("%s: %q", name, msg)
		}
	}
	if msg := mcpkittest.Call(t, tool(t, env, "sample_topic"), map[string]any{"topic": "api-usage"}, nil); !strings.Contains(msg, "no answer within 200ms") {
		t.Errorf("sample_topic: %q", msg)
	}
}

func TestConnectToolsAgainstTheRESTFake(t *testing.T) {
	srv := connecttest.New(t,
		connecttest.Connector{Name: "usage-snowflake-sink", Type: "sink", State: "RUNNING", WorkerID: "w1:8083",
			Config: map[string]string{"connector.class": "com.snowflake.kafka.connector.SnowflakeSinkConnector", "topics": "usage-hourly",
				"snowflake.topic2table.map": "usage-hourly:USAGE_HOURLY", "snowflake.database.name": "ANALYTICS", "snowflake.schema.name": "USAGE"},
			Tasks:  []connecttest.Task{{State: "FAILED", WorkerID: "w2:8083", Trace: "org.apache.kafka.connect.errors.DataException: bad record"}},
			Topics: []string{"usage-hourly"}},
		connecttest.Connector{Name: "events source", Type: "source", State: "RUNNING", WorkerID: "w1:8083",
			Tasks: []connecttest.Task{{State: "RUNNING", WorkerID: "w1:8083"}}})
	srv.User, srv.Password = "dw", "pw"
	env := mcpkittest.Env(t, "dw-connectors")
	env.Config.Connect = &config.Connect{URL: srv.URL, Username: "dw", Password: "pw", Timeout: 2 * time.Second}

	var l listConnectorsResult
	if msg := mcpkittest.Call(t, tool(t, env, "list_connectors"), nil, &l); msg != "" || l.Count != 2 || l.Unhealthy != 1 {
		t.Fatalf("list_connectors = %+v %s", l, msg)
	}
	var failed listConnectorsResult
	mcpkittest.Call(t, tool(t, env, "list_connectors"), map[string]any{"state": "running"}, &failed)
	if failed.Count != 2 {
		t.Fatalf("state filter = %+v", failed)
	}
	var c connect.Connector
	if msg := mcpkittest.Call(t, tool(t, env, "get_connector_status"), map[string]any{"connector_name": "usage-snowflake-sink"}, &c); msg != "" {
		t.Fatal(msg)
	}
	if c.FailedTasks != 1 || !strings.Contains(c.Tasks[0].Trace, "DataException") || c.Lineage.ActiveTopics[0] != "usage-hourly" ||
		c.Lineage.Tables["usage-hourly"] != "ANALYTICS.USAGE.USAGE_HOURLY" {
		t.Fatalf("status = %+v", c)
	}
	if msg := mcpkittest.Call(t, tool(t, env, "get_connector_status"), map[string]any{"connector_name": "events source"}, &c); msg != "" || c.State != "RUNNING" {
		t.Fatalf("escaped name: %q %+v", msg, c)
	}
	if msg := mcpkittest.Call(t, tool(t, env, "get_connector_status"), map[string]any{"connector_name": "missing"}, nil); !strings.Contains(msg, "not found") {
		t.Fatalf("missing: %q", msg)
	}
	env.Config.Connect.Password = "wrong"
	if msg := mcpkittest.Call(t, tool(t, env, "list_connectors"), nil, nil); !strings.Contains(msg, "401") {
		t.Fatalf("wrong password: %q", msg)
	}
}

func TestConfluentToolsAgainstTheRESTFake(t *testing.T) {
	created := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	srv := confluenttest.New(t,
		[]confluenttest.Statement{{Name: "usage-hourly-rollup", SQL: "INSERT INTO `usage-hourly` SELECT account_id, SUM(response_bytes) AS egress_bytes FROM `api-usage` GROUP BY account_id",
			Phase: "RUNNING", CreatedAt: created, ComputePoolID: confluenttest.Pool}},
		[]confluenttest.Tableflow{{Topic: "usage-hourly", Phase: "RUNNING",
			CatalogSync: []map[string]string{{"catalog_integration_id": "tci-1", "catalog_type": "SNOWFLAKE", "sync_status": "SYNCED"}}},
			{Topic: "orders", Phase: "FAILED", Suspended: true}})
	env := mcpkittest.Env(t, "dw-connectors")
	env.Config.ConfluentCloud = srv.Config()

	var ls listStatementsResult
	if msg := mcpkittest.Call(t, tool(t, env, "list_flink_statements"), nil, &ls); msg != "" || ls.Count != 1 || ls.Statements[0].Phase != "RUNNING" {
		t.Fatalf("list = %+v %s", ls, msg)
	}
	var st confluent.Statement
	if msg := mcpkittest.Call(t, tool(t, env, "get_flink_statement"), map[string]any{"statement_name": "usage-hourly-rollup"}, &st); msg != "" ||
		!st.CreatedAt.Equal(created) || !strings.Contains(st.SQL, "SUM(response_bytes)") {
		t.Fatalf("get = %+v %s", st, msg)
	}
	if msg := mcpkittest.Call(t, tool(t, env, "get_flink_statement"), map[string]any{"statement_name": "nope"}, nil); !strings.Contains(msg, "not found") {
		t.Fatalf("missing: %q", msg)
	}
	var tf listTableflowResult
	if msg := mcpkittest.Call(t, tool(t, env, "list_tableflow_topics"), nil, &tf); msg != "" || tf.Count != 2 || tf.Unhealthy != 1 {
		t.Fatalf("tableflow = %+v %s", tf, msg)
	}
	var one listTableflowResult
	if msg := mcpkittest.Call(t, tool(t, env, "list_tableflow_topics"), map[string]any{"topic": "usage-hourly"}, &one); msg != "" || one.Topics[0].CatalogSync[0].SyncStatus != "SYNCED" {
		t.Fatalf("one = %+v %s", one, msg)
	}
	srv.Inject = []int{500, 500, 500}
	if msg := mcpkittest.Call(t, tool(t, env, "list_flink_statements"), nil, nil); !strings.Contains(msg, "500") {
		t.Fatalf("persistent 500: %q", msg)
	}
}

func TestWarehouseToolsOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warehouse.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE usage_hourly (usage_id TEXT NOT NULL UNIQUE, account_id INTEGER, hour TIMESTAMP, egress_bytes BIGINT)`,
		`INSERT INTO usage_hourly VALUES ('u-1', 1, '2026-11-29 14:00:00', 10), ('u-2', 2, '2026-11-29 14:00:00', NULL)`,
		`CREATE VIEW billable AS SELECT account_id, sum(egress_bytes) AS b FROM usage_hourly GROUP BY account_id`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	env := mcpkittest.Env(t, "dw-connectors")
	env.Config.Warehouse = &config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 5 * time.Second}

	var lt listTablesResult
	if msg := mcpkittest.Call(t, tool(t, env, "list_tables"), nil, &lt); msg != "" || lt.Count != 2 || lt.Engine != "sqlite" {
		t.Fatalf("list_tables = %+v %s", lt, msg)
	}
	var dt describeTableResult
	if msg := mcpkittest.Call(t, tool(t, env, "describe_table"), map[string]any{"table": "USAGE_HOURLY"}, &dt); msg != "" {
		t.Fatal(msg)
	}
	if dt.Name != "usage_hourly" || len(dt.Columns) != 4 || dt.RowCount == nil || *dt.RowCount != 2 || !dt.UniqueCovers([]string{"usage_id"}) {
		t.Fatalf("describe_table = %+v", dt)
	}
	if msg := mcpkittest.Call(t, tool(t, env, "describe_table"), map[string]any{"table": "nope"}, nil); !strings.Contains(msg, "list_tables") {
		t.Fatalf("missing table: %q", msg)
	}
	if msg := mcpkittest.Call(t, tool(t, env, "describe_table"), map[string]any{"table": "x; DROP TABLE usage_hourly"}, nil); msg == "" {
		t.Fatal("hostile identifier accepted")
	}
}

// The `call` subcommand end to end: YAML config (strict, with ${VAR} secrets) → tool → JSON on
// stdout, exit 0; a refusing backend → exit 1 with the error on stdout.
func TestCallSubcommandReadsConfigAndSamples(t *testing.T) {
	f := kafkatest.Start(t, "api-usage")
	f.SeedUsageSchemas()
	f.Produce(t, "api-usage", kafkatest.ScenarioDay(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), 150))
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "dw.yaml")
	yaml := "store:\n  path: " + filepath.Join(dir, "dw.db") + "\n" +
		"kafka:\n  bootstrap_servers: [\"" + f.Kafka.BootstrapServers[0] + "\"]\n  timeout: 3s\n" +
		"schema_registry:\n  url: ${SR_URL}\n  timeout: 3s\n"
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) {
		if k == "SR_URL" {
			return f.SchemaRegistry.URL, true
		}
		return "", false
	}
	agent := mcpkit.Agent{Name: "dw-connectors", Instructions: instructions, Tools: tools}
	var out, errOut strings.Builder
	code := mcpkit.Run(context.Background(), agent, []string{"--config", cfgPath, "call", "sample_topic", `{"topic":"api-usage"}`},
		mcpkit.IO{In: strings.NewReader(""), Out: &out, Err: &errOut}, lookup)
	var s kafka.Sample
	if code != mcpkit.ExitOK || json.Unmarshal([]byte(out.String()), &s) != nil || s.Decoded != 150 || len(s.Versions) != 2 ||
		s.Versions[1].Label != "api-usage-value v12" {
		t.Fatalf("exit %d\nstdout %.2000s\nstderr %s", code, out.String(), errOut.String())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(yaml, f.Kafka.BootstrapServers[0], dead, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	code = mcpkit.Run(context.Background(), agent, []string{"--config", cfgPath, "call", "list_topics"},
		mcpkit.IO{In: strings.NewReader(""), Out: &out, Err: &errOut}, lookup)
	if code != mcpkit.ExitToolError || !strings.Contains(out.String()+errOut.String(), "kafka.bootstrap_servers") {
		t.Fatalf("dead kafka: exit %d\nstdout %s\nstderr %s", code, out.String(), errOut.String())
	}
}
