package connect_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/connect"
	"github.com/dataworkers/dw/pkg/connect/connecttest"
)

var (
	snowflakeSink = connecttest.Connector{
		Name: "usage-snowflake-sink", Type: "sink", State: "RUNNING", WorkerID: "10.0.0.5:8083",
		Config: map[string]string{
			"connector.class":           "com.snowflake.kafka.connector.SnowflakeSinkConnector",
			"topics":                    "usage-hourly,api-usage",
			"snowflake.topic2table.map": "usage-hourly:USAGE_HOURLY",
			"snowflake.database.name":   "ANALYTICS",
			"snowflake.schema.name":     "USAGE",
			"snowflake.private.key":     "MIIEvQIBADANBg...",
		},
		Tasks: []connecttest.Task{
			{State: "RUNNING", WorkerID: "10.0.0.5:8083"},
			{State: "FAILED", WorkerID: "10.0.0.6:8083", Trace: "org.apache.kafka.connect.errors.ConnectException: Exiting WorkerSinkTask"},
		},
		Topics: []string{"usage-hourly"},
	}
	// A name that needs escaping in a URL path.
	oddSource = connecttest.Connector{
		Name: "gateway/events source?v=2", Type: "source", State: "PAUSED", WorkerID: "10.0.0.5:8083",
		Config: map[string]string{"connector.class": "io.debezium.connector.postgresql.PostgresConnector", "topic.prefix": "gw", "database.password": "hunter2"},
		Tasks:  []connecttest.Task{{State: "PAUSED", WorkerID: "10.0.0.5:8083"}},
	}
)

func client(t *testing.T, url string, mod func(*config.Connect)) *connect.Client {
	t.Helper()
	cfg := &config.Connect{URL: url, Timeout: 2 * time.Second}
	if mod != nil {
		mod(cfg)
	}
	c, err := connect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestListConnectorsExpandsStatusAndInfo(t *testing.T) {
	srv := connecttest.New(t, snowflakeSink, oddSource)
	cs, err := client(t, srv.URL, nil).ListConnectors(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Name != "gateway/events source?v=2" || cs[1].Name != "usage-snowflake-sink" {
		t.Fatalf("connectors = %+v", cs)
	}
	sink := cs[1]
	if sink.Type != "sink" || sink.State != "RUNNING" || sink.FailedTasks != 1 || sink.Healthy {
		t.Errorf("sink = %+v", sink)
	}
	if sink.Tasks[1].Trace == "" || sink.Tasks[1].WorkerID != "10.0.0.6:8083" {
		t.Errorf("failed task lost its trace or worker: %+v", sink.Tasks[1])
	}
	if got := sink.Lineage.Tables["usage-hourly"]; got != "ANALYTICS.USAGE.USAGE_HOURLY" {
		t.Errorf("topic2table mapping = %q", got)
	}
	if got := sink.Lineage.Tables["api-usage"]; got != "ANALYTICS.USAGE.API_USAGE" {
		t.Errorf("unmapped topic's table = %q", got)
	}
	if sink.Config["snowflake.private.key"] != "[redacted]" || cs[0].Config["database.password"] != "[redacted]" {
		t.Errorf("secrets not redacted: %v / %v", sink.Config, cs[0].Config)
	}
	if len(srv.Requests) != 1 || !strings.Contains(srv.Requests[0], "expand=status") || !strings.Contains(srv.Requests[0], "expand=info") {
		t.Errorf("requests = %v, want one expanded listing", srv.Requests)
	}
}

func TestListConnectorsFallsBackWhenExpandIsIgnored(t *testing.T) {
	srv := connecttest.New(t, snowflakeSink, oddSource)
	srv.NoExpand = true
	cs, err := client(t, srv.URL, nil).ListConnectors(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].State != "PAUSED" || cs[1].FailedTasks != 1 {
		t.Fatalf("connectors = %+v", cs)
	}
}

func TestStatusEscapesNamesAndSaysWhenMissing(t *testing.T) {
	srv := connecttest.New(t, oddSource)
	c := client(t, srv.URL, nil)
	conn, err := c.Get(context.Background(), oddSource.Name)
	if err != nil {
		t.Fatal(err)
	}
	if conn.State != "PAUSED" || conn.Healthy {
		t.Fatalf("connector = %+v", conn)
	}
	if !strings.Contains(srv.Requests[0], "/connectors/gateway%2Fevents%20source%3Fv=2/status") {
		t.Errorf("name not escaped as one path segment: %v", srv.Requests)
	}
	_, err = c.Status(context.Background(), "no-such")
	if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "Connector no-such not found") {
		t.Fatalf("missing connector err = %v", err)
	}
	if _, err := c.Status(context.Background(), " "); err == nil {
		t.Fatal("empty name accepted")
	}
}

func TestBasicAuthIsSentAndWrongCredentialsNameTheKey(t *testing.T) {
	srv := connecttest.New(t, snowflakeSink)
	srv.User, srv.Password = "dw", "s3cret"
	ok := client(t, srv.URL, func(c *config.Connect) { c.Username, c.Password = "dw", "s3cret" })
	if _, err := ok.ListConnectors(context.Background()); err != nil {
		t.Fatalf("right credentials: %v", err)
	}
	bad := client(t, srv.URL, func(c *config.Connect) { c.Username, c.Password = "dw", "nope" })
	_, err := bad.ListConnectors(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "credentials in connect") {
		t.Fatalf("wrong credentials err = %v", err)
	}
}

func TestActiveTopics(t *testing.T) {
	srv := connecttest.New(t, snowflakeSink, oddSource)
	c := client(t, srv.URL, nil)
	topics, err := c.ActiveTopics(context.Background(), snowflakeSink.Name)
	if err != nil || len(topics) != 1 || topics[0] != "usage-hourly" {
		t.Fatalf("topics = %v, %v", topics, err)
	}
	if _, err := c.ActiveTopics(context.Background(), oddSource.Name); err == nil {
		t.Fatal("tracking disabled should be an error the caller can fall back from")
	}
}

func TestSlowWorkerIsAnErrorWithinTheTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := client(t, srv.URL, func(c *config.Connect) { c.Timeout = 100 * time.Millisecond })
	_, err := c.ListConnectors(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Fatalf("err = %v", err)
	}
}

