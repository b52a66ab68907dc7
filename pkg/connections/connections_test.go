package connections

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	os.Exit(m.Run())
}

func lazyStore(t *testing.T) *store.Lazy {
	l := store.NewLazy(filepath.Join(t.TempDir(), "dw.db"), store.Options{})
	t.Cleanup(func() { l.Close() })
	return l
}

func byName(r Report) map[Backend]Status {
	m := map[Backend]Status{}
	for _, b := range r.Backends {
		m[b.Backend] = b
	}
	return m
}

// restPeer answers the documented health/list endpoints of Connect, Confluent Cloud, Airflow and
// dbt Cloud, and only with the right credentials.
func restPeer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { // Kafka Connect root
		w.Write([]byte(`{"version":"3.9.0","commit":"abc","kafka_cluster_id":"lkc-1"}`))
	})
	mux.HandleFunc("GET /sql/v1/organizations/org-1/environments/env-1/statements", func(w http.ResponseWriter, r *http.Request) {
		if u, p, _ := r.BasicAuth(); u != "fk" || p != "fs" {
			w.WriteHeader(401)
			w.Write([]byte(`{"errors":[{"status":"401","detail":"Unauthorized"}]}`))
			return
		}
		w.Write([]byte(`{"api_version":"sql/v1","kind":"StatementList","metadata":{"next":""},"data":[]}`))
	})
	mux.HandleFunc("GET /tableflow/v1/tableflow-topics", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("spec.kafka_cluster") != "lkc-1" {
			w.WriteHeader(400)
			return
		}
		w.Write([]byte(`{"api_version":"tableflow/v1","kind":"TableflowTopicList","metadata":{},"data":[]}`))
	})
	mux.HandleFunc("GET /api/v2/monitor/health", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer af-token" {
			w.WriteHeader(401)
			w.Write([]byte(`{"detail":"Not authenticated"}`))
			return
		}
		w.Write([]byte(`{"metadatabase":{"status":"healthy"},"scheduler":{"status":"healthy"}}`))
	})
	mux.HandleFunc("GET /api/v2/accounts/42/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Token dbt-token" {
			w.WriteHeader(401)
			w.Write([]byte(`{"status":{"code":401,"is_success":false,"user_message":"Invalid token"}}`))
			return
		}
		w.Write([]byte(`{"status":{"code":200,"is_success":true},"data":{"id":42}}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestEveryConfiguredBackendIsProbedForReal(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	reg := srfake.New()
	defer reg.Close()
	peer := restPeer(t)
	whPath := filepath.Join(t.TempDir(), "wh.db")
	db, _ := sql.Open("sqlite3", whPath)
	db.Exec(`CREATE TABLE t(x)`)
	db.Close()
	manifest := filepath.Join(t.TempDir(), "manifest.json")
	os.WriteFile(manifest, []byte(`{}`), 0o600)

	cfg := &config.Config{
		Source:         "test",
		Kafka:          &config.Kafka{BootstrapServers: cluster.ListenAddrs(), ClientID: "t", Timeout: 5 * time.Second},
		SchemaRegistry: &config.SchemaRegistry{URL: reg.URL(), Timeout: 5 * time.Second},
		Connect:        &config.Connect{URL: peer.URL, Timeout: 5 * time.Second},
		ConfluentCloud: &config.ConfluentCloud{APIURL: peer.URL, APIKey: "k", APISecret: "s", FlinkURL: peer.URL, FlinkAPIKey: "fk",
			FlinkAPISecret: "fs", OrganizationID: "org-1", EnvironmentID: "env-1", KafkaClusterID: "lkc-1", Timeout: 5 * time.Second},
		Warehouse: &config.Warehouse{Engine: "sqlite", DSN: whPath, StatementTimeout: 5 * time.Second},
		DBT:       &config.DBT{ManifestPath: manifest, Cloud: &config.DBTCloud{URL: peer.URL, AccountID: 42, Token: "dbt-token", Timeout: 5 * time.Second}},
		Airflow:   &config.Airflow{URL: peer.URL, APIVersion: "v2", Token: "af-token", Timeout: 5 * time.Second},
		Slack:     &config.Slack{WebhookURL: "https://hooks.slack.com/services/x"},
	}
	all := []Backend{Kafka, SchemaRegistry, Connect, Flink, Tableflow, Warehouse, DBTManifest, DBTCloud, Airflow, Slack, CatalogFiles}
	r := Check(context.Background(), "dw-test", cfg, lazyStore(t), all)
	if !r.Store.OK || r.Store.SchemaVersion != store.LatestSchemaVersion() {
		t.Errorf("store = %+v", r.Store)
	}
	got := byName(r)
	for _, b := range []Backend{Kafka, SchemaRegistry, Connect, Flink, Tableflow, Warehouse, DBTManifest, DBTCloud, Airflow} {
		s := got[b]
		if !s.Configured || s.Reachable == nil || !*s.Reachable || s.Error != "" {
			t.Errorf("%s: %+v", b, s)
		}
	}
	if s := got[Slack]; !s.Configured || s.Reachable != nil || !strings.Contains(s.Note, "would post a message") {
		t.Errorf("slack: %+v", s)
	}
	if s := got[CatalogFiles]; s.Configured || s.ConfigKey != "catalog.files" {
		t.Errorf("catalog files: %+v", s)
	}
	if !r.Healthy {
		t.Error("report should be healthy")
	}
}

func TestUnconfiguredBackendsNameTheirConfigKey(t *testing.T) {
	cfg := &config.Config{Source: "test"}
	r := Check(context.Background(), "dw-test", cfg, lazyStore(t), []Backend{Kafka, SchemaRegistry, Flink, Warehouse, DBTCloud})
	want := map[Backend]string{Kafka: "kafka", SchemaRegistry: "schema_registry", Flink: "confluent_cloud.flink_url", Warehouse: "warehouse", DBTCloud: "dbt.cloud"}
	for b, key := range want {
		s := byName(r)[b]
		if s.Configured || s.Reachable != nil || s.ConfigKey != key {
			t.Errorf("%s: %+v, want key %s", b, s, key)
		}
	}
	if !r.Healthy {
		t.Error("unconfigured backends are not failures")
	}
}

func TestFailingBackendsReportTheErrorWithinTheirTimeout(t *testing.T) {
	peer := restPeer(t)
	// A port that accepts connections and never answers.
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer silent.Close()
	cfg := &config.Config{
		Source:         "test",
		Kafka:          &config.Kafka{BootstrapServers: []string{"127.0.0.1:1"}, Timeout: 300 * time.Millisecond},
		SchemaRegistry: &config.SchemaRegistry{URL: silent.URL, Timeout: 200 * time.Millisecond},
		Connect:        &config.Connect{URL: "http://127.0.0.1:1", Timeout: time.Second},
		ConfluentCloud: &config.ConfluentCloud{APIURL: peer.URL, APIKey: "k", APISecret: "s", FlinkURL: peer.URL, FlinkAPIKey: "wrong",
			FlinkAPISecret: "wrong", OrganizationID: "org-1", EnvironmentID: "env-1", Timeout: time.Second},
		Warehouse: &config.Warehouse{Engine: "sqlite", DSN: filepath.Join(t.TempDir(), "missing.db")},
		Airflow:   &config.Airflow{URL: peer.URL, APIVersion: "v2", Token: "nope", Timeout: time.Second},
		DBT:       &config.DBT{Cloud: &config.DBTCloud{URL: peer.URL, AccountID: 42, Token: "bad", Timeout: time.Second}},
	}
	start := time.Now()
	r := Check(context.Background(), "dw-test", cfg, lazyStore(t), []Backend{Kafka, SchemaRegistry, Connect, Flink, Warehouse, Airflow, DBTCloud})
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Fatalf("probes hung for %v", elapsed) // a generous bound: the point is that nothing hangs
	}
	want := map[Backend]string{
		Kafka:          "kafka.bootstrap_servers",
		SchemaRegistry: "no answer",
		Connect:        "check connect.url",
		Flink:          "Unauthorized",
		Warehouse:      "missing.db",
		Airflow:        "Not authenticated",
		DBTCloud:       "Invalid token",
	}
	got := byName(r)
	for b, w := range want {
		s := got[b]
		if s.Reachable == nil || *s.Reachable || !strings.Contains(s.Error, w) {
			t.Errorf("%s: %+v, want error containing %q", b, s, w)
		}
	}
	if r.Healthy {
		t.Error("report must be unhealthy")
	}
}

func TestEndpointsNeverShowPasswords(t *testing.T) {
	for _, dsn := range []string{"postgres://bob:hunter2@db:5432/x", "bob:hunter2@org-acct/DB/SCHEMA?warehouse=W"} {
		if got := redactDSN(dsn); strings.Contains(got, "hunter2") || !strings.Contains(got, "bob") {
			t.Errorf("redactDSN(%q) = %q", dsn, got)
		}
	}
}

// An endpoint that answers 200 with something other than the documented answer — random bytes,
// a huge body, the wrong JSON, a health answer naming a sick component — is not reported
// reachable, and the error says it answered but not as the backend does.
func TestProbesPassOnlyOnTheDocumentedShape(t *testing.T) {
	garbage := []byte{0x8f, 0x00, 0x13, 'x', 0xff, '{', 0x7f}
	answers := map[string]func(w http.ResponseWriter){
		"random bytes": func(w http.ResponseWriter) { w.Write(garbage) },
		"huge body": func(w http.ResponseWriter) {
			chunk := []byte(strings.Repeat(" ", 64<<10))
			for i := 0; i < 300<<20/len(chunk); i++ { // 300 MB offered; the probe stops at its cap
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		},
		"another JSON object": func(w http.ResponseWriter) { w.Write([]byte(`{"status":"ok","data":{"id":42}}`)) },
		"a JSON array":        func(w http.ResponseWriter) { w.Write([]byte(`[]`)) },
		"an HTML page":        func(w http.ResponseWriter) { w.Write([]byte(`<html><body>Sign in</body></html>`)) },
	}
	for what, answer := range answers {
		t.Run(what, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				answer(w)
			}))
			defer srv.Close()
			cfg := &config.Config{
				Source:  "test",
				Connect: &config.Connect{URL: srv.URL, Timeout: 5 * time.Second},
				ConfluentCloud: &config.ConfluentCloud{APIURL: srv.URL, APIKey: "k", APISecret: "s", FlinkURL: srv.URL,
					OrganizationID: "org-1", EnvironmentID: "env-1", KafkaClusterID: "lkc-1", Timeout: 5 * time.Second},
				DBT:     &config.DBT{Cloud: &config.DBTCloud{URL: srv.URL, AccountID: 42, Token: "t", Timeout: 5 * time.Second}},
				Airflow: &config.Airflow{URL: srv.URL, APIVersion: "v2", Token: "t", Timeout: 5 * time.Second},
			}
			r := Check(context.Background(), "dw-test", cfg, lazyStore(t), []Backend{Connect, Flink, Tableflow, DBTCloud, Airflow})
			for _, s := range r.Backends {
				if s.Reachable == nil || *s.Reachable || s.Error == "" {
					t.Errorf("%s: %+v, want a failed probe", s.Backend, s)
				}
				if len(s.Error) > 400 || strings.ContainsAny(s.Error, "\x00\x7f") || strings.Contains(s.Error, "Sign in") {
					t.Errorf("%s: the error should describe the answer, not quote it: %q", s.Backend, s.Error)
				}
			}
			if r.Healthy {
				t.Error("report must be unhealthy")
			}
		})
	}
}

func TestAirflowHealthNamesTheSickComponent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"metadatabase":{"status":"healthy"},"scheduler":{"status":"unhealthy","latest_scheduler_heartbeat":null}}`))
	}))
	defer srv.Close()
	cfg := &config.Config{Source: "test", Airflow: &config.Airflow{URL: srv.URL, APIVersion: "v2", Token: "t", Timeout: 5 * time.Second}}
	s := byName(Check(context.Background(), "dw-test", cfg, lazyStore(t), []Backend{Airflow}))[Airflow]
	if s.Reachable == nil || *s.Reachable || !strings.Contains(s.Error, `scheduler is "unhealthy"`) {
		t.Errorf("airflow: %+v", s)
	}
}

