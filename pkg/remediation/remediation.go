// Package remediation executes approved actions, and only those policy allows: classes Data Workers
// may run (Airflow pause/unpause/trigger, dbt Cloud job runs) once a named approval covers exactly the
// payload, whose target is the asset the payload changes (plans.CheckTarget, re-checked right
// before dispatch), in a domain at L2 or above (approvals.CheckAutonomy, re-checked by Authorize),
// and nothing while the org-wide stop is on. Owner-only classes (connectors, offsets, topics,
// Flink statements, Tableflow, dbt code) are never executed: they come back as steps for the owner.
// At L3 a plan step of a reversible class may run without a new approval when its class and target
// have a clean record of approved, verified runs (see RunPlanStep). Every action is recorded with its
// result, its undo and the authority it ran on.
package remediation

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/orchestrators"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/store"
)

// Action outcomes. An action is claimed as running before it is dispatched and finished afterwards.
const (
	StatusRunning    = "running"
	StatusSucceeded  = "succeeded"
	StatusFailed     = "failed"
	StatusOwnerSteps = "owner_steps" // owner-only: Data Workers hands over the steps and verifies later
)

// What an action ran on.
const (
	// AuthorityApproval: a named approver approved exactly this payload.
	AuthorityApproval = receipts.AuthorityApproval
	// AuthorityL3: no new approval; the domain is at L3 and the class and target have a clean record.
	AuthorityL3 = receipts.AuthorityL3
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
	FinishedAt time.Time      `json:"finished_at,omitzero"` // unset while the action runs
	Result     map[string]any `json:"result,omitempty"`
	Error      string         `json:"error,omitempty"`
	Undo       Undo           `json:"undo"`
	// Steps are the owner's instructions for owner-only classes.
	Steps []string `json:"steps,omitempty"`
	// Authority is approval (RequestID names it) or l3_clean_record (Rule and Record say why).
	Authority string `json:"authority"`
	// Rule is, for an L3 action, the rule applied and the record it relied on.
	Rule string `json:"rule,omitempty"`
	// Record lists the approved, verified actions an L3 action relied on.
	Record []int64 `json:"record,omitempty"`
	// PayloadSHA256 is the hash of the payload dispatched (the approved one, or the plan step's).
	PayloadSHA256 string `json:"payload_sha256"`
	// PlanID and PlanOrder name the plan step an L3 action carried out.
	PlanID    int64 `json:"plan_id,omitempty"`
	PlanOrder int   `json:"plan_order,omitempty"`
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
// against the stored payload, and the action is claimed (stop checked again, nothing run yet on
// this approval) in one write right before dispatch, so an approval is dispatched once.
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
		ApprovedBy: req.DecidedBy, StartedAt: e.now().UTC(), Authority: AuthorityApproval, PayloadSHA256: req.PayloadSHA256}
	already := func(tx *sql.Tx) (int64, error) {
		return existing(ctx, tx, `request_id = ? AND status IN ('running', 'succeeded', 'owner_steps')`, requestID)
	}
	alreadyErr := func(done Action) error {
		return fmt.Errorf("request #%d already ran as action #%d (%s); an approval is used once", requestID, done.ID, done.Status)
	}
	class, _ := e.cfg.Class(req.Class)
	if config.IsOwnerOnly(req.Class) || class.Executor != config.ExecutorDataWorkers {
		a.Status = StatusOwnerSteps
		a.Steps = ownerSteps(req)
		a.Undo = Undo{Description: "the owner reverts their change; Data Workers verifies afterwards"}
		a.FinishedAt = a.StartedAt
		if done, err := e.claim(ctx, &a, already); err != nil || done != nil {
			if done != nil {
				return *done, alreadyErr(*done)
			}
			return a, err
		}
		return a, nil
	}
	return e.execute(ctx, a, already, alreadyErr, fmt.Sprintf("Data Workers: approval #%d by %s: %s", req.ID, req.DecidedBy, req.Title))
}

