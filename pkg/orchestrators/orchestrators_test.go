package orchestrators

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
)

// airflowFixture serves the documented Airflow REST shapes (formats.md §4): v2 with a JWT from
// /auth/token and a strict DAGPatchBody, v1 with basic auth and update_mask.
type airflowFixture struct {
	mu      sync.Mutex
	version string
	paused  map[string]bool
	runs    []map[string]any
	logins  int
}

func (f *airflowFixture) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	fail := func(w http.ResponseWriter, code int, detail string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"detail": detail})
	}
	authed := func(w http.ResponseWriter, r *http.Request) bool {
		if f.version == "v2" {
			if r.Header.Get("Authorization") != "Bearer jwt-123" {
				fail(w, 401, "Not authenticated")
				return false
			}
			return true
		}
		if u, p, _ := r.BasicAuth(); u != "admin" || p != "pw" {
			w.WriteHeader(401)
			json.NewEncoder(w).Encode(map[string]any{"title": "Unauthorized", "status": 401, "detail": "Invalid credentials"})
			return false
		}
		return true
	}
	dag := func(id string) map[string]any {
		next := "2026-11-29T23:00:00Z"
		if f.version == "v2" {
			return map[string]any{"dag_id": id, "is_paused": f.paused[id], "is_active": true, "next_dagrun_run_after": next, "timetable_summary": "0 23 * * *"}
		}
		return map[string]any{"dag_id": id, "is_paused": f.paused[id], "is_active": true, "next_dagrun_create_after": next,
			"schedule_interval": map[string]any{"__type": "CronExpression", "value": "0 23 * * *"}}
	}
	mux.HandleFunc("POST /auth/token", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		json.NewDecoder(r.Body).Decode(&body)
		if body["username"] != "admin" || body["password"] != "pw" {
			fail(w, 401, "Invalid credentials")
			return
		}
		f.mu.Lock()
		f.logins++
		f.mu.Unlock()
		w.WriteHeader(201)
		w.Write([]byte(`{"access_token":"jwt-123","token_type":"bearer"}`))
	})
	mux.HandleFunc("GET /api/{v}/dags/{dag}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("v") != f.version || !authed(w, r) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.paused[r.PathValue("dag")]; !ok {
			fail(w, 404, fmt.Sprintf("The DAG with dag_id: `%s` was not found", r.PathValue("dag")))
			return
		}
		json.NewEncoder(w).Encode(dag(r.PathValue("dag")))
	})
	mux.HandleFunc("PATCH /api/{v}/dags/{dag}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("v") != f.version || !authed(w, r) {
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if f.version == "v1" && r.URL.Query().Get("update_mask") != "is_paused" {
			fail(w, 400, "update_mask is required")
			return
		}
		if len(body) != 1 || body["is_paused"] == nil {
			fail(w, 422, "DAGPatchBody accepts only is_paused")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.paused[r.PathValue("dag")] = body["is_paused"].(bool)
		json.NewEncoder(w).Encode(dag(r.PathValue("dag")))
	})
	mux.HandleFunc("POST /api/{v}/dags/{dag}/dagRuns", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("v") != f.version || !authed(w, r) {
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if _, ok := body["logical_date"]; f.version == "v2" && !ok {
			fail(w, 422, "Field required: logical_date")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		run := map[string]any{"dag_id": r.PathValue("dag"), "dag_run_id": fmt.Sprintf("manual__%d", len(f.runs)+1), "state": "queued", "conf": body["conf"], "note": body["note"]}
		f.runs = append(f.runs, run)
		json.NewEncoder(w).Encode(run)
	})
	return mux
}

