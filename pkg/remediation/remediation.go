// Package remediation executes approved actions, and only those policy allows: classes Data Workers
// may run (Airflow pause/unpause/trigger, dbt Cloud job runs) once a named approval covers exactly the
// payload, and nothing while the org-wide stop is on. Owner-only classes (connectors, offsets, topics,
// Flink statements, Tableflow, dbt code) are never executed: they come back as steps for the owner.
// Every action is recorded with its result and its undo.
package remediation

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/orchestrators"
	"github.com/dataworkers/dw/pkg/store"
)

// Action outcomes.
const (
	StatusSucceeded  = "succeeded"
	StatusFailed     = "failed"
	StatusOwnerSteps = "owner_steps" // owner-only: Data Workers hands over the steps and verifies later
)

// Undo says how to reverse an action.
type Undo struct {
	Possible    bool           `json:"possible"`
	Class       string         `json:"class,omitempty"`
	Payload     map[string]any `json:"payload,omitempty"`
	Description string         `json:"description"`
}

// Action is one executed (or handed-over) action.
type Action struct {
	ID         int64          `json:"id"`
	RequestID  int64          `json:"request_id"`
	IncidentID int64          `json:"incident_id,omitempty"`
	Class      string         `json:"class"`
	Target     string         `json:"target"`
	Payload    map[string]any `json:"payload"`
	ApprovedBy string         `json:"approved_by"`
	Status     string         `json:"status"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
	Result     map[string]any `json:"result,omitempty"`
	Error      string         `json:"error,omitempty"`
	Undo       Undo           `json:"undo"`
	// Steps are the owner's instructions for owner-only classes.
	Steps []string `json:"steps,omitempty"`
}

// Backends are the systems actions run against; each constructor is called only when needed, so an
// unconfigured orchestrator is an error only for the action that needs it.
type Backends struct {
	Airflow  func() (*orchestrators.Airflow, error)
	DBTCloud func() (*orchestrators.DBTCloud, error)
	// RegisterSchema registers the approved payload's schema (dw-schema supplies it); nil elsewhere.
	RegisterSchema func(ctx context.Context, payload map[string]any) (map[string]any, Undo, error)
}

// Executor runs approved actions.
type Executor struct {
	st        *store.Store
	cfg       *config.Config
	approvals *approvals.Service
	backends  Backends
	now       func() time.Time
}

// New builds an executor.
func New(st *store.Store, cfg *config.Config, svc *approvals.Service, b Backends, now func() time.Time) *Executor {
	return &Executor{st: st, cfg: cfg, approvals: svc, backends: b, now: now}
}

// ErrOwnerOnly is returned (with the action recorded as owner steps) for classes Data Workers never runs.
var ErrOwnerOnly = errors.New("owner-only action")

// Run executes approved request id. The stop is checked first, then the approval is re-verified
// against the stored payload right before dispatch.
func (e *Executor) Run(ctx context.Context, requestID int64) (Action, error) {
	if err := e.approvals.CheckNotStopped(ctx); err != nil {
		return Action{}, err
	}
	req, err := e.approvals.Get(ctx, requestID)
	if err != nil {
		return Action{}, err
	}
	req, err = e.approvals.Authorize(ctx, requestID, req.Payload)
	if err != nil {
		return Action{}, err
	}
	a := Action{RequestID: req.ID, IncidentID: req.IncidentID, Class: req.Class, Target: req.Target, Payload: req.Payload,
		ApprovedBy: req.DecidedBy, StartedAt: e.now().UTC()}
	if done, err := e.alreadyRun(ctx, requestID); err != nil || done != nil {
		if err != nil {
			return Action{}, err
		}
		return *done, fmt.Errorf("request #%d already ran as action #%d (%s); an approval is used once", requestID, done.ID, done.Status)
	}
	class, _ := e.cfg.Class(req.Class)
	if config.IsOwnerOnly(req.Class) || class.Executor != config.ExecutorDataWorkers {
		a.Status = StatusOwnerSteps
		a.Steps = ownerSteps(req)
		a.Undo = Undo{Description: "the owner reverts their change; Data Workers verifies afterwards"}
		a.FinishedAt = e.now().UTC()
		if err := e.record(ctx, &a); err != nil {
			return a, err
		}
		return a, nil
	}
	result, undo, runErr := e.dispatch(ctx, req)
	a.FinishedAt, a.Result, a.Undo = e.now().UTC(), result, undo
	a.Status = StatusSucceeded
	if runErr != nil {
		a.Status, a.Error = StatusFailed, runErr.Error()
	}
	if err := e.record(ctx, &a); err != nil {
		return a, err
	}
	if runErr != nil {
		return a, fmt.Errorf("action #%d (%s on %s) failed: %w", a.ID, a.Class, a.Target, runErr)
	}
	return a, nil
}

func ownerSteps(req approvals.Request) []string {
	steps := []string{fmt.Sprintf("%s on %s is the owner's to carry out (approved by %s): %s", req.Class, req.Target, req.DecidedBy, req.Title)}
	if s, ok := req.Payload["steps"].([]any); ok {
		for _, x := range s {
			steps = append(steps, fmt.Sprint(x))
		}
	}
	return append(steps, "When done, run verify_incident so Data Workers re-checks the data and records the result.")
}

func str(p map[string]any, key string) (string, error) {
	v, ok := p[key].(string)
	if !ok || v == "" {
		return "", fmt.Errorf("payload needs %q (a string)", key)
	}
	return v, nil
}

func num(p map[string]any, key string) (int64, error) {
	switch v := p[key].(type) {
	case json.Number:
		return v.Int64()
	case float64:
		return int64(v), nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, fmt.Errorf("payload needs %q (a number)", key)
}

// dispatch runs one Data Workers-executable class and says how to undo it.
func (e *Executor) dispatch(ctx context.Context, req approvals.Request) (map[string]any, Undo, error) {
	p := req.Payload
	switch req.Class {
	case config.ClassPauseJob, config.ClassUnpauseJob:
		dag, err := str(p, "dag_id")
		if err != nil {
			return nil, Undo{}, err
		}
		af, err := e.backends.Airflow()
		if err != nil {
			return nil, Undo{}, err
		}
		before, err := af.GetDAG(ctx, dag)
		if err != nil {
			return nil, Undo{}, err
		}
		pause := req.Class == config.ClassPauseJob
		after, err := af.SetPaused(ctx, dag, pause)
		if err != nil {
			return nil, Undo{}, err
		}
		result := map[string]any{"dag_id": dag, "was_paused": before.IsPaused, "is_paused": after.IsPaused}
		if after.NextRun != nil {
			result["next_run"] = after.NextRun.UTC().Format(time.RFC3339)
		}
		if before.IsPaused == pause {
			return result, Undo{Description: fmt.Sprintf("nothing to undo: %s was already %s", dag, pausedWord(pause))}, nil
		}
		undoClass := config.ClassUnpauseJob
		if !pause {
			undoClass = config.ClassPauseJob
		}
		return result, Undo{Possible: true, Class: undoClass, Payload: map[string]any{"dag_id": dag},
			Description: fmt.Sprintf("%s %s again (it was %s before)", verb(!pause), dag, pausedWord(before.IsPaused))}, nil
	case config.ClassTriggerJob:
		dag, err := str(p, "dag_id")
		if err != nil {
			return nil, Undo{}, err
		}
		af, err := e.backends.Airflow()
		if err != nil {
			return nil, Undo{}, err
		}
		conf, _ := p["conf"].(map[string]any)
		note := fmt.Sprintf("Data Workers: approval #%d by %s: %s", req.ID, req.DecidedBy, req.Title)
		run, err := af.Trigger(ctx, dag, "", conf, note)
		if err != nil {
			return nil, Undo{}, err
		}
		return map[string]any{"dag_id": dag, "dag_run_id": run.DagRunID, "state": run.State},
			Undo{Description: fmt.Sprintf("a queued run cannot be unsent; mark run %s of %s failed in Airflow if it must not count", run.DagRunID, dag)}, nil
	case config.ClassTriggerDBTRun:
		job, err := num(p, "job_id")
		if err != nil {
			return nil, Undo{}, err
		}
		dc, err := e.backends.DBTCloud()
		if err != nil {
			return nil, Undo{}, err
		}
		run, err := dc.TriggerJob(ctx, job, fmt.Sprintf("Data Workers approval #%d by %s: %s", req.ID, req.DecidedBy, req.Title))
		if err != nil {
			return nil, Undo{}, err
		}
		return map[string]any{"job_id": job, "run_id": run.ID, "status": run.StatusHumanized, "href": run.Href},
			Undo{Description: fmt.Sprintf("cancel dbt Cloud run %d while it is queued or running; a finished run is rebuilt by the next run", run.ID)}, nil
	case config.ClassRegisterSchema:
		if e.backends.RegisterSchema == nil {
			return nil, Undo{}, errors.New("register_schema runs through dw-schema's register_stream_schema, which checks the same approval")
		}
		return e.backends.RegisterSchema(ctx, p)
	}
	return nil, Undo{}, fmt.Errorf("class %s has no executor", req.Class)
}

func pausedWord(p bool) string {
	if p {
		return "paused"
	}
	return "unpaused"
}

func verb(pause bool) string {
	if pause {
		return "pause"
	}
	return "unpause"
}

func (e *Executor) alreadyRun(ctx context.Context, requestID int64) (*Action, error) {
	as, err := e.query(ctx, `WHERE request_id = ? AND status IN ('succeeded', 'owner_steps')`, requestID)
	if err != nil || len(as) == 0 {
		return nil, err
	}
	return &as[0], nil
}

func (e *Executor) record(ctx context.Context, a *Action) error {
	payload, _ := json.Marshal(a.Payload)
	result, _ := json.Marshal(a.Result)
	undo, _ := json.Marshal(a.Undo)
	steps, _ := json.Marshal(a.Steps)
	return e.st.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO actions(request_id, incident_id, class, target, payload, approved_by, status,
			started_at, finished_at, result, error, undo, steps) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.RequestID, a.IncidentID, a.Class, a.Target, string(payload), a.ApprovedBy, a.Status,
			store.Timestamp(a.StartedAt), store.Timestamp(a.FinishedAt), string(result), a.Error, string(undo), string(steps))
		if err != nil {
			return fmt.Errorf("record action: %w", err)
		}
		a.ID, err = res.LastInsertId()
		return err
	})
}

// ForIncident lists an incident's actions, oldest first.
func (e *Executor) ForIncident(ctx context.Context, incidentID int64) ([]Action, error) {
	return e.query(ctx, `WHERE incident_id = ? ORDER BY id`, incidentID)
}

// MarkVerified records whether the checks after an action passed; the L3 rule reads this record.
func (e *Executor) MarkVerified(ctx context.Context, actionID int64, passed bool) error {
	v := 0
	if passed {
		v = 1
	}
	return e.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE actions SET verified = ?, verified_at = ? WHERE id = ?`, v, store.Timestamp(e.now()), actionID)
		return err
	})
}

