// Package orchtest serves loopback stand-ins of the Airflow REST API (v1 and v2) and the dbt Cloud
// Administrative API v2, shaped as docs/reference/backends.md says, including their error
// bodies and strictness (Airflow 3's DAGPatchBody accepts only is_paused; its trigger needs the
// logical_date key). Tests and the local demo run the real clients against them.
package orchtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Airflow is a running stand-in.
type Airflow struct {
	URL     string
	Version string // v1 or v2
	// User, Password authenticate (basic for v1; /auth/token for v2, which hands out Token).
	User, Password, Token string
	NextRun               string // next_dagrun… value reported for every DAG
	Schedule              string

	srv    *httptest.Server
	mu     sync.Mutex
	paused map[string]bool
	runs   []map[string]any
	logins int
}

// NewAirflow starts a stand-in with the given DAGs and their paused state.
func NewAirflow(version string, dags map[string]bool) *Airflow {
	a := &Airflow{Version: version, User: "admin", Password: "pw", Token: "jwt-123", NextRun: "2026-11-29T23:00:00Z",
		Schedule: "0 23 * * *", paused: map[string]bool{}}
	for d, p := range dags {
		a.paused[d] = p
	}
	a.srv = httptest.NewServer(a.handler())
	a.URL = a.srv.URL
	return a
}

// Close stops the server.
func (a *Airflow) Close() { a.srv.Close() }

// Paused reports a DAG's paused state.
func (a *Airflow) Paused(dag string) bool { a.mu.Lock(); defer a.mu.Unlock(); return a.paused[dag] }

// Runs returns the triggered runs.
func (a *Airflow) Runs() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]any(nil), a.runs...)
}

// Logins counts /auth/token calls.
func (a *Airflow) Logins() int { a.mu.Lock(); defer a.mu.Unlock(); return a.logins }

func fail(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}

func (a *Airflow) authed(w http.ResponseWriter, r *http.Request) bool {
	if a.Version == "v2" {
		if r.Header.Get("Authorization") != "Bearer "+a.Token {
			fail(w, 401, map[string]any{"detail": "Not authenticated"})
			return false
		}
		return true
	}
	if u, p, _ := r.BasicAuth(); u != a.User || p != a.Password {
		fail(w, 401, map[string]any{"title": "Unauthorized", "status": 401, "detail": "Invalid credentials"})
		return false
	}
	return true
}

func (a *Airflow) dag(id string) map[string]any {
	if a.Version == "v2" {
		return map[string]any{"dag_id": id, "is_paused": a.paused[id], "is_active": true, "next_dagrun_run_after": a.NextRun, "timetable_summary": a.Schedule}
	}
	return map[string]any{"dag_id": id, "is_paused": a.paused[id], "is_active": true, "next_dagrun_create_after": a.NextRun,
		"schedule_interval": map[string]any{"__type": "CronExpression", "value": a.Schedule}}
}

func (a *Airflow) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /auth/token", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		json.NewDecoder(r.Body).Decode(&body)
		if body["username"] != a.User || body["password"] != a.Password {
			fail(w, 401, map[string]any{"detail": "Invalid credentials"})
			return
		}
		a.mu.Lock()
		a.logins++
		a.mu.Unlock()
		w.WriteHeader(201)
		json.NewEncoder(w).Encode(map[string]any{"access_token": a.Token, "token_type": "bearer"})
	})
	known := func(w http.ResponseWriter, r *http.Request) (string, bool) {
		if r.PathValue("v") != a.Version || !a.authed(w, r) {
			if r.PathValue("v") != a.Version {
				fail(w, 404, map[string]any{"detail": "Not Found"})
			}
			return "", false
		}
		dag := r.PathValue("dag")
		if _, ok := a.paused[dag]; !ok {
			fail(w, 404, map[string]any{"title": "DAG not found", "status": 404, "detail": fmt.Sprintf("The DAG with dag_id: `%s` was not found", dag)})
			return "", false
		}
		return dag, true
	}
	mux.HandleFunc("GET /api/{v}/dags/{dag}", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if dag, ok := known(w, r); ok {
			json.NewEncoder(w).Encode(a.dag(dag))
		}
	})
	mux.HandleFunc("PATCH /api/{v}/dags/{dag}", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		dag, ok := known(w, r)
		if !ok {
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if a.Version == "v1" && r.URL.Query().Get("update_mask") != "is_paused" {
			fail(w, 400, map[string]any{"title": "Bad Request", "detail": "update_mask is required"})
			return
		}
		p, isBool := body["is_paused"].(bool)
		if len(body) != 1 || !isBool {
			fail(w, 422, map[string]any{"detail": []any{map[string]any{"type": "extra_forbidden", "msg": "DAGPatchBody accepts only is_paused"}}})
			return
		}
		a.paused[dag] = p
		json.NewEncoder(w).Encode(a.dag(dag))
	})
	mux.HandleFunc("POST /api/{v}/dags/{dag}/dagRuns", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		dag, ok := known(w, r)
		if !ok {
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if _, has := body["logical_date"]; a.Version == "v2" && !has {
			fail(w, 422, map[string]any{"detail": []any{map[string]any{"type": "missing", "loc": []string{"body", "logical_date"}, "msg": "Field required"}}})
			return
		}
		run := map[string]any{"dag_id": dag, "dag_run_id": fmt.Sprintf("manual__%d", len(a.runs)+1), "state": "queued", "conf": body["conf"], "note": body["note"]}
		a.runs = append(a.runs, run)
		json.NewEncoder(w).Encode(run)
	})
	return mux
}

