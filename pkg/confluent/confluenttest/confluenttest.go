// Package confluenttest is a loopback fake of the two Confluent Cloud APIs Data Workers reads:
// Flink statements (sql/v1) and Tableflow topics (tableflow/v1), shaped as docs/reference/backends.md says. It pages with
// page_size and an opaque page_token carried in metadata.next, checks API-key basic auth, answers
// the documented {"errors":[{status, detail}]} bodies, and can inject 429/5xx answers.
package confluenttest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
)

// IDs the fake serves.
const (
	Org          = "7b1d4c2e-0000-4000-8000-00000000c0de"
	Env          = "env-usage"
	Cluster      = "lkc-usage"
	Pool         = "lfcp-billing"
	APIKey       = "CCLOUDKEY"
	APISecret    = "ccloud-secret"
	FlinkKey     = "FLINKKEY"
	FlinkSecret  = "flink-secret"
	defaultPages = 10
)

// Statement is a fixture in the documented sql/v1 shape.
type Statement struct {
	Name          string
	SQL           string
	Phase         string
	CreatedAt     time.Time
	ComputePoolID string
	Properties    map[string]string
	Labels        map[string]string
	SQLKind       string
	LatestOffsets map[string]string
	// Detail is status.detail, the statement's error text when it failed.
	Detail string
}

// Tableflow is a Tableflow topic fixture.
type Tableflow struct {
	Topic        string
	Phase        string
	Suspended    bool
	TableFormats []string
	TablePath    string
	CatalogSync  []map[string]string // catalog_integration_id, catalog_type, sync_status, error_message
	Failing      []map[string]string // format, error_message
}

// Server is a running fake.
type Server struct {
	*httptest.Server
	mu         sync.Mutex
	statements []Statement
	tableflow  []Tableflow
	// Inject answers these statuses (in order) before serving normally, e.g. 429 then 503.
	Inject []int
	// Requests records "METHOD path?query" of every request.
	Requests []string
}

// New starts a fake on 127.0.0.1; it stops when the test ends.
func New(t testing.TB, statements []Statement, tableflow []Tableflow) *Server {
	s := Start(statements, tableflow)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake on 127.0.0.1 for callers outside a test (the local demo); call Close.
func Start(statements []Statement, tableflow []Tableflow) *Server {
	s := &Server{statements: statements, tableflow: tableflow}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Statements returns a copy of the statements served now.
func (s *Server) Statements() []Statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Statement(nil), s.statements...)
}

// Tableflows returns a copy of the Tableflow topics served now.
func (s *Server) Tableflows() []Tableflow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Tableflow(nil), s.tableflow...)
}

// Config points a confluent_cloud section at the fake (both APIs on the same listener).
func (s *Server) Config() *config.ConfluentCloud {
	return &config.ConfluentCloud{APIURL: s.URL, APIKey: APIKey, APISecret: APISecret, FlinkURL: s.URL, FlinkAPIKey: FlinkKey,
		FlinkAPISecret: FlinkSecret, OrganizationID: Org, EnvironmentID: Env, KafkaClusterID: Cluster, Timeout: 2 * time.Second}
}

// SetStatements replaces the statements.
func (s *Server) SetStatements(st []Statement) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statements = st
}

// SetTableflow replaces the Tableflow topics.
func (s *Server) SetTableflow(tf []Tableflow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tableflow = tf
}

