package confluent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
)

const rollupSQL = "INSERT INTO `usage-hourly` SELECT account_id, window_start AS `hour`, SUM(response_bytes) AS egress_bytes " +
	"FROM TABLE(TUMBLE(TABLE `api-usage`, DESCRIPTOR($rowtime), INTERVAL '1' HOUR)) GROUP BY account_id, window_start, window_end"

func statements(n int) []confluenttest.Statement {
	out := []confluenttest.Statement{{
		Name: "usage-hourly-rollup", SQL: rollupSQL, Phase: "RUNNING", ComputePoolID: confluenttest.Pool,
		CreatedAt:  time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC),
		Properties: map[string]string{"sql.current-catalog": confluenttest.Env, "sql.current-database": confluenttest.Cluster},
		Labels:     map[string]string{"team": "billing"}, LatestOffsets: map[string]string{"api-usage": "partition:0,offset:23;partition:1,offset:65"},
	}}
	for i := range n {
		out = append(out, confluenttest.Statement{Name: fmt.Sprintf("adhoc-%03d", i), SQL: "SELECT 1", Phase: "COMPLETED", ComputePoolID: "lfcp-other",
			CreatedAt: time.Date(2026, 11, 3, 0, i, 0, 0, time.UTC), SQLKind: "SELECT"})
	}
	return out
}

func client(t *testing.T, srv *confluenttest.Server) *confluent.Client {
	t.Helper()
	c, err := confluent.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestListStatementsFollowsPageTokens(t *testing.T) {
	srv := confluenttest.New(t, statements(250), nil)
	all, err := client(t, srv).ListStatements(context.Background(), confluent.StatementFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 251 {
		t.Fatalf("got %d statements over pages, want 251", len(all))
	}
	if n := srv.Count("GET /sql/v1/"); n != 3 {
		t.Errorf("%d requests, want 3 pages of 100", n)
	}
	seen := map[string]bool{}
	for _, s := range all {
		if seen[s.Name] {
			t.Fatalf("statement %s listed twice", s.Name)
		}
		seen[s.Name] = true
	}
	var rollup confluent.Statement
	for _, s := range all {
		if s.Name == "usage-hourly-rollup" {
			rollup = s
		}
	}
	if rollup.SQL != rollupSQL || rollup.Phase != "RUNNING" || rollup.ComputePoolID != confluenttest.Pool ||
		rollup.CreatedAt == nil || !rollup.CreatedAt.Equal(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)) ||
		rollup.Properties["sql.current-database"] != confluenttest.Cluster || rollup.SQLKind != "INSERT_INTO" ||
		rollup.LatestOffsets["api-usage"] == "" || rollup.Labels["team"] != "billing" {
		t.Errorf("rollup = %+v", rollup)
	}
}

func TestListStatementsFiltersByPoolPhaseAndLimit(t *testing.T) {
	srv := confluenttest.New(t, statements(30), nil)
	c := client(t, srv)
	pool, err := c.ListStatements(context.Background(), confluent.StatementFilter{ComputePoolID: confluenttest.Pool})
	if err != nil || len(pool) != 1 || pool[0].Name != "usage-hourly-rollup" {
		t.Fatalf("pool filter = %+v, %v", pool, err)
	}
	if !strings.Contains(srv.Requests[0], "spec.compute_pool_id="+confluenttest.Pool) {
		t.Errorf("pool not sent: %s", srv.Requests[0])
	}
	done, err := c.ListStatements(context.Background(), confluent.StatementFilter{Phase: "completed", Limit: 5})
	if err != nil || len(done) != 5 || done[0].Phase != "COMPLETED" {
		t.Fatalf("phase+limit = %d, %v", len(done), err)
	}
}

func TestGetStatementAndNotFound(t *testing.T) {
	srv := confluenttest.New(t, statements(0), nil)
	c := client(t, srv)
	s, err := c.GetStatement(context.Background(), "usage-hourly-rollup")
	if err != nil || s.SQL != rollupSQL {
		t.Fatalf("get = %+v, %v", s, err)
	}
	_, err = c.GetStatement(context.Background(), "gone")
	if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "Statement 'gone' not found.") {
		t.Fatalf("not found err = %v", err)
	}
}

