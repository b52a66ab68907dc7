// Package connections answers "what does this agent talk to, and does it answer?": for each backend,
// whether it is configured (and under which key), whether it is reachable, how fast, and the error
// if not; plus the shared store's engine and version, its location (a PostgreSQL URL without its
// password) and schema version. Probes run concurrently, each bounded by its section's timeout, so
// a dead backend costs one timeout, not a hang.
package connections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// Backend names one external system.
type Backend string

// The backends Data Workers can use.
const (
	Kafka          Backend = "kafka"
	SchemaRegistry Backend = "schema_registry"
	Connect        Backend = "connect"
	Flink          Backend = "confluent_flink"
	Tableflow      Backend = "confluent_tableflow"
	Warehouse      Backend = "warehouse"
	DBTManifest    Backend = "dbt_manifest"
	DBTCloud       Backend = "dbt_cloud"
	Airflow        Backend = "airflow"
	Slack          Backend = "slack"
	CatalogFiles   Backend = "catalog_files"
)

// Status is one backend's state.
type Status struct {
	Backend    Backend `json:"backend"`
	ConfigKey  string  `json:"config_key" jsonschema:"The config section that configures this backend"`
	Configured bool    `json:"configured"`
	// Reachable is null when not configured or when the backend cannot be probed without side effects.
	Reachable *bool   `json:"reachable"`
	LatencyMS float64 `json:"latency_ms,omitempty"`
	Endpoint  string  `json:"endpoint,omitempty" jsonschema:"Where it points, without credentials"`
	Error     string  `json:"error,omitempty"`
	Note      string  `json:"note,omitempty"`
}

// StoreStatus is the shared store's state.
type StoreStatus struct {
	// Path is the SQLite file, or the PostgreSQL URL without its password.
	Path          string `json:"path"`
	Engine        string `json:"engine" jsonschema:"sqlite or postgresql"`
	EngineVersion string `json:"engine_version,omitempty"`
	OK            bool   `json:"ok"`
	SchemaVersion int    `json:"schema_version"`
	LatestVersion int    `json:"latest_version" jsonschema:"The schema version this binary migrates to"`
	Error         string `json:"error,omitempty"`
}

// Report is the answer of check_connections.
type Report struct {
	Agent    string      `json:"agent"`
	Config   string      `json:"config" jsonschema:"Where the configuration came from"`
	Store    StoreStatus `json:"store"`
	Backends []Status    `json:"backends"`
	// Healthy is true when the store is fine and every configured, probeable backend answered.
	Healthy bool `json:"healthy"`
}

// Check probes the store and the given backends concurrently. Backends whose clients are heavy
// (the lake's Iceberg catalog) are probed by the probes the agent's wiring passes in, so only the
// agents that use them link them.
func Check(ctx context.Context, agent string, cfg *config.Config, st *store.Lazy, backends []Backend, probes ...Probe) Report {
	r := Report{Agent: agent, Config: cfg.Source, Backends: make([]Status, len(backends))}
	var wg sync.WaitGroup
	for i, b := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Backends[i] = probe(ctx, cfg, b, probes)
		}()
	}
	r.Store = checkStore(ctx, st)
	wg.Wait()
	r.Healthy = r.Store.OK
	for _, b := range r.Backends {
		if b.Configured && b.Reachable != nil && !*b.Reachable {
			r.Healthy = false
		}
	}
	return r
}

func checkStore(ctx context.Context, l *store.Lazy) StoreStatus {
	s := StoreStatus{Path: l.Where(), Engine: l.Engine().String(), LatestVersion: store.LatestSchemaVersion()}
	st, err := l.Get(ctx)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	if v, err := st.ServerVersion(ctx); err == nil {
		s.EngineVersion = v
	}
	v, err := st.SchemaVersion(ctx)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.SchemaVersion, s.OK = v, true
	return s
}

