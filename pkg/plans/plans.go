// Package plans is the remediation plan of an incident: the ordered proposals, each saying what
// would change, who executes it, whether and how it can be undone and what it touches downstream,
// and the checks that must pass before the incident counts as fixed.
//
// plans.go is the model and its storage, the record the generator, request_approval and remediation
// all read. generate.go turns a recorded diagnosis into a plan, with one file per kind of proposal:
// propose_hold.go (pause jobs pushing to external sinks), propose_restore.go (the schema restore),
// propose_statement.go (the corrected statement), propose_dbt.go (the dbt change), propose_values.go
// (a filter widened for a new value). client.go
// validates proposals a caller writes, by the same rules. Executing a plan is pkg/remediation's.
package plans

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/store"
)

// Who executes a proposal.
const (
	ExecutorDataWorkers = "data_workers"
	ExecutorOwner       = "owner"
)

// Proposal is one step of a plan. Class, Target, Title and Payload are exactly what request_approval
// routes; the approval binds to the payload's SHA-256.
type Proposal struct {
	Order   int            `json:"order"`
	Class   string         `json:"class"`
	Target  string         `json:"target"`
	Title   string         `json:"title"`
	Payload map[string]any `json:"payload"`
	// Executor is data_workers or owner (owner-only classes are never executed by Data Workers).
	Executor   string `json:"executor" jsonschema:"data_workers (runs it once approved) or owner (Data Workers hands over the steps and verifies)"`
	Reversible bool   `json:"reversible"`
	Undo       string `json:"undo"`
	// Why ties the step to the diagnosis or the blast radius.
	Why string `json:"why"`
	// BlastRadius lists the downstream assets the step protects or changes.
	BlastRadius []string `json:"blast_radius"`
	// Origin is generated (mechanical, from the diagnosis and the graph) or client (authored by the caller).
	Origin string `json:"origin" jsonschema:"generated or client"`
	// Validation says how the payload was checked (parsed SQL, applied diff, compatible schema).
	Validation string `json:"validation" jsonschema:"How the payload was checked: parsed SQL, applied diff, compatible schema, known job"`
	// Mappings are how the step reads each removed field, and who the mapping came from.
	Mappings []Replacement `json:"mappings,omitempty" jsonschema:"How each removed field is read and where the mapping came from (the schema's rename, pkg/units, or the client's field_mappings)"`
	// NeedsMapping names the removed fields whose replacement is not known: the step is in the plan
	// so the plan is whole, but request_approval refuses it until the plan is proposed again with
	// field_mappings for them.
	NeedsMapping []string `json:"needs_mapping,omitempty" jsonschema:"Removed fields with no known replacement: re-propose with field_mappings before this step can be routed"`
	// ByHand is set on a step only its owner can do (hold a Spark or dbt job): what to do, the
	// job's next run and its owners. It is never routed or run by Data Workers.
	ByHand string `json:"by_hand,omitempty" jsonschema:"A step for the job's owner to do by hand (never routed or run): the job, its next run and who owns it"`
}

// Routable says why a step cannot be sent to approvers yet ("" when it can).
func (p Proposal) Routable() string {
	if p.ByHand != "" {
		return fmt.Sprintf("step %d is the owner's to do by hand, not an action Data Workers runs: %s", p.Order, p.ByHand)
	}
	if len(p.NeedsMapping) == 0 {
		return ""
	}
	return fmt.Sprintf("step %d (%s on %s) needs a mapping for %s: run propose_remediation again with field_mappings {%q: \"<SQL over the new schema's fields>\"}",
		p.Order, p.Class, p.Target, strings.Join(p.NeedsMapping, ", "), p.NeedsMapping[0])
}

// Check is a quality check verify_incident re-runs before resolving the incident.
type Check struct {
	// Asset is the warehouse URN of the table.
	Asset string `json:"asset"`
	// Check is null_rate, volume, freshness, uniqueness or custom.
	Check   string   `json:"check"`
	Columns []string `json:"columns,omitempty"`
	// KeyColumns is the key a uniqueness check tests.
	KeyColumns []string `json:"key_columns,omitempty"`
	// Window is today, yesterday or a duration such as 6h (quality.WindowSpec).
	Window string `json:"window,omitempty"`
	// Supersedes names the incident asset this check stands in for when the plan moves the data to a
	// new asset (a corrected statement writing a -v2 sink): the old asset keeps its bad rows, so the
	// incident is judged on where the data now lands.
	Supersedes string `json:"supersedes,omitempty" jsonschema:"The incident asset this check stands in for when the plan moves the data"`
	Why        string `json:"why"`
}

// Plan is the ordered proposals and checks for one incident.
type Plan struct {
	ID         int64      `json:"id"`
	IncidentID int64      `json:"incident_id"`
	CreatedAt  time.Time  `json:"created_at"`
	CreatedBy  string     `json:"created_by"`
	Proposals  []Proposal `json:"proposals"`
	Checks     []Check    `json:"checks"`
	// Notes are what the generator could not do and why (a backend not configured, no statement SQL…).
	Notes []string `json:"notes" jsonschema:"What could not be generated and why"`
}

// ErrNoPlan is returned when an incident has no stored plan.
var ErrNoPlan = errors.New("no remediation plan")

// Save stores p as the incident's latest plan and returns it with its ID and creation time.
func Save(ctx context.Context, st *store.Store, p Plan, now time.Time) (Plan, error) {
	p.CreatedAt = now.UTC().Truncate(time.Second)
	p.ID = 0
	raw, err := json.Marshal(p)
	if err != nil {
		return Plan{}, fmt.Errorf("encode plan: %w", err)
	}
	err = st.Write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO remediation_plans (incident_id, created_at, created_by, plan) VALUES (?, ?, ?, ?) RETURNING id`,
			p.IncidentID, store.Timestamp(p.CreatedAt), p.CreatedBy, string(raw)).Scan(&p.ID)
	})
	if err != nil {
		return Plan{}, fmt.Errorf("store the plan of incident #%d: %w", p.IncidentID, err)
	}
	return p, nil
}

// Latest returns the incident's most recent plan, or ErrNoPlan.
func Latest(ctx context.Context, st *store.Store, incidentID int64) (Plan, error) {
	return one(ctx, st, `incident_id = ? ORDER BY id DESC LIMIT 1`, incidentID)
}

// Get returns one plan by ID, or ErrNoPlan.
func Get(ctx context.Context, st *store.Store, id int64) (Plan, error) {
	return one(ctx, st, `id = ?`, id)
}

func one(ctx context.Context, st *store.Store, where string, arg int64) (Plan, error) {
	var id, incident int64
	var at, raw string
	err := st.DB.QueryRowContext(ctx, `SELECT id, incident_id, created_at, plan FROM remediation_plans WHERE `+where, arg).Scan(&id, &incident, &at, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return Plan{}, ErrNoPlan
	}
	if err != nil {
		return Plan{}, fmt.Errorf("read remediation plan: %w", err)
	}
	var p Plan
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return Plan{}, fmt.Errorf("remediation plan #%d is not valid JSON: %w", id, err)
	}
	p.ID, p.IncidentID = id, incident
	if p.CreatedAt, err = store.ParseTimestamp(at); err != nil {
		return Plan{}, err
	}
	return p, nil
}