// pkg/connections does not link the Snowflake driver: an agent built without it says so.
func TestSnowflakeWarehouseWithoutTheDriverSaysSo(t *testing.T) {
	cfg := &config.Config{Warehouse: &config.Warehouse{Engine: "snowflake", DSN: "u:p@acct/db/s", StatementTimeout: time.Second}}
	s := Check(context.Background(), "dw-test", cfg, lazyStore(t), []Backend{Warehouse}).Backends[0]
	if !s.Configured || s.Reachable == nil || *s.Reachable || !strings.Contains(s.Error, "built without the Snowflake driver") {
		t.Fatalf("snowflake without its driver = %+v", s)
	}
}

// The store's line names its engine and version on both engines, and a PostgreSQL URL is shown
// without its password, reachable or not.
func TestTheStoreReportsItsEngineAndVersionWithoutThePassword(t *testing.T) {
	cfg := &config.Config{}
	storetest.Engines(t, func(t *testing.T, d store.Dialect) {
		path, opts := storetest.LocationOn(t, d)
		if d == store.PostgreSQL {
			opts.URL = strings.Replace(opts.URL, "postgres@", "postgres:pw-never-shown-42@", 1) // trust auth ignores it
		}
		l := store.NewLazy(path, opts)
		t.Cleanup(func() { l.Close() })
		r := Check(context.Background(), "dw-test", cfg, l, nil)
		if !r.Store.OK || r.Store.Engine != d.String() || r.Store.EngineVersion == "" {
			t.Fatalf("store = %+v", r.Store)
		}
		if strings.Contains(r.Store.Path, "pw-never-shown-42") {
			t.Fatalf("the password is shown: %s", r.Store.Path)
		}
	})
	down := store.NewLazy(filepath.Join(t.TempDir(), "dw.db"), store.Options{URL: "postgres://dw:pw-never-shown-42@127.0.0.1:1/dw?connect_timeout=2"})
	r := Check(context.Background(), "dw-test", cfg, down, nil)
	if r.Store.OK || r.Store.Engine != "postgresql" || strings.Contains(r.Store.Path+r.Store.Error, "pw-never-shown-42") || r.Store.Error == "" {
		t.Fatalf("unreachable store = %+v", r.Store)
	}
}
