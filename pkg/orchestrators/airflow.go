// Package orchestrators runs the actions Data Workers may take on schedulers once a named person
// approved them: pause, unpause and trigger Airflow DAGs (REST API v1 for Airflow 2, v2 for Airflow 3)
// and trigger dbt Cloud jobs (Administrative API v2). Every call goes through pkg/httpapi.
package orchestrators

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// ErrAirflowNotConfigured is returned when the airflow section is missing.
var ErrAirflowNotConfigured = errors.New("airflow is not configured: add an airflow section (url, api_version, token or username/password) to the config")

// Airflow is an Airflow REST API client.
type Airflow struct {
	api     *httpapi.Client
	version string // v1 or v2
	cfg     config.Airflow

	mu    sync.Mutex
	token string // Airflow 3 JWT from /auth/token, when no static token is configured
}

// DAG is the part of a DAG's state that remediation and blast radius need.
type DAG struct {
	DagID    string `json:"dag_id"`
	IsPaused bool   `json:"is_paused"`
	IsActive *bool  `json:"is_active,omitempty"`
	// NextRun is the next scheduled run: next_dagrun_run_after (v2) or next_dagrun_create_after (v1).
	NextRun *time.Time `json:"next_run,omitempty"`
	// Schedule is the timetable summary (v2) or schedule_interval value (v1), as Airflow reports it.
	Schedule string `json:"schedule,omitempty"`
}

// DAGRun is one run.
type DAGRun struct {
	DagID       string     `json:"dag_id"`
	DagRunID    string     `json:"dag_run_id"`
	State       string     `json:"state"`
	LogicalDate *time.Time `json:"logical_date,omitempty"`
}

// NewAirflow builds a client; it does not connect.
func NewAirflow(c *config.Airflow) (*Airflow, error) {
	if c == nil {
		return nil, ErrAirflowNotConfigured
	}
	a := &Airflow{version: c.APIVersion, cfg: *c}
	var auth httpapi.Auth
	switch {
	case c.Token != "":
		auth = httpapi.Bearer(c.Token)
	case c.APIVersion == "v1":
		auth = httpapi.Basic(c.Username, c.Password)
	default:
		auth = a.jwtAuth
	}
	api, err := httpapi.New("airflow", c.URL, "airflow", auth, c.Timeout)
	if err != nil {
		return nil, err
	}
	a.api = api
	return a, nil
}

// jwtAuth adds the Airflow 3 bearer token obtained with the configured user name and password.
func (a *Airflow) jwtAuth(r *http.Request) {
	a.mu.Lock()
	tok := a.token
	a.mu.Unlock()
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
}

// login fetches a JWT when Airflow 3 is used with a user name and password.
func (a *Airflow) login(ctx context.Context) error {
	if a.version != "v2" || a.cfg.Token != "" {
		return nil
	}
	a.mu.Lock()
	have := a.token != ""
	a.mu.Unlock()
	if have {
		return nil
	}
	login, err := httpapi.New("airflow", a.cfg.URL, "airflow", nil, a.cfg.Timeout)
	if err != nil {
		return err
	}
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := login.Do(ctx, "POST", "/auth/token", nil, map[string]string{"username": a.cfg.Username, "password": a.cfg.Password}, &out); err != nil {
		return fmt.Errorf("airflow login: %w", err)
	}
	if out.AccessToken == "" {
		return errors.New("airflow login: /auth/token returned no access_token")
	}
	a.mu.Lock()
	a.token = out.AccessToken
	a.mu.Unlock()
	return nil
}

func (a *Airflow) base() string { return "/api/" + a.version }

func dagPath(dagID string) string { return "/dags/" + url.PathEscape(dagID) }

type dagWire struct {
	DagID                 string     `json:"dag_id"`
	IsPaused              bool       `json:"is_paused"`
	IsActive              *bool      `json:"is_active"`
	NextDagrunRunAfter    *time.Time `json:"next_dagrun_run_after"`
	NextDagrunCreateAfter *time.Time `json:"next_dagrun_create_after"`
	TimetableSummary      string     `json:"timetable_summary"`
	ScheduleInterval      *struct {
		Value string `json:"value"`
	} `json:"schedule_interval"`
}

func (w dagWire) dag() DAG {
	d := DAG{DagID: w.DagID, IsPaused: w.IsPaused, IsActive: w.IsActive, NextRun: w.NextDagrunRunAfter, Schedule: w.TimetableSummary}
	if d.NextRun == nil {
		d.NextRun = w.NextDagrunCreateAfter
	}
	if d.Schedule == "" && w.ScheduleInterval != nil {
		d.Schedule = w.ScheduleInterval.Value
	}
	return d
}

// GetDAG reads a DAG's paused state and next run.
func (a *Airflow) GetDAG(ctx context.Context, dagID string) (DAG, error) {
	if err := a.login(ctx); err != nil {
		return DAG{}, err
	}
	var w dagWire
	if err := a.api.Do(ctx, "GET", a.base()+dagPath(dagID), nil, nil, &w); err != nil {
		return DAG{}, err
	}
	return w.dag(), nil
}

// SetPaused pauses (true) or unpauses (false) a DAG and returns its state as Airflow reports it after.
// v2's DAGPatchBody accepts only is_paused; v1 needs update_mask=is_paused.
func (a *Airflow) SetPaused(ctx context.Context, dagID string, paused bool) (DAG, error) {
	if err := a.login(ctx); err != nil {
		return DAG{}, err
	}
	var q url.Values
	if a.version == "v1" {
		q = url.Values{"update_mask": {"is_paused"}}
	}
	var w dagWire
	if err := a.api.Do(ctx, "PATCH", a.base()+dagPath(dagID), q, map[string]bool{"is_paused": paused}, &w); err != nil {
		return DAG{}, err
	}
	d := w.dag()
	if d.IsPaused != paused {
		return d, fmt.Errorf("airflow: DAG %s reports is_paused=%v after the request to set %v", dagID, d.IsPaused, paused)
	}
	return d, nil
}

// Trigger starts a DAG run with conf and a note saying why. Airflow 3 requires the logical_date key
// (null means "now"); Airflow 2 takes it optionally.
func (a *Airflow) Trigger(ctx context.Context, dagID, runID string, conf map[string]any, note string) (DAGRun, error) {
	if err := a.login(ctx); err != nil {
		return DAGRun{}, err
	}
	body := map[string]any{"conf": conf, "note": note}
	if conf == nil {
		body["conf"] = map[string]any{}
	}
	if runID != "" {
		body["dag_run_id"] = runID
	}
	if a.version == "v2" {
		body["logical_date"] = nil
	}
	var run DAGRun
	if err := a.api.Do(ctx, "POST", a.base()+dagPath(dagID)+"/dagRuns", nil, body, &run); err != nil {
		return DAGRun{}, err
	}
	return run, nil
}

// GetRun reads one DAG run.
func (a *Airflow) GetRun(ctx context.Context, dagID, runID string) (DAGRun, error) {
	if err := a.login(ctx); err != nil {
		return DAGRun{}, err
	}
	var run DAGRun
	err := a.api.Do(ctx, "GET", a.base()+dagPath(dagID)+"/dagRuns/"+url.PathEscape(runID), nil, nil, &run)
	return run, err
}
