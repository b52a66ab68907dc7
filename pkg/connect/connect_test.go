package connect_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

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
	if got, want := sink.Lineage.Tables["api-usage"], "ANALYTICS.USAGE.api_usage_"+javaAbsHash("api-usage"); got != want {
		t.Errorf("unmapped topic's table = %q, want %q", got, want)
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
		{"snowflake unmapped valid topic kept as is", map[string]string{"connector.class": "com.snowflake.kafka.connector.SnowflakeSinkConnector",
			"topics": "orders_v2", "snowflake.database.name": "DB", "snowflake.schema.name": "S"}, []string{"orders_v2"}, map[string]string{"orders_v2": "DB.S.orders_v2"}},
		{"snowflake unmapped topic gets the connector's hashed name", map[string]string{"connector.class": "com.snowflake.kafka.connector.SnowflakeSinkConnector",
			"topics": "usage-hourly", "snowflake.database.name": "DB", "snowflake.schema.name": "S"}, []string{"usage-hourly"},
			map[string]string{"usage-hourly": "DB.S.usage_hourly_" + javaAbsHash("usage-hourly")}},
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

// javaAbsHash is Math.abs(s.hashCode()) computed independently of the package: unsigned 32-bit
// arithmetic over UTF-16 code units, then reinterpreted as signed.
func javaAbsHash(s string) string {
	var h uint32
	for _, u := range utf16.Encode([]rune(s)) {
		h = h*31 + uint32(u)
	}
	v := int64(int32(h))
	if v < 0 && v != math.MinInt32 {
		v = -v
	}
	return strconv.FormatInt(v, 10)
}

func TestSnowflakeTableName(t *testing.T) {
	cases := []struct{ topic, want string }{
		{"usage-hourly", "usage_hourly_" + javaAbsHash("usage-hourly")},
		{"USAGE_HOURLY", "USAGE_HOURLY"},
		{"a$1", "a$1"},
		{"x", "x_" + javaAbsHash("x")},              // one character is not a valid identifier
		{"1abc", "_1abc_" + javaAbsHash("1abc")},    // the first character is re-read by the loop
		{"$abc", "_$abc_" + javaAbsHash("$abc")},    // "$" may not start a name: "_", then the loop re-reads it
		{"logs.*", "logs_" + javaAbsHash("logs.*")}, // ".*" removed, hash of the original
		{"ä-t", "___t_" + javaAbsHash("ä-t")},       // "_" for the first unit, then one per code unit
		{"😀x", "___x_" + javaAbsHash("😀x")},         // a surrogate pair is two code units
	}
	for _, c := range cases {
		got, ok := connect.SnowflakeTableName(c.topic)
		if !ok || got != c.want {
			t.Errorf("SnowflakeTableName(%q) = %q, %v; want %q", c.topic, got, ok, c.want)
		}
	}
	if got, ok := connect.SnowflakeTableName(".*"); ok {
		t.Errorf("\".*\" gives %q: the connector rejects it", got)
	}
}

func TestRedactHidesSecretsInKeysAndURLs(t *testing.T) {
	cfg := map[string]string{
		"value.converter.basic.auth.user.info":               "SRKEY:SRSECRET",
		"key.converter.schema.registry.basic.auth.user.info": "SRKEY:SRSECRET",
		"connection.url":                      "jdbc:postgresql://db.internal:5432/analytics?user=dw&password=PGSECRET&sslmode=require",
		"connection.uri":                      "mongodb://dw:MONGOSECRET@mongo:27017/app",
		"mysql.url":                           "jdbc:mysql://dw:MYSQL/SECRET@mysql/app",
		"sqlserver.url":                       "jdbc:sqlserver://sql:1433;databaseName=app;user=dw;password=MSSECRET",
		"oracle.url":                          "jdbc:oracle:thin:dw/ORASECRET@ora:1521/svc",
		"ssl.keystore.key":                    "-----BEGIN PRIVATE KEY-----KEYSECRET",
		"ssl.keystore.password":               "KSSECRET",
		"ssl.truststore.password":             "TSSECRET",
		"ssl.truststore.certificates":         "TSCERTSECRET",
		"snowflake.private.key":               "MIIEvQSECRET",
		"sasl.jaas.config":                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"JAASSECRET\";",
		"gcs.credentials.json":                "{CREDSECRET}",
		"bearer.token":                        "TOKENSECRET",
		"aws.secret.access.key":               "AWSSECRET",
		"ssl.keystore.location":               "/etc/ks.jks",
		"key.converter":                       "io.confluent.connect.avro.AvroConverter",
		"value.converter.schema.registry.url": "https://psrc.example.com",
		"topics":                              "a,b",
	}
	got := connect.Redact(cfg)
	for k, v := range got {
		if strings.Contains(v, "SECRET") {
			t.Errorf("%s = %q leaks a secret", k, v)
		}
	}
	keep := map[string]string{
		"ssl.keystore.location":               "/etc/ks.jks",
		"key.converter":                       "io.confluent.connect.avro.AvroConverter",
		"value.converter.schema.registry.url": "https://psrc.example.com",
		"topics":                              "a,b",
		"connection.url":                      "jdbc:postgresql://db.internal:5432/analytics?user=dw&password=[redacted]&sslmode=require",
		"connection.uri":                      "mongodb://[redacted]@mongo:27017/app",
		"sqlserver.url":                       "jdbc:sqlserver://sql:1433;databaseName=app;user=dw;password=[redacted]",
		"oracle.url":                          "jdbc:oracle:thin:[redacted]@ora:1521/svc",
	}
	for k, want := range keep {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

func TestListAndStatusNeverReturnConverterSecrets(t *testing.T) {
	c := snowflakeSink
	c.Config = map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": "orders",
		"value.converter.basic.auth.user.info": "SRKEY:SRSECRET",
		"connection.url":                       "jdbc:postgresql://pg:5432/dw?password=PGSECRET"}
	srv := connecttest.New(t, c)
	cl := client(t, srv.URL, nil)
	cs, err := cl.ListConnectors(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	one, err := cl.Get(context.Background(), c.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, conn := range []connect.Connector{cs[0], one} {
		for k, v := range conn.Config {
			if strings.Contains(v, "SECRET") {
				t.Errorf("%s = %q leaks a secret", k, v)
			}
		}
	}
}