// CleanRecordRuns is how many approved, successful and verified runs of a class on a target L3 needs
// before Data Workers may repeat it without a new approval.
const CleanRecordRuns = 3

// MayActWithoutNewApproval applies the L3 rule: the target's domain is at L3 or above, the class is
// reversible and Data Workers-executable, and the record holds at least CleanRecordRuns approved runs
// that succeeded and verified, with no failure or failed verification. Anything else needs a person.
func (e *Executor) MayActWithoutNewApproval(ctx context.Context, class, target string) (bool, string, error) {
	dom, ok := e.cfg.DomainFor(target)
	if !ok {
		return false, "no domain covers " + target, nil
	}
	if dom.Level() < 3 {
		return false, fmt.Sprintf("domain %s is at %s; acting without a new approval needs L3", dom.Name, dom.Autonomy), nil
	}
	switch class {
	case config.ClassPauseJob, config.ClassUnpauseJob, config.ClassTriggerJob, config.ClassTriggerDBTRun:
	default:
		return false, class + " is not a reversible class Data Workers runs", nil
	}
	var good, bad int
	err := e.st.DB.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(CASE WHEN status = 'succeeded' AND verified = 1 THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN status = 'failed' OR verified = 0 THEN 1 ELSE 0 END), 0)
		FROM actions WHERE class = ? AND target = ?`, class, target).Scan(&good, &bad)
	if err != nil {
		return false, "", err
	}
	if bad > 0 {
		return false, fmt.Sprintf("%d earlier %s runs on %s failed or did not verify", bad, class, target), nil
	}
	if good < CleanRecordRuns {
		return false, fmt.Sprintf("only %d approved and verified %s runs on %s; %d are needed", good, class, target, CleanRecordRuns), nil
	}
	return true, fmt.Sprintf("%d approved and verified %s runs on %s, none failed", good, class, target), nil
}

func (e *Executor) query(ctx context.Context, where string, args ...any) ([]Action, error) {
	rows, err := e.st.DB.QueryContext(ctx, `SELECT id, request_id, incident_id, class, target, payload, approved_by, status,
		started_at, finished_at, result, error, undo, steps FROM actions `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read actions: %w", err)
	}
	defer rows.Close()
	var out []Action
	for rows.Next() {
		var a Action
		var payload, started, finished, result, undo, steps string
		if err := rows.Scan(&a.ID, &a.RequestID, &a.IncidentID, &a.Class, &a.Target, &payload, &a.ApprovedBy, &a.Status,
			&started, &finished, &result, &a.Error, &undo, &steps); err != nil {
			return nil, err
		}
		_ = json.Unmarshal([]byte(payload), &a.Payload)
		_ = json.Unmarshal([]byte(result), &a.Result)
		_ = json.Unmarshal([]byte(undo), &a.Undo)
		_ = json.Unmarshal([]byte(steps), &a.Steps)
		if a.StartedAt, err = store.ParseTimestamp(started); err != nil {
			return nil, err
		}
		if a.FinishedAt, err = store.ParseTimestamp(finished); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