// execute claims the action (see claim), dispatches it, and records how it finished. An action
// someone else already claimed comes back with alreadyErr's error and is not dispatched.
func (e *Executor) execute(ctx context.Context, a Action, already func(*sql.Tx) (int64, error), alreadyErr func(Action) error, note string) (Action, error) {
	// The target decided whose approval (or which domain's L3 rule) this ran on; a payload that
	// changes another asset (a request row written around request_approval's validation) is refused.
	if err := plans.CheckTarget(a.Class, a.Target, a.Payload); err != nil {
		return Action{}, fmt.Errorf("%w: %s on %s is not dispatched: %w; request a new approval whose target is the asset the payload changes",
			approvals.ErrVoided, a.Class, a.Target, err)
	}
	a.Status = StatusRunning
	a.FinishedAt = a.StartedAt
	done, err := e.claim(ctx, &a, already)
	if err != nil {
		return Action{}, err
	}
	if done != nil {
		return *done, alreadyErr(*done)
	}
	result, undo, runErr := e.dispatch(ctx, a.Class, a.Payload, note)
	a.FinishedAt, a.Result, a.Undo = e.now().UTC(), result, undo
	a.Status = StatusSucceeded
	if runErr != nil {
		a.Status, a.Error = StatusFailed, runErr.Error()
	}
	if err := e.finish(ctx, a); err != nil {
		return a, fmt.Errorf("action #%d (%s on %s) was dispatched (%s) but its outcome was not recorded: %w", a.ID, a.Class, a.Target, a.Status, err)
	}
	if runErr != nil {
		return a, fmt.Errorf("action #%d (%s on %s) failed: %w", a.ID, a.Class, a.Target, runErr)
	}
	return a, nil
}

// claim records a (status running, or owner_steps for a hand-over) in one write that first checks
// the org-wide stop and then that already finds nothing: the write lock is held from the check to
// the insert, so of two processes racing for the same approval or plan step exactly one claims it
// (the unique indexes of migration 0010 back this up). When already finds an action, claim records
// nothing and returns that action.
func (e *Executor) claim(ctx context.Context, a *Action, already func(*sql.Tx) (int64, error)) (*Action, error) {
	var doneID int64
	err := e.st.Write(ctx, func(tx *sql.Tx) error {
		// Read under the write lock: no other writer can turn the stop on before this commits.
		if err := e.approvals.CheckNotStopped(ctx); err != nil {
			return err
		}
		id, err := already(tx)
		if err != nil || id != 0 {
			doneID = id
			return err
		}
		return insert(ctx, tx, a)
	})
	if store.IsUniqueViolation(err) {
		return nil, fmt.Errorf("%s on %s was claimed by another run at the same moment; it is not dispatched twice", a.Class, a.Target)
	}
	if err != nil || doneID == 0 {
		return nil, err
	}
	done, err := e.query(ctx, `WHERE id = ?`, doneID)
	if err != nil || len(done) == 0 {
		return nil, fmt.Errorf("read action #%d: %v", doneID, err)
	}
	return &done[0], nil
}

// existing returns the id of the first action matching where (0: none), read inside the claim.
func existing(ctx context.Context, tx *sql.Tx, where string, args ...any) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM actions WHERE `+where+` ORDER BY id LIMIT 1`, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read actions: %w", err)
	}
	return id, nil
}

// finish records how a claimed action ended.
func (e *Executor) finish(ctx context.Context, a Action) error {
	result, _ := json.Marshal(a.Result)
	undo, _ := json.Marshal(a.Undo)
	return e.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE actions SET status = ?, finished_at = ?, result = ?, error = ?, undo = ? WHERE id = ?`,
			a.Status, store.Timestamp(a.FinishedAt), string(result), a.Error, string(undo), a.ID)
		if err != nil {
			return fmt.Errorf("record the outcome of action #%d: %w", a.ID, err)
		}
		return nil
	})
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

