// Package connecttest is a loopback fake of the Kafka Connect REST API (docs/reference/backends.md): GET
// /connectors (plain, ?expand=status, ?expand=info, both), /connectors/{name}, /status, /config,
// /topics, with Connect's error bodies ({"error_code","message"}) and optional basic auth. It is
// driven by fixtures in the documented shapes; there is no runnable Connect on this machine.
package connecttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Connector is one fixture: its info and status in the documented shapes.
type Connector struct {
	Name   string
	Type   string // source or sink
	Config map[string]string
	// State and Tasks fill the status; Tasks[i].trace only when FAILED.
	State    string
	WorkerID string
	Tasks    []Task
	// Topics is the KIP-558 active-topics answer; nil answers 404 as a worker with topic tracking off.
	Topics []string
}

// Task is one task's status.
type Task struct {
	State    string
	WorkerID string
	Trace    string
}

// Server is a running fake.
type Server struct {
	*httptest.Server
	mu         sync.Mutex
	connectors map[string]Connector
	// User and Password, when set, are required as basic auth.
	User, Password string
	// NoExpand makes GET /connectors ignore ?expand, as workers before Kafka 2.3 do.
	NoExpand bool
	// Requests records each request's escaped path and query, for assertions.
	Requests []string
	// Rebalancing answers this many requests with 409, as a worker does during a rebalance.
	Rebalancing int
	// Prefix, when set, serves the API under it, as Confluent Cloud does for managed connectors
	// (/connect/v1/environments/{env}/clusters/{lkc}); ?expand then takes a comma-separated list.
	Prefix string
}

// New starts a fake on 127.0.0.1 serving the given connectors; it stops when the test ends.
func New(t testing.TB, cs ...Connector) *Server {
	s := Start(cs...)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake on 127.0.0.1 for callers outside a test (the local demo); call Close.
func Start(cs ...Connector) *Server {
	s := &Server{connectors: map[string]Connector{}}
	for _, c := range cs {
		s.connectors[c.Name] = c
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Set adds or replaces a connector.
func (s *Server) Set(c Connector) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connectors[c.Name] = c
}

// Delete removes a connector.
func (s *Server) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.connectors, name)
}

func writeErr(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Requests = append(s.Requests, r.URL.EscapedPath()+"?"+r.URL.RawQuery)
	if s.User != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != s.User || p != s.Password {
			writeErr(w, http.StatusUnauthorized, "User cannot access the resource.")
			return
		}
	}
	if s.Rebalancing > 0 {
		s.Rebalancing--
		writeErr(w, http.StatusConflict, "Cannot complete request momentarily due to stale configuration (typically caused by a concurrent config change)")
		return
	}
	if r.Method != http.MethodGet {
		writeErr(w, http.StatusMethodNotAllowed, "HTTP 405 Method Not Allowed")
		return
	}
	path := r.URL.EscapedPath()
	if s.Prefix != "" {
		rest, ok := strings.CutPrefix(path, s.Prefix)
		if !ok {
			writeErr(w, http.StatusNotFound, "HTTP 404 Not Found")
			return
		}
		path = rest
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, sg := range segs {
		u, err := url.PathUnescape(sg)
		if err != nil {
			writeErr(w, http.StatusBadRequest, "bad path")
			return
		}
		segs[i] = u
	}
	switch {
	case len(segs) == 1 && segs[0] == "":
		writeJSON(w, map[string]any{"version": "3.9.0", "commit": "fake", "kafka_cluster_id": "fake-cluster"})
	case len(segs) == 1 && segs[0] == "connectors":
		s.list(w, r)
	case len(segs) >= 2 && segs[0] == "connectors":
		c, ok := s.connectors[segs[1]]
		if !ok {
			writeErr(w, http.StatusNotFound, fmt.Sprintf("Connector %s not found", segs[1]))
			return
		}
		switch {
		case len(segs) == 2:
			writeJSON(w, info(c))
		case len(segs) == 3 && segs[2] == "status":
			writeJSON(w, status(c))
		case len(segs) == 3 && segs[2] == "config":
			writeJSON(w, c.Config)
		case len(segs) == 3 && segs[2] == "topics":
			if c.Topics == nil {
				writeErr(w, http.StatusNotFound, "Topic tracking is disabled.")
				return
			}
			writeJSON(w, map[string]any{c.Name: map[string]any{"topics": c.Topics}})
		default:
			writeErr(w, http.StatusNotFound, "HTTP 404 Not Found")
		}
	default:
		writeErr(w, http.StatusNotFound, "HTTP 404 Not Found")
	}
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	names := make([]string, 0, len(s.connectors))
	for n := range s.connectors {
		names = append(names, n)
	}
	sort.Strings(names)
	var expand []string
	for _, e := range r.URL.Query()["expand"] {
		expand = append(expand, strings.Split(e, ",")...)
	}
	if len(expand) == 0 || s.NoExpand {
		writeJSON(w, names)
		return
	}
	out := map[string]map[string]any{}
	for _, n := range names {
		e := map[string]any{}
		for _, x := range expand {
			switch x {
			case "status":
				e["status"] = status(s.connectors[n])
			case "info":
				e["info"] = info(s.connectors[n])
			case "id":
				e["id"] = map[string]any{"id": "lcc-" + n, "id_type": "ID"}
			}
		}
		out[n] = e
	}
	writeJSON(w, out)
}

func info(c Connector) map[string]any {
	tasks := make([]map[string]any, len(c.Tasks))
	for i := range c.Tasks {
		tasks[i] = map[string]any{"connector": c.Name, "task": i}
	}
	cfg := map[string]string{"name": c.Name}
	for k, v := range c.Config {
		cfg[k] = v
	}
	return map[string]any{"name": c.Name, "config": cfg, "tasks": tasks, "type": c.Type}
}

func status(c Connector) map[string]any {
	tasks := make([]map[string]any, len(c.Tasks))
	for i, t := range c.Tasks {
		m := map[string]any{"id": i, "state": t.State, "worker_id": t.WorkerID}
		if t.Trace != "" {
			m["trace"] = t.Trace
		}
		tasks[i] = m
	}
	return map[string]any{"name": c.Name, "connector": map[string]any{"state": c.State, "worker_id": c.WorkerID}, "tasks": tasks, "type": c.Type}
}