func TestRetriesOn429And5xxThenSucceeds(t *testing.T) {
	srv := confluenttest.New(t, statements(0), nil)
	srv.Inject = []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}
	all, err := client(t, srv).ListStatements(context.Background(), confluent.StatementFilter{})
	if err != nil || len(all) != 1 {
		t.Fatalf("after retries: %v, %v", all, err)
	}
	if n := srv.Count("GET /sql/v1/"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

func TestPersistent5xxIsAnError(t *testing.T) {
	srv := confluenttest.New(t, statements(0), nil)
	srv.Inject = []int{500, 502, 503, 504}
	_, err := client(t, srv).ListStatements(context.Background(), confluent.StatementFilter{})
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v", err)
	}
}

func TestAuthErrorsAreClear(t *testing.T) {
	srv := confluenttest.New(t, statements(0), []confluenttest.Tableflow{{Topic: "usage-hourly", Phase: "RUNNING"}})
	cfg := srv.Config()
	cfg.FlinkAPISecret = "wrong"
	c, err := confluent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListStatements(context.Background(), confluent.StatementFilter{})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "confluent_cloud") {
		t.Fatalf("401 err = %v", err)
	}
	cfg = srv.Config()
	cfg.KafkaClusterID = "lkc-someone-else"
	c, _ = confluent.New(cfg)
	_, err = c.ListTableflowTopics(context.Background())
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "lack permission") {
		t.Fatalf("403 err = %v", err)
	}
	cfg = srv.Config()
	cfg.EnvironmentID = "env-typo"
	c, _ = confluent.New(cfg)
	_, err = c.ListStatements(context.Background(), confluent.StatementFilter{})
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "environment_id") {
		t.Fatalf("404 err = %v", err)
	}
}

func TestFlinkKeyDefaultsToTheCloudKey(t *testing.T) {
	var user string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ = r.BasicAuth()
		_, _ = w.Write([]byte(`{"api_version":"sql/v1","kind":"StatementList","metadata":{},"data":[]}`))
	}))
	defer srv.Close()
	c, err := confluent.New(confluenttestConfig{srv.URL}.cfg())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListStatements(context.Background(), confluent.StatementFilter{}); err != nil {
		t.Fatal(err)
	}
	if user != "CLOUDKEY" {
		t.Fatalf("flink basic auth user = %q, want the cloud api_key", user)
	}
}

func TestListTableflowTopicsWithFormatsAndCatalogSync(t *testing.T) {
	var tfs []confluenttest.Tableflow
	tfs = append(tfs, confluenttest.Tableflow{Topic: "usage-hourly", Phase: "RUNNING", TableFormats: []string{"ICEBERG", "DELTA"},
		CatalogSync: []map[string]string{{"catalog_integration_id": "tci-snow", "catalog_type": "SNOWFLAKE", "sync_status": "SYNCED"}}})
	tfs = append(tfs, confluenttest.Tableflow{Topic: "orders", Phase: "FAILED", Suspended: true,
		CatalogSync: []map[string]string{{"catalog_integration_id": "tci-glue", "catalog_type": "AWS_GLUE", "sync_status": "FAILED", "error_message": "AccessDenied"}},
		Failing:     []map[string]string{{"format": "ICEBERG", "error_message": "record could not be materialized"}}})
	for i := range 12 {
		tfs = append(tfs, confluenttest.Tableflow{Topic: fmt.Sprintf("t-%02d", i), Phase: "RUNNING"})
	}
	tfs = append(tfs, confluenttest.Tableflow{Topic: "no-formats", Phase: "RUNNING", TableFormats: []string{}})
	srv := confluenttest.New(t, nil, tfs)
	got, err := client(t, srv).ListTableflowTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(tfs) {
		t.Fatalf("got %d topics, want %d", len(got), len(tfs))
	}
	by := map[string]confluent.TableflowTopic{}
	for _, g := range got {
		by[g.Topic] = g
	}
	u := by["usage-hourly"]
	if !u.Healthy || len(u.TableFormats) != 2 || u.CatalogSync[0].SyncStatus != "SYNCED" || u.KafkaClusterID != confluenttest.Cluster || u.StorageKind != "Managed" {
		t.Errorf("usage-hourly = %+v", u)
	}
	o := by["orders"]
	if o.Healthy || !o.Suspended || o.CatalogSync[0].ErrorMessage != "AccessDenied" || o.FailingFormats[0].Format != "ICEBERG" {
		t.Errorf("orders = %+v", o)
	}
	if f := by["t-00"].TableFormats; len(f) != 1 || f[0] != "ICEBERG" {
		t.Errorf("table formats = %v, want the fake's [ICEBERG]", f)
	}
	if f := by["no-formats"].TableFormats; f == nil || len(f) != 0 {
		t.Errorf("empty table_formats reported as %v, want [] as the API answered", f)
	}
	for _, r := range srv.Requests {
		if !strings.Contains(r, "environment="+confluenttest.Env) || !strings.Contains(r, "spec.kafka_cluster="+confluenttest.Cluster) {
			t.Errorf("request without scope: %s", r)
		}
	}
}