// probe runs one backend's check. An unconfigured backend says which key would configure it.
func probe(ctx context.Context, cfg *config.Config, b Backend, probes []Probe) Status {
	s := Status{Backend: b, ConfigKey: configKey(b)}
	var (
		endpoint string
		timeout  time.Duration
		check    func(context.Context) error
	)
	switch b {
	case Kafka:
		k := cfg.Kafka
		if k == nil {
			return s
		}
		endpoint, timeout = fmt.Sprint(k.BootstrapServers), k.Timeout
		check = func(ctx context.Context) error { return kafka.Ping(ctx, k) }
	case SchemaRegistry:
		r := cfg.SchemaRegistry
		if r == nil {
			return s
		}
		endpoint, timeout = r.URL, r.Timeout
		check = func(ctx context.Context) error {
			c, err := registry.New(r)
			if err != nil {
				return err
			}
			return c.Ping(ctx)
		}
	case Connect:
		c := cfg.Connect
		if c == nil {
			return s
		}
		endpoint, timeout = c.URL, c.Timeout
		check = httpGet("kafka connect", c.URL, "/", "connect", "connect.url", httpapi.Basic(c.Username, c.Password), c.Timeout, nil, connectRoot)
	case Flink:
		cc := cfg.ConfluentCloud
		if cc == nil || cc.FlinkURL == "" {
			s.ConfigKey = "confluent_cloud.flink_url"
			return s
		}
		endpoint, timeout = cc.FlinkURL, cc.Timeout
		path := "/sql/v1/organizations/" + url.PathEscape(cc.OrganizationID) + "/environments/" + url.PathEscape(cc.EnvironmentID) + "/statements"
		check = httpGet("confluent flink", cc.FlinkURL, path, "confluent_cloud", "confluent_cloud.flink_url", httpapi.Basic(cc.FlinkAPIKey, cc.FlinkAPISecret), cc.Timeout,
			url.Values{"page_size": {"1"}}, confluentList("sql/v1", "StatementList"))
	case Tableflow:
		cc := cfg.ConfluentCloud
		if cc == nil || cc.KafkaClusterID == "" {
			s.ConfigKey = "confluent_cloud.kafka_cluster_id"
			return s
		}
		endpoint, timeout = cc.APIURL, cc.Timeout
		check = httpGet("confluent tableflow", cc.APIURL, "/tableflow/v1/tableflow-topics", "confluent_cloud", "confluent_cloud.api_url", httpapi.Basic(cc.APIKey, cc.APISecret), cc.Timeout,
			url.Values{"environment": {cc.EnvironmentID}, "spec.kafka_cluster": {cc.KafkaClusterID}, "page_size": {"1"}}, confluentList("tableflow/v1", "TableflowTopicList"))
	case Warehouse:
		w := cfg.Warehouse
		if w == nil {
			return s
		}
		endpoint, timeout = w.Engine+": "+redactDSN(w.DSN), w.StatementTimeout
		if w.Engine == "sqlite" && strings.HasPrefix(cfg.Source, "embedded:") && !fileExists(w.DSN) {
			// The embedded default's local warehouse exists once data is loaded into it: on a new
			// machine that is not a fault, and nothing can be probed yet.
			s.Configured, s.Endpoint = true, endpoint
			s.Note = "the default local warehouse has no file yet at " + w.DSN + ": load data into it, or set warehouse in your config"
			return s
		}
		check = func(ctx context.Context) error { return warehouse.Ping(ctx, w) }
	case DBTManifest:
		if cfg.DBT == nil || cfg.DBT.ManifestPath == "" {
			s.ConfigKey = "dbt.manifest_path"
			return s
		}
		p := cfg.DBT.ManifestPath
		endpoint, timeout = p, time.Second
		check = func(context.Context) error { return statFile(p) }
	case DBTCloud:
		if cfg.DBT == nil || cfg.DBT.Cloud == nil {
			s.ConfigKey = "dbt.cloud"
			return s
		}
		dc := cfg.DBT.Cloud
		endpoint, timeout = dc.URL, dc.Timeout
		check = httpGet("dbt cloud", dc.URL, "/api/v2/accounts/"+strconv.FormatInt(dc.AccountID, 10)+"/", "dbt.cloud", "dbt.cloud.url", httpapi.TokenHeader(dc.Token), dc.Timeout, nil, dbtAccount(dc.AccountID))
	case Airflow:
		a := cfg.Airflow
		if a == nil {
			return s
		}
		endpoint, timeout = a.URL, a.Timeout
		auth := httpapi.Basic(a.Username, a.Password)
		if a.Token != "" {
			auth = httpapi.Bearer(a.Token)
		}
		path := "/api/v1/health"
		if a.APIVersion == "v2" {
			path = "/api/v2/monitor/health"
		}
		check = httpGet("airflow", a.URL, path, "airflow", "airflow.url", auth, a.Timeout, nil, airflowHealth)
	case Slack:
		if cfg.Slack == nil {
			return s
		}
		s.Configured = true
		s.Endpoint = "hooks.slack.com (incoming webhook)"
		s.Note = "not probed: an incoming webhook has no read endpoint, and a probe would post a message"
		return s
	case CatalogFiles:
		files := cfg.Catalog.Files
		if len(files) == 0 {
			s.ConfigKey = "catalog.files"
			return s
		}
		endpoint, timeout = fmt.Sprint(files), time.Second
		check = func(context.Context) error {
			for _, f := range files {
				if err := statFile(f); err != nil {
					return err
				}
			}
			return nil
		}
	default:
		spec, known := monitoringProbe(cfg, b)
		if !known {
			spec, known = linkedProbe(cfg, b, probes)
		}
		if !known {
			s.Error = "no probe for this backend is linked into this agent"
			return s
		}
		s.ConfigKey = spec.Key
		if spec.Check == nil {
			return s
		}
		endpoint, timeout, check = spec.Endpoint, spec.Timeout, spec.Check
	}
	s.Configured, s.Endpoint = true, endpoint
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := check(pctx)
	s.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	ok := err == nil
	s.Reachable = &ok
	if err != nil {
		s.Error = err.Error()
	}
	return s
}