// Count returns how many requests matched the prefix.
func (s *Server) Count(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.Requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func writeErrors(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{
		"id": "a1b2c3", "status": strconv.Itoa(status), "title": http.StatusText(status), "detail": detail}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Requests = append(s.Requests, r.Method+" "+r.URL.EscapedPath()+"?"+r.URL.RawQuery)
	if len(s.Inject) > 0 {
		code := s.Inject[0]
		s.Inject = s.Inject[1:]
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		writeErrors(w, code, "injected "+http.StatusText(code))
		return
	}
	flinkPrefix := "/sql/v1/organizations/" + Org + "/environments/" + Env + "/statements"
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/sql/v1/"):
		if u, p, ok := r.BasicAuth(); !ok || u != FlinkKey || p != FlinkSecret {
			writeErrors(w, http.StatusUnauthorized, "Unauthorized: invalid API key")
			return
		}
		if path == flinkPrefix {
			s.listStatements(w, r)
			return
		}
		if name, ok := strings.CutPrefix(path, flinkPrefix+"/"); ok && !strings.Contains(name, "/") {
			for _, st := range s.statements {
				if st.Name == name {
					writeJSON(w, statementJSON(st))
					return
				}
			}
			writeErrors(w, http.StatusNotFound, fmt.Sprintf("Statement '%s' not found.", name))
			return
		}
		writeErrors(w, http.StatusNotFound, "The environment or organization does not exist.")
	case strings.HasPrefix(path, "/tableflow/v1/tableflow-topics"):
		if u, p, ok := r.BasicAuth(); !ok || u != APIKey || p != APISecret {
			writeErrors(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		q := r.URL.Query()
		if q.Get("environment") == "" || q.Get("spec.kafka_cluster") == "" {
			writeErrors(w, http.StatusBadRequest, "environment and spec.kafka_cluster are required")
			return
		}
		if q.Get("environment") != Env || q.Get("spec.kafka_cluster") != Cluster {
			writeErrors(w, http.StatusForbidden, "Forbidden Access")
			return
		}
		if path == "/tableflow/v1/tableflow-topics" {
			s.listTableflow(w, r)
			return
		}
		name := strings.TrimPrefix(path, "/tableflow/v1/tableflow-topics/")
		for _, tf := range s.tableflow {
			if tf.Topic == name {
				writeJSON(w, tableflowJSON(tf))
				return
			}
		}
		writeErrors(w, http.StatusNotFound, fmt.Sprintf("Tableflow topic %q not found", name))
	case strings.HasPrefix(path, "/connect/v1/"):
		// Managed connectors: this fake's cluster runs none (use connecttest with a Prefix for some).
		if u, p, ok := r.BasicAuth(); !ok || u != APIKey || p != APISecret {
			writeErrors(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		if path != "/connect/v1/environments/"+Env+"/clusters/"+Cluster+"/connectors" {
			writeErrors(w, http.StatusNotFound, "Not Found")
			return
		}
		if r.URL.Query().Get("expand") != "" {
			writeJSON(w, map[string]any{})
			return
		}
		writeJSON(w, []string{})
	default:
		writeErrors(w, http.StatusNotFound, "not found")
	}
}

// page slices items by page_size and an opaque page_token (base64 of the offset).
func page(r *http.Request, n int) (from, to int, next string, err error) {
	q := r.URL.Query()
	size := defaultPages
	if v := q.Get("page_size"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size <= 0 || size > 100 {
			return 0, 0, "", fmt.Errorf("page_size must be 1–100")
		}
	}
	if tok := q.Get("page_token"); tok != "" {
		b, derr := base64.RawURLEncoding.DecodeString(tok)
		if derr != nil {
			return 0, 0, "", fmt.Errorf("invalid page_token")
		}
		if from, err = strconv.Atoi(string(b)); err != nil {
			return 0, 0, "", fmt.Errorf("invalid page_token")
		}
	}
	to = min(from+size, n)
	if to < n {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("page_token", base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(to))))
		next = "http://" + r.Host + r.URL.Path + "?" + nq.Encode()
	}
	return from, to, next, nil
}

func (s *Server) listStatements(w http.ResponseWriter, r *http.Request) {
	var sel []Statement
	pool := r.URL.Query().Get("spec.compute_pool_id")
	for _, st := range s.statements {
		if pool == "" || st.ComputePoolID == pool {
			sel = append(sel, st)
		}
	}
	sort.Slice(sel, func(i, j int) bool { return sel[i].Name < sel[j].Name })
	from, to, next, err := page(r, len(sel))
	if err != nil {
		writeErrors(w, http.StatusBadRequest, err.Error())
		return
	}
	data := []any{}
	for _, st := range sel[min(from, len(sel)):to] {
		data = append(data, statementJSON(st))
	}
	meta := map[string]any{"self": "http://" + r.Host + r.URL.String()}
	if next != "" {
		meta["next"] = next
	}
	writeJSON(w, map[string]any{"api_version": "sql/v1", "kind": "StatementList", "metadata": meta, "data": data})
}

func (s *Server) listTableflow(w http.ResponseWriter, r *http.Request) {
	sel := append([]Tableflow(nil), s.tableflow...)
	sort.Slice(sel, func(i, j int) bool { return sel[i].Topic < sel[j].Topic })
	from, to, next, err := page(r, len(sel))
	if err != nil {
		writeErrors(w, http.StatusBadRequest, err.Error())
		return
	}
	data := []any{}
	for _, tf := range sel[min(from, len(sel)):to] {
		data = append(data, tableflowJSON(tf))
	}
	meta := map[string]any{"first": "http://" + r.Host + r.URL.Path, "total_size": len(sel)}
	if next != "" {
		meta["next"] = next
	}
	writeJSON(w, map[string]any{"api_version": "tableflow/v1", "kind": "TableflowTopicList", "metadata": meta, "data": data})
}

func statementJSON(st Statement) map[string]any {
	created := st.CreatedAt.UTC().Format(time.RFC3339)
	kind := st.SQLKind
	if kind == "" {
		kind = "INSERT_INTO"
	}
	return map[string]any{
		"api_version": "sql/v1", "kind": "Statement",
		"metadata": map[string]any{"self": "/sql/v1/organizations/" + Org + "/environments/" + Env + "/statements/" + st.Name,
			"created_at": created, "updated_at": created, "uid": "uid-" + st.Name, "resource_version": "3", "labels": st.Labels},
		"name": st.Name, "organization_id": Org, "environment_id": Env,
		"spec": map[string]any{"statement": st.SQL, "properties": st.Properties, "compute_pool_id": st.ComputePoolID,
			"principal": "sa-billing", "authorized_principals": []string{}, "stopped": st.Phase == "STOPPED"},
		"status": map[string]any{"phase": st.Phase, "detail": st.Detail, "warnings": []any{},
			"traits": map[string]any{"sql_kind": kind, "is_bounded": false, "is_append_only": true, "upsert_columns": []any{},
				"schema": map[string]any{"columns": []any{}}},
			"network_kind": "PUBLIC", "latest_offsets": st.LatestOffsets, "latest_offsets_timestamp": created,
			"end_time": nil, "duration": nil},
	}
}

func tableflowJSON(tf Tableflow) map[string]any {
	formats := tf.TableFormats
	if formats == nil {
		formats = []string{"ICEBERG"}
	}
	sync := tf.CatalogSync
	if sync == nil {
		sync = []map[string]string{}
	}
	status := map[string]any{"phase": tf.Phase, "error_message": "", "catalog_sync_statuses": sync, "write_mode": "APPEND"}
	if tf.Failing != nil {
		status["failing_table_formats"] = tf.Failing
	}
	return map[string]any{
		"api_version": "tableflow/v1", "kind": "TableflowTopic",
		"metadata": map[string]any{"self": "/tableflow/v1/tableflow-topics/" + tf.Topic, "resource_name": "crn://confluent.cloud/tableflow-topic=" + tf.Topic,
			"created_at": "2026-11-01T09:00:00Z", "updated_at": "2026-11-29T14:00:00Z"},
		"spec": map[string]any{"display_name": tf.Topic, "suspended": tf.Suspended, "table_formats": formats,
			"environment": map[string]any{"id": Env}, "kafka_cluster": map[string]any{"id": Cluster, "environment": Env},
			"storage": map[string]any{"kind": "Managed", "table_path": tf.TablePath},
			"config":  map[string]any{"retention_ms": "604800000", "record_failure_strategy": "SUSPEND", "error_handling": map[string]any{"mode": "SUSPEND"}}},
		"status": status,
	}
}