func TestNotConfiguredNamesTheKey(t *testing.T) {
	if _, err := connect.New(nil); err == nil || !strings.Contains(err.Error(), "connect.url") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigLineage(t *testing.T) {
	cases := []struct {
		name   string
		cfg    map[string]string
		topics []string
		tables map[string]string
	}{
		{"sink topics", map[string]string{"topics": " a , b,"}, []string{"a", "b"}, nil},
		{"regex", map[string]string{"topics.regex": "usage-.*"}, nil, nil},
		{"snowflake map without db", map[string]string{"snowflake.topic2table.map": "a:T_A,bad,:x"}, []string{"a"}, map[string]string{"a": "T_A"}},
		{"jdbc format", map[string]string{"topics": "orders", "table.name.format": "raw.${topic}"}, []string{"orders"}, map[string]string{"orders": "raw.orders"}},
		{"source topic", map[string]string{"kafka.topic": "events"}, []string{"events"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := connect.ConfigLineage(c.cfg)
			if strings.Join(l.Topics, ",") != strings.Join(c.topics, ",") {
				t.Errorf("topics = %v, want %v", l.Topics, c.topics)
			}
			if len(l.Tables) != len(c.tables) {
				t.Errorf("tables = %v, want %v", l.Tables, c.tables)
			}
			for k, v := range c.tables {
				if l.Tables[k] != v {
					t.Errorf("table[%s] = %q, want %q", k, l.Tables[k], v)
				}
			}
		})
	}
}

func TestRebalance409IsRetriedThenReported(t *testing.T) {
	srv := connecttest.New(t, snowflakeSink)
	srv.Rebalancing = 2
	c := client(t, srv.URL, nil)
	if _, err := c.ListConnectors(context.Background()); err != nil {
		t.Fatalf("after a short rebalance: %v", err)
	}
	srv.Rebalancing = 100
	_, err := c.Status(context.Background(), snowflakeSink.Name)
	if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "rebalancing") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfluentCloudManagedConnectors(t *testing.T) {
	srv := connecttest.New(t, snowflakeSink)
	srv.Prefix = "/connect/v1/environments/env-usage/clusters/lkc-usage"
	srv.User, srv.Password = "CLOUDKEY", "cloud-secret"
	cc := &config.ConfluentCloud{APIURL: srv.URL, APIKey: "CLOUDKEY", APISecret: "cloud-secret", EnvironmentID: "env-usage", KafkaClusterID: "lkc-usage", Timeout: 2 * time.Second}
	c, err := connect.FromConfig(&config.Config{ConfluentCloud: cc})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.ListConnectors(context.Background())
	if err != nil || len(cs) != 1 || cs[0].FailedTasks != 1 || cs[0].Lineage.Tables["usage-hourly"] == "" {
		t.Fatalf("managed connectors = %+v, %v", cs, err)
	}
	if !strings.Contains(srv.Requests[0], "expand=info%2Cstatus%2Cid") {
		t.Errorf("request = %s", srv.Requests[0])
	}
	if st, err := c.Status(context.Background(), snowflakeSink.Name); err != nil || st.Connector.State != "RUNNING" {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if _, err := connect.FromConfig(&config.Config{}); err == nil || !strings.Contains(err.Error(), "connect.url") || !strings.Contains(err.Error(), "kafka_cluster_id") {
		t.Fatalf("neither configured: %v", err)
	}
}