func TestAirflow3PauseTriggerAndUnpause(t *testing.T) {
	f := &airflowFixture{version: "v2", paused: map[string]bool{"sync_metered_usage_to_stripe": false}}
	srv := httptest.NewServer(f.handler(t))
	defer srv.Close()
	a, err := NewAirflow(&config.Airflow{URL: srv.URL, APIVersion: "v2", Username: "admin", Password: "pw", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := a.GetDAG(ctx, "sync_metered_usage_to_stripe")
	if err != nil || d.IsPaused || d.NextRun == nil || d.NextRun.Hour() != 23 || d.Schedule != "0 23 * * *" {
		t.Fatalf("dag = %+v, %v", d, err)
	}
	if d, err = a.SetPaused(ctx, "sync_metered_usage_to_stripe", true); err != nil || !d.IsPaused {
		t.Fatalf("pause: %+v %v", d, err)
	}
	run, err := a.Trigger(ctx, "sync_metered_usage_to_stripe", "", map[string]any{"reason": "rerun"}, "approved by ann")
	if err != nil || run.DagRunID == "" || run.State != "queued" {
		t.Fatalf("trigger: %+v %v", run, err)
	}
	if _, err = a.SetPaused(ctx, "sync_metered_usage_to_stripe", false); err != nil {
		t.Fatal(err)
	}
	if f.logins != 1 {
		t.Errorf("logged in %d times, want once", f.logins)
	}
}

func TestAirflow2UsesBasicAuthAndUpdateMask(t *testing.T) {
	f := &airflowFixture{version: "v1", paused: map[string]bool{"nightly": false}}
	srv := httptest.NewServer(f.handler(t))
	defer srv.Close()
	a, _ := NewAirflow(&config.Airflow{URL: srv.URL, APIVersion: "v1", Username: "admin", Password: "pw", Timeout: 5 * time.Second})
	d, err := a.SetPaused(context.Background(), "nightly", true)
	if err != nil || !d.IsPaused || d.Schedule != "0 23 * * *" || d.NextRun == nil {
		t.Fatalf("%+v %v", d, err)
	}
	if _, err := a.Trigger(context.Background(), "nightly", "rerun-1", nil, "n"); err != nil {
		t.Fatal(err)
	}
}

func TestAirflowErrorsSayWhatWentWrong(t *testing.T) {
	f := &airflowFixture{version: "v2", paused: map[string]bool{}}
	srv := httptest.NewServer(f.handler(t))
	defer srv.Close()
	bad, _ := NewAirflow(&config.Airflow{URL: srv.URL, APIVersion: "v2", Username: "admin", Password: "wrong", Timeout: 5 * time.Second})
	if _, err := bad.GetDAG(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "Invalid credentials") {
		t.Errorf("login error = %v", err)
	}
	good, _ := NewAirflow(&config.Airflow{URL: srv.URL, APIVersion: "v2", Token: "jwt-123", Timeout: 5 * time.Second})
	if _, err := good.GetDAG(context.Background(), "no/such dag"); err == nil || !strings.Contains(err.Error(), "was not found") {
		t.Errorf("404 error = %v", err)
	}
	if _, err := NewAirflow(nil); err != ErrAirflowNotConfigured {
		t.Errorf("nil config: %v", err)
	}
}

// dbtFixture serves dbt Cloud API v2 shapes (formats.md §3): Token auth, the data envelope, integer statuses.
func dbtFixture(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	polls := 0
	mux := http.NewServeMux()
	auth := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Token svc-token" {
			w.WriteHeader(401)
			w.Write([]byte(`{"status":{"code":401,"is_success":false,"user_message":"Invalid token.","developer_message":null},"data":null}`))
			return false
		}
		return true
	}
	mux.HandleFunc("POST /api/v2/accounts/7/jobs/{job}/run/", func(w http.ResponseWriter, r *http.Request) {
		if !auth(w, r) {
			return
		}
		var body map[string]string
		json.NewDecoder(r.Body).Decode(&body)
		if r.PathValue("job") != "55" {
			w.WriteHeader(404)
			w.Write([]byte(`{"status":{"code":404,"is_success":false,"user_message":"Requested resource not found."},"data":null}`))
			return
		}
		if body["cause"] == "" || len(body["cause"]) > 255 {
			w.WriteHeader(400)
			w.Write([]byte(`{"status":{"code":400,"is_success":false,"user_message":"cause must be 1-255 characters"},"data":null}`))
			return
		}
		w.Write([]byte(`{"status":{"code":200,"is_success":true},"data":{"id":9001,"job_definition_id":55,"status":1,"status_humanized":"Queued","href":"https://cloud.example/runs/9001"}}`))
	})
	mux.HandleFunc("GET /api/v2/accounts/7/runs/9001/", func(w http.ResponseWriter, r *http.Request) {
		if !auth(w, r) {
			return
		}
		mu.Lock()
		polls++
		status, human := 3, "Running"
		if polls >= 2 {
			status, human = 10, "Success"
		}
		mu.Unlock()
		fmt.Fprintf(w, `{"status":{"code":200,"is_success":true},"data":{"id":9001,"job_definition_id":55,"status":%d,"status_humanized":%q}}`, status, human)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestDBTCloudTriggersAndWaitsForARun(t *testing.T) {
	srv := dbtFixture(t)
	d, err := NewDBTCloud(&config.DBT{Cloud: &config.DBTCloud{URL: srv.URL, AccountID: 7, Token: "svc-token", Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.TriggerJob(context.Background(), 55, strings.Repeat("x", 300))
	if err != nil || run.ID != 9001 || run.Terminal() {
		t.Fatalf("%+v %v", run, err)
	}
	done, err := d.WaitRun(context.Background(), run.ID, time.Millisecond)
	if err != nil || !done.Succeeded() {
		t.Fatalf("%+v %v", done, err)
	}
}

func TestDBTCloudErrorsCarryTheUserMessage(t *testing.T) {
	srv := dbtFixture(t)
	d, _ := NewDBTCloud(&config.DBT{Cloud: &config.DBTCloud{URL: srv.URL, AccountID: 7, Token: "svc-token", Timeout: 5 * time.Second}})
	if _, err := d.TriggerJob(context.Background(), 99, "c"); err == nil || !strings.Contains(err.Error(), "Requested resource not found") {
		t.Errorf("404: %v", err)
	}
	bad, _ := NewDBTCloud(&config.DBT{Cloud: &config.DBTCloud{URL: srv.URL, AccountID: 7, Token: "nope", Timeout: 5 * time.Second}})
	if _, err := bad.TriggerJob(context.Background(), 55, "c"); err == nil || !strings.Contains(err.Error(), "Invalid token") || !strings.Contains(err.Error(), "dbt.cloud") {
		t.Errorf("401: %v", err)
	}
	if _, err := NewDBTCloud(&config.DBT{}); err != ErrDBTCloudNotConfigured {
		t.Errorf("unconfigured: %v", err)
	}
}