func configKey(b Backend) string {
	switch b {
	case Flink, Tableflow:
		return "confluent_cloud"
	case DBTManifest, DBTCloud:
		return "dbt"
	case CatalogFiles:
		return "catalog.files"
	}
	return string(b)
}

// maxProbeAnswer bounds a probe's answer: every documented health or list answer is far smaller.
const maxProbeAnswer = 1 << 20

// httpGet probes with one GET and passes only when the answer has the documented shape: a proxy,
// a login page or any endpoint answering 200 with something else is not the backend.
func httpGet(name, base, path, configKey, urlKey string, auth httpapi.Auth, timeout time.Duration, q url.Values, shape func(json.RawMessage) error) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := httpapi.New(name, base, configKey, auth, timeout)
		if err != nil {
			return err
		}
		c.URLKey = urlKey
		c.Retries = 0 // a health probe reports the first answer
		c.MaxBody = maxProbeAnswer
		var answer json.RawMessage
		if err := c.Do(ctx, "GET", path, q, nil, &answer); err != nil {
			return err
		}
		if err := shape(answer); err != nil {
			return fmt.Errorf("%s: GET %s answered, but not as %s does: %w (is %s the right endpoint?)", name, path, name, err, urlKey)
		}
		return nil
	}
}

// decodeShape decodes a probe's answer into v, saying only what kind of JSON came instead.
func decodeShape(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return errors.New("empty answer")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errors.New("not the documented JSON object")
	}
	return nil
}

// connectRoot: Kafka Connect's GET / answers {"version", "commit", "kafka_cluster_id"}.
func connectRoot(raw json.RawMessage) error {
	var v struct {
		Version        string `json:"version"`
		KafkaClusterID string `json:"kafka_cluster_id"`
	}
	if err := decodeShape(raw, &v); err != nil {
		return err
	}
	if v.Version == "" || v.KafkaClusterID == "" {
		return errors.New("no version and kafka_cluster_id")
	}
	return nil
}

// confluentList: Confluent Cloud list answers carry their api_version, kind and a data array.
func confluentList(apiVersion, kind string) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		var v struct {
			APIVersion string          `json:"api_version"`
			Kind       string          `json:"kind"`
			Data       json.RawMessage `json:"data"`
		}
		if err := decodeShape(raw, &v); err != nil {
			return err
		}
		if v.APIVersion != apiVersion || v.Kind != kind || len(v.Data) == 0 || v.Data[0] != '[' {
			return fmt.Errorf("not a %s %s with a data array", apiVersion, kind)
		}
		return nil
	}
}

// dbtAccount: dbt Cloud's account answer is {"status": {"is_success": true}, "data": {"id": N}}
// for the configured account.
func dbtAccount(id int64) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		var v struct {
			Status struct {
				IsSuccess *bool `json:"is_success"`
			} `json:"status"`
			Data *struct {
				ID int64 `json:"id"`
			} `json:"data"`
		}
		if err := decodeShape(raw, &v); err != nil {
			return err
		}
		if v.Status.IsSuccess == nil || !*v.Status.IsSuccess || v.Data == nil {
			return errors.New("no successful status and account data")
		}
		if v.Data.ID != id {
			return fmt.Errorf("the account is %d, not dbt.cloud.account_id %d", v.Data.ID, id)
		}
		return nil
	}
}

// airflowHealth: Airflow's health answer names each component's status; the metadatabase must be
// there and every component named must be healthy, or DAG runs will not happen.
func airflowHealth(raw json.RawMessage) error {
	var v map[string]json.RawMessage
	if err := decodeShape(raw, &v); err != nil {
		return err
	}
	if _, ok := v["metadatabase"]; !ok {
		return errors.New("no metadatabase status")
	}
	var unhealthy []string
	for _, name := range slices.Sorted(maps.Keys(v)) {
		var c struct {
			Status *string `json:"status"`
		}
		if json.Unmarshal(v[name], &c) != nil || c.Status == nil {
			if name == "metadatabase" {
				return errors.New("no metadatabase status")
			}
			continue
		}
		if *c.Status != "healthy" {
			unhealthy = append(unhealthy, fmt.Sprintf("%.40s is %.20q", name, *c.Status))
		}
	}
	if len(unhealthy) > 0 {
		return fmt.Errorf("airflow answered, but %s", strings.Join(unhealthy, ", "))
	}
	return nil
}

func statFile(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory, not a file", p)
	}
	return nil
}

// redactDSN keeps a DSN's shape but never its password.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	// gosnowflake style user:password@account/...
	for i := 0; i < len(dsn); i++ {
		if dsn[i] == '@' {
			user := dsn[:i]
			for j := 0; j < len(user); j++ {
				if user[j] == ':' {
					return user[:j] + ":xxxxx" + dsn[i:]
				}
			}
			break
		}
	}
	return dsn
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