// dispatch runs one Data Workers-executable class and says how to undo it. note is what the
// orchestrator records as the reason (the approval, or the L3 rule).
func (e *Executor) dispatch(ctx context.Context, class string, p map[string]any, note string) (map[string]any, Undo, error) {
	switch class {
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
		pause := class == config.ClassPauseJob
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
		run, err := dc.TriggerJob(ctx, job, truncate(note, 255))
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
	return nil, Undo{}, fmt.Errorf("class %s has no executor", class)
}

// truncate keeps s within n bytes (dbt Cloud refuses a cause over 255 characters), cutting on a
// UTF-8 boundary so the text stays valid.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
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

// insert records a new action and sets its id.
func insert(ctx context.Context, tx *sql.Tx, a *Action) error {
	payload, _ := json.Marshal(a.Payload)
	result, _ := json.Marshal(a.Result)
	undo, _ := json.Marshal(a.Undo)
	steps, _ := json.Marshal(a.Steps)
	if a.Record == nil {
		a.Record = []int64{}
	}
	record, _ := json.Marshal(a.Record)
	err := tx.QueryRowContext(ctx, `INSERT INTO actions(request_id, incident_id, class, target, payload, approved_by, status,
		started_at, finished_at, result, error, undo, steps, authority, rule, record, payload_sha256, plan_id, plan_order)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		nullID(a.RequestID), a.IncidentID, a.Class, a.Target, string(payload), a.ApprovedBy, a.Status,
		store.Timestamp(a.StartedAt), store.Timestamp(a.FinishedAt), string(result), a.Error, string(undo), string(steps),
		a.Authority, a.Rule, string(record), a.PayloadSHA256, nullID(a.PlanID), nullID(int64(a.PlanOrder))).Scan(&a.ID)
	if err != nil {
		return fmt.Errorf("record action: %w", err)
	}
	return nil
}

// ForIncident lists an incident's actions, oldest first.
func (e *Executor) ForIncident(ctx context.Context, incidentID int64) ([]Action, error) {
	return e.query(ctx, `WHERE incident_id = ? ORDER BY id`, incidentID)
}

// MarkVerified records whether the checks after an action passed; the L3 rule reads this record.
// A failed verification is never raised to passed afterwards: a later resolution does not erase
// that the checks right after the action failed.
func (e *Executor) MarkVerified(ctx context.Context, actionID int64, passed bool) error {
	return e.st.Write(ctx, func(tx *sql.Tx) error { return MarkVerifiedTx(ctx, tx, actionID, passed, e.now()) })
}

// MarkVerifiedTx is MarkVerified inside the caller's write transaction (the verification that
// resolves an incident marks its actions in the same commit as the resolution and the receipt).
func MarkVerifiedTx(ctx context.Context, tx *sql.Tx, actionID int64, passed bool, now time.Time) error {
	v := 0
	if passed {
		v = 1
	}
	if _, err := tx.ExecContext(ctx, `UPDATE actions SET verified = ?, verified_at = ? WHERE id = ? AND (verified IS NULL OR verified = 1)`,
		v, store.Timestamp(now), actionID); err != nil {
		return fmt.Errorf("mark action #%d verified: %w", actionID, err)
	}
	return nil
}

// CleanRecordRuns is how many approved, successful and verified runs of a class on a target L3 needs
// before Data Workers may repeat it without a new approval.
const CleanRecordRuns = 3

// MayActWithoutNewApproval applies the L3 rule: every domain covering the target is at L3 or above,
// the class is one L3 may run (config.L3Eligible) and Data Workers executes it, and the record of the
// class on the target (case-insensitive, as domains match) holds at least CleanRecordRuns approved
// runs of exactly this payload (payloadSHA256) that succeeded and verified, with no failure, failed
// verification or run still awaiting verification (of any payload). Anything else needs a person.
// The reason names the rule and the record.
func (e *Executor) MayActWithoutNewApproval(ctx context.Context, class, target, payloadSHA256 string) (bool, string, error) {
	ok, why, _, err := e.cleanRecord(ctx, class, target, payloadSHA256)
	return ok, why, err
}

// cleanRecord is MayActWithoutNewApproval with the ids of the approved, verified runs it relied on.
func (e *Executor) cleanRecord(ctx context.Context, class, target, payloadSHA256 string) (bool, string, []int64, error) {
	doms := e.cfg.DomainsFor(target)
	if len(doms) == 0 {
		return false, "no domain covers " + target, nil, nil
	}
	for _, d := range doms {
		if d.Level() < 3 {
			return false, fmt.Sprintf("domain %s (covering %s) is at %s; acting without a new approval needs L3 in every domain covering it",
				d.Name, target, d.Autonomy), nil, nil
		}
	}
	dom := doms[0]
	if !config.L3Eligible(class) || config.IsOwnerOnly(class) {
		return false, class + " is not a reversible class Data Workers runs", nil, nil
	}
	if c, _ := e.cfg.Class(class); c.Executor != config.ExecutorDataWorkers {
		return false, fmt.Sprintf("%s is executed by its owner in this config (action_classes.%s.executor)", class, class), nil, nil
	}
	rows, err := e.st.DB.QueryContext(ctx, `SELECT id, status, authority, verified, payload_sha256 FROM actions
		WHERE class = ? AND lower(target) = lower(?) ORDER BY id`, class, target)
	if err != nil {
		return false, "", nil, fmt.Errorf("read the record of %s on %s: %w", class, target, err)
	}
	defer rows.Close()
	var good []int64
	var failed, unverified, pending int
	for rows.Next() {
		var id int64
		var status, authority, hash string
		var verified sql.NullInt64
		if err := rows.Scan(&id, &status, &authority, &verified, &hash); err != nil {
			return false, "", nil, err
		}
		switch {
		case status == StatusFailed:
			failed++
		case status == StatusRunning:
			pending++
		case status != StatusSucceeded:
		case verified.Valid && verified.Int64 == 0:
			unverified++
		case !verified.Valid:
			pending++
		case authority == AuthorityApproval && hash == payloadSHA256:
			// Only runs a person approved, of exactly this payload, build the record; L3 runs and other
			// payloads can spoil it but never earn it.
			good = append(good, id)
		}
	}
	if err := rows.Err(); err != nil {
		return false, "", nil, err
	}
	if failed+unverified+pending > 0 {
		return false, fmt.Sprintf("the record of %s on %s is not clean: %d runs failed, %d did not verify, %d still await verification",
			class, target, failed, unverified, pending), nil, nil
	}
	if len(good) < CleanRecordRuns {
		return false, fmt.Sprintf("only %d approved and verified %s runs on %s with this payload (sha256 %s); %d are needed",
			len(good), class, target, shortHash(payloadSHA256), CleanRecordRuns), nil, nil
	}
	return true, fmt.Sprintf("L3 clean record: domain %s is at %s and %s on %s has %d approved and verified runs of this payload (actions %s), none failed or unverified",
		dom.Name, dom.Autonomy, class, target, len(good), idList(good)), good, nil
}

func idList(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = "#" + strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ", ")
}

// ErrNeedsApproval is returned when a plan step may not run without a named approval.
var ErrNeedsApproval = errors.New("needs a named approval")

// PlanStep names one proposal of a stored plan and the payload hash the caller decided on.
type PlanStep struct {
	IncidentID    int64
	PlanID        int64
	Order         int
	PayloadSHA256 string
}

// RequestFor returns the index in reqs of the approval request routed for plan step p: the first
// not yet in used with the same class, target and payload hash; -1 when there is none. It marks the
// request used, so walking a plan in order pairs each request with one step. This is the one rule
// that ties a plan step to its request (remediate, verify's receipt and the console read it).
func RequestFor(p plans.Proposal, reqs []approvals.Request, used map[int64]bool) int {
	_, hash, err := approvals.Canonical(p.Payload)
	if err != nil {
		return -1
	}
	for i, r := range reqs {
		if !used[r.ID] && r.Class == p.Class && strings.EqualFold(r.Target, p.Target) && r.PayloadSHA256 == hash {
			used[r.ID] = true
			return i
		}
	}
	return -1
}

// Unrequested returns the plan's proposals for which the incident has no approval request (see
// RequestFor), in plan order: the only steps L3 may consider (a request, whatever its state, means a
// person is deciding or has decided, and L3 never goes around them).
func Unrequested(p plans.Plan, reqs []approvals.Request) []plans.Proposal {
	steps := slices.Clone(p.Proposals)
	slices.SortStableFunc(steps, func(a, b plans.Proposal) int { return a.Order - b.Order })
	var out []plans.Proposal
	used := map[int64]bool{}
	for _, pr := range steps {
		if RequestFor(pr, reqs, used) < 0 {
			out = append(out, pr)
		}
	}
	return out
}

// RunPlanStep carries out one step of the incident's latest plan without a new approval, which only
// the L3 rule allows (see MayActWithoutNewApproval). The same guards as an approved run apply: the
// org-wide stop is checked first, and the payload dispatched must hash to what the caller decided on
// (the stored plan is read again right before dispatch). A step runs once: it is claimed, with the
// stop checked again, in one write before dispatch. The action records the rule and the record it
// relied on, and its undo.
func (e *Executor) RunPlanStep(ctx context.Context, step PlanStep) (Action, error) {
	if err := e.approvals.CheckNotStopped(ctx); err != nil {
		return Action{}, err
	}
	latest, err := plans.Latest(ctx, e.st, step.IncidentID)
	if err != nil {
		return Action{}, fmt.Errorf("plan step %d of plan #%d: %w", step.Order, step.PlanID, err)
	}
	if latest.ID != step.PlanID {
		return Action{}, fmt.Errorf("%w: plan #%d was replaced by plan #%d; read the latest plan again", ErrNeedsApproval, step.PlanID, latest.ID)
	}
	i := slices.IndexFunc(latest.Proposals, func(p plans.Proposal) bool { return p.Order == step.Order })
	if i < 0 {
		return Action{}, fmt.Errorf("plan #%d has no step %d", step.PlanID, step.Order)
	}
	p := latest.Proposals[i]
	_, hash, err := approvals.Canonical(p.Payload)
	if err != nil {
		return Action{}, fmt.Errorf("plan #%d step %d: %w", step.PlanID, step.Order, err)
	}
	if hash != step.PayloadSHA256 {
		return Action{}, fmt.Errorf("%w: the payload of plan #%d step %d changed (decided on sha256 %s, stored %s)",
			approvals.ErrVoided, step.PlanID, step.Order, shortHash(step.PayloadSHA256), shortHash(hash))
	}
	reqs, err := e.approvals.List(ctx, "", step.IncidentID)
	if err != nil {
		return Action{}, err
	}
	if RequestFor(p, reqs, map[int64]bool{}) >= 0 {
		return Action{}, fmt.Errorf("%w: %s on %s has an approval request on incident #%d; it runs only as that request decides", ErrNeedsApproval, p.Class, p.Target, step.IncidentID)
	}
	if p.Executor != plans.ExecutorDataWorkers || !config.L3Eligible(p.Class) {
		return Action{}, fmt.Errorf("%w: %s is not a reversible class Data Workers runs (plan #%d step %d, executed by %s); "+
			"L3 runs only pause_job, unpause_job, trigger_job and trigger_dbt_run steps executed by data_workers",
			ErrNeedsApproval, p.Class, step.PlanID, step.Order, p.Executor)
	}
	already := func(tx *sql.Tx) (int64, error) {
		return existing(ctx, tx, `plan_id = ? AND plan_order = ? AND authority = ? AND status IN ('running', 'succeeded')`, step.PlanID, step.Order, AuthorityL3)
	}
	alreadyErr := func(done Action) error {
		return fmt.Errorf("plan #%d step %d already ran as action #%d (%s)", step.PlanID, step.Order, done.ID, done.Status)
	}
	// Read first for a clear answer; the claim below is what guarantees it.
	if done, err := e.query(ctx, `WHERE plan_id = ? AND plan_order = ? AND authority = ? AND status IN ('running', 'succeeded')`,
		step.PlanID, step.Order, AuthorityL3); err != nil || len(done) > 0 {
		if err != nil {
			return Action{}, err
		}
		return done[0], alreadyErr(done[0])
	}
	ok, rule, record, err := e.cleanRecord(ctx, p.Class, p.Target, hash)
	if err != nil {
		return Action{}, err
	}
	if !ok {
		return Action{}, fmt.Errorf("%w: %s", ErrNeedsApproval, rule)
	}
	a := Action{IncidentID: step.IncidentID, Class: p.Class, Target: p.Target, Payload: p.Payload, StartedAt: e.now().UTC(),
		Authority: AuthorityL3, Rule: rule, Record: record, PayloadSHA256: hash, PlanID: step.PlanID, PlanOrder: step.Order}
	return e.execute(ctx, a, already, alreadyErr, fmt.Sprintf("Data Workers (L3, no new approval): plan #%d step %d: %s", step.PlanID, step.Order, p.Title))
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func (e *Executor) query(ctx context.Context, where string, args ...any) ([]Action, error) {
	rows, err := e.st.DB.QueryContext(ctx, `SELECT id, COALESCE(request_id, 0), incident_id, class, target, payload, approved_by, status,
		started_at, finished_at, result, error, undo, steps, authority, rule, record, payload_sha256, COALESCE(plan_id, 0), COALESCE(plan_order, 0)
		FROM actions `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read actions: %w", err)
	}
	defer rows.Close()
	var out []Action
	for rows.Next() {
		var a Action
		var payload, started, finished, result, undo, steps, record string
		if err := rows.Scan(&a.ID, &a.RequestID, &a.IncidentID, &a.Class, &a.Target, &payload, &a.ApprovedBy, &a.Status,
			&started, &finished, &result, &a.Error, &undo, &steps, &a.Authority, &a.Rule, &record, &a.PayloadSHA256, &a.PlanID, &a.PlanOrder); err != nil {
			return nil, err
		}
		_ = json.Unmarshal([]byte(record), &a.Record)
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
