// Package sftest is a loopback stand-in for the three endpoints of Snowflake's REST protocol that
// gosnowflake uses for a password session (docs/reference/testing.md, Snowflake): POST /session/v1/login-request,
// POST /queries/v1/query-request (JSON rowtype + rowset) and POST /session?delete=true. Response
// shapes follow the driver's own WireMock fixtures (test_data/wiremock/mappings: select1.json,
// auth/password/successful_flow.json, close_session.json). Tests must set
// SNOWFLAKE_DISABLE_PLATFORM_DETECTION=true and SF_DISABLE_MINICORE=true.
package sftest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/dataworkers/dw/pkg/warehouse/snowflake" // the tests that use this fake open the real driver
)

// Column is one column of a result: its Snowflake type ("text", "fixed", "timestamp_ntz", "real",
// "boolean") and scale.
type Column struct {
	Name  string
	Type  string
	Scale int64
}

// Result answers one query. Rows hold nil for NULL, strings, integers, floats or time.Time (sent
// as seconds.nanoseconds, the JSON format of timestamp_ntz).
type Result struct {
	Columns []Column
	Rows    [][]any
	// ErrCode, when set, fails the query the way Snowflake does (e.g. "002003" object does not exist).
	ErrCode string
	ErrMsg  string
}

// Query is one received query-request.
type Query struct {
	SQL      string
	Bindings map[string]Binding
}

// Binding is one bound value as the driver sent it.
type Binding struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Server is a running stand-in.
type Server struct {
	URL  string
	Host string
	Port int

	answer func(Query) Result

	mu             sync.Mutex
	Queries        []Query
	Login          map[string]any // the login request's data object
	SessionDeleted bool
}

// Start serves the stand-in on 127.0.0.1 until the test ends. answer decides each query's result.
func Start(t testing.TB, answer func(Query) Result) *Server {
	t.Helper()
	s := &Server{answer: answer}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /session/v1/login-request", s.login)
	mux.HandleFunc("POST /queries/v1/query-request", s.query)
	mux.HandleFunc("POST /session", s.session)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("sftest: unexpected request %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	s.Host = host
	s.Port, _ = strconv.Atoi(port)
	return s
}

// DSN is a gosnowflake DSN for the stand-in.
func (s *Server) DSN() string {
	return fmt.Sprintf("dw_reader:secret@%s:%d/ANALYTICS/USAGE?account=test&protocol=http&warehouse=WH_XS&role=DW_READER&disableTelemetry=true&maxRetryCount=1&loginTimeout=10", s.Host, s.Port)
}

// Received returns the queries received so far.
func (s *Server) Received() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Query(nil), s.Queries...)
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Data map[string]any `json:"data"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	s.Login = body.Data
	s.mu.Unlock()
	writeJSON(w, map[string]any{
		"data": map[string]any{
			"masterToken": "master token", "token": "session token", "validityInSeconds": 3600, "masterValidityInSeconds": 14400,
			"displayUserName": "DW_READER", "serverVersion": "8.48.0", "firstLogin": false, "healthCheckInterval": 45,
			"sessionId":   1172562260498,
			"parameters":  []map[string]any{{"name": "CLIENT_PREFETCH_THREADS", "value": 4}, {"name": "TIMEZONE", "value": "UTC"}},
			"sessionInfo": map[string]any{"databaseName": "ANALYTICS", "schemaName": "USAGE", "warehouseName": "WH_XS", "roleName": "DW_READER"},
		},
		"code": nil, "message": nil, "success": true,
	})
}

func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != `Snowflake Token="session token"` {
		writeJSON(w, map[string]any{"data": nil, "code": "390101", "message": "Authentication token has expired.", "success": false})
		return
	}
	var req struct {
		SQLText  string             `json:"sqlText"`
		Bindings map[string]Binding `json:"bindings"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := Query{SQL: req.SQLText, Bindings: req.Bindings}
	s.mu.Lock()
	s.Queries = append(s.Queries, q)
	s.mu.Unlock()
	res := s.answer(q)
	if res.ErrCode != "" {
		writeJSON(w, map[string]any{
			"data": map[string]any{"queryId": "01ba13b4-0000-0000-0000-00000000e001", "sqlState": "42S02", "errorCode": res.ErrCode},
			"code": res.ErrCode, "message": res.ErrMsg, "success": false,
		})
		return
	}
	rowtype := make([]map[string]any, len(res.Columns))
	for i, c := range res.Columns {
		rowtype[i] = map[string]any{"name": c.Name, "database": "", "schema": "", "table": "", "nullable": true, "length": nil,
			"type": c.Type, "scale": c.Scale, "precision": 38, "byteLength": nil, "collation": nil}
	}
	rowset := make([][]*string, len(res.Rows))
	for i, row := range res.Rows {
		rowset[i] = make([]*string, len(row))
		for j, v := range row {
			rowset[i][j] = render(v)
		}
	}
	writeJSON(w, map[string]any{
		"data": map[string]any{
			"parameters": []map[string]any{{"name": "TIMEZONE", "value": "UTC"}},
			"rowtype":    rowtype, "rowset": rowset, "total": len(rowset), "returned": len(rowset),
			"queryId": "01ba13b4-0104-e9fd-0000-0111029ca00e", "finalDatabaseName": "ANALYTICS", "finalSchemaName": "USAGE",
			"finalWarehouseName": "WH_XS", "numberOfBinds": len(req.Bindings), "arrayBindSupported": false, "statementTypeId": 4096,
			"version": 1, "sendResultTime": 1738317395581, "queryResultFormat": "json",
		},
		"code": nil, "message": nil, "success": true,
	})
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("delete") != "true" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.SessionDeleted = true
	s.mu.Unlock()
	writeJSON(w, map[string]any{"code": nil, "data": nil, "message": nil, "success": true})
}

func render(v any) *string {
	var s string
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		s = x
	case time.Time:
		s = fmt.Sprintf("%d.%09d", x.Unix(), x.Nanosecond())
	default:
		s = fmt.Sprint(x)
	}
	return &s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