func TestNotConfiguredNamesTheKeys(t *testing.T) {
	if _, err := confluent.New(nil); err == nil || !strings.Contains(err.Error(), "confluent_cloud") {
		t.Fatalf("nil config err = %v", err)
	}
	c, err := confluent.New(confluenttestConfig{"https://api.confluent.cloud"}.cfgNoFlink())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListStatements(context.Background(), confluent.StatementFilter{}); err == nil || !strings.Contains(err.Error(), "confluent_cloud.flink_url") {
		t.Fatalf("no flink err = %v", err)
	}
	if _, err := c.ListTableflowTopics(context.Background()); err == nil || !strings.Contains(err.Error(), "kafka_cluster_id") {
		t.Fatalf("no cluster err = %v", err)
	}
}

type confluenttestConfig struct{ url string }

func (c confluenttestConfig) cfg() *config.ConfluentCloud {
	return &config.ConfluentCloud{APIURL: c.url, APIKey: "CLOUDKEY", APISecret: "cloud-secret", FlinkURL: c.url,
		OrganizationID: "org", EnvironmentID: "env", Timeout: time.Second}
}

func (c confluenttestConfig) cfgNoFlink() *config.ConfluentCloud {
	return &config.ConfluentCloud{APIURL: c.url, APIKey: "CLOUDKEY", APISecret: "cloud-secret", EnvironmentID: "env", Timeout: time.Second}
}

func TestStatementsNeverReturnCredentials(t *testing.T) {
	sts := []confluenttest.Statement{
		{Name: "model", ComputePoolID: confluenttest.Pool, Phase: "COMPLETED", SQL: "-- embeddings\n/* v2 */ CREATE MODEL `embed` INPUT (text STRING) OUTPUT (v ARRAY<FLOAT>) " +
			"WITH ('provider' = 'openai', 'openai.api_key' = 'sk-MODELSECRET', 'task' = 'embedding')"},
		{Name: "conn", ComputePoolID: confluenttest.Pool, Phase: "COMPLETED", SQL: "create or replace connection openai_conn WITH ('type' = 'openai', 'api-key' = 'CONNSECRET')"},
		{Name: "alter", ComputePoolID: confluenttest.Pool, Phase: "COMPLETED", SQL: "ALTER MODEL embed SET ('openai.api_key' = 'ALTERSECRET')"},
		{Name: "kind-only", ComputePoolID: confluenttest.Pool, Phase: "COMPLETED", SQLKind: "CREATE_CONNECTION", SQL: "EXECUTE something 'KINDSECRET'"},
		{Name: "rollup", ComputePoolID: confluenttest.Pool, Phase: "RUNNING", SQL: rollupSQL, Properties: map[string]string{
			"sql.current-catalog": "env", "sql.secrets.openaikey": "PROPSECRET", "sql.secrets.my_token": "PROPSECRET2"}},
		{Name: "table-named-model", ComputePoolID: confluenttest.Pool, Phase: "RUNNING", SQL: "CREATE TABLE model (a INT)"},
	}
	srv := confluenttest.New(t, sts, nil)
	c := client(t, srv)
	all, err := c.ListStatements(context.Background(), confluent.StatementFilter{ComputePoolID: confluenttest.Pool})
	if err != nil {
		t.Fatal(err)
	}
	one, err := c.GetStatement(context.Background(), "model")
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]confluent.Statement{}
	for _, s := range append(all, one) {
		if strings.Contains(fmt.Sprint(s), "SECRET") {
			t.Errorf("statement %s leaks a secret: %+v", s.Name, s)
		}
		by[s.Name] = s
	}
	for _, n := range []string{"model", "conn", "alter", "kind-only"} {
		if by[n].SQL != "" || by[n].SQLWithheld == "" {
			t.Errorf("%s: sql %q withheld %q", n, by[n].SQL, by[n].SQLWithheld)
		}
	}
	if by["rollup"].SQL != rollupSQL || by["rollup"].Properties["sql.current-catalog"] != "env" || by["rollup"].Properties["sql.secrets.openaikey"] != "[redacted]" {
		t.Errorf("rollup = %+v", by["rollup"])
	}
	if by["table-named-model"].SQL == "" {
		t.Error("a table named model was withheld")
	}
}