// DBTCloud is a running dbt Cloud stand-in for one account.
type DBTCloud struct {
	URL       string
	AccountID int64
	Token     string

	srv   *httptest.Server
	mu    sync.Mutex
	jobs  map[int64]bool
	runs  map[int64]int // run id → polls so far
	next  int64
	Cause []string
}

// NewDBTCloud starts a stand-in with the given job ids. A run reports Running on its first poll and
// Success after.
func NewDBTCloud(accountID int64, token string, jobs ...int64) *DBTCloud {
	d := &DBTCloud{AccountID: accountID, Token: token, jobs: map[int64]bool{}, runs: map[int64]int{}, next: 9000}
	for _, j := range jobs {
		d.jobs[j] = true
	}
	d.srv = httptest.NewServer(d.handler())
	d.URL = d.srv.URL
	return d
}

// Close stops the server.
func (d *DBTCloud) Close() { d.srv.Close() }

// Causes are the causes of the runs triggered so far, read under the server's lock (the handler
// appends to Cause while requests are served).
func (d *DBTCloud) Causes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.Cause...)
}

func dbtError(w http.ResponseWriter, code int, msg string) {
	fail(w, code, map[string]any{"status": map[string]any{"code": code, "is_success": false, "user_message": msg, "developer_message": nil}, "data": nil})
}

func (d *DBTCloud) handler() http.Handler {
	mux := http.NewServeMux()
	prefix := fmt.Sprintf("/api/v2/accounts/%d", d.AccountID)
	auth := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Token "+d.Token {
			dbtError(w, 401, "Invalid token.")
			return false
		}
		return true
	}
	mux.HandleFunc("POST "+prefix+"/jobs/{job}/run/", func(w http.ResponseWriter, r *http.Request) {
		if !auth(w, r) {
			return
		}
		var body map[string]string
		json.NewDecoder(r.Body).Decode(&body)
		var job int64
		fmt.Sscan(r.PathValue("job"), &job)
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.jobs[job] {
			dbtError(w, 404, "Requested resource not found.")
			return
		}
		if c := body["cause"]; c == "" || len(c) > 255 {
			dbtError(w, 400, "cause must be 1-255 characters")
			return
		}
		d.next++
		d.runs[d.next] = 0
		d.Cause = append(d.Cause, body["cause"])
		json.NewEncoder(w).Encode(map[string]any{"status": map[string]any{"code": 200, "is_success": true},
			"data": map[string]any{"id": d.next, "job_definition_id": job, "status": 1, "status_humanized": "Queued", "href": fmt.Sprintf("%s/runs/%d", d.URL, d.next)}})
	})
	mux.HandleFunc("GET "+prefix+"/runs/{run}/", func(w http.ResponseWriter, r *http.Request) {
		if !auth(w, r) {
			return
		}
		var run int64
		fmt.Sscan(r.PathValue("run"), &run)
		d.mu.Lock()
		defer d.mu.Unlock()
		polls, ok := d.runs[run]
		if !ok {
			dbtError(w, 404, "Requested resource not found.")
			return
		}
		d.runs[run] = polls + 1
		status, human := 3, "Running"
		if polls >= 1 {
			status, human = 10, "Success"
		}
		json.NewEncoder(w).Encode(map[string]any{"status": map[string]any{"code": 200, "is_success": true},
			"data": map[string]any{"id": run, "status": status, "status_humanized": human}})
	})
	return mux
}
