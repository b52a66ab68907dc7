package receipts

import (
	"encoding/json"
	"fmt"
	"time"
)

// Body is what a receipt records, in the order an auditor reads it.
type Body struct {
	Incident IncidentSummary `json:"incident"`
	// PlanID is the remediation plan the proposals come from (0 when there was none).
	PlanID       int64      `json:"plan_id,omitempty"`
	Cause        string     `json:"cause"`
	Evidence     []Evidence `json:"evidence"`
	Proposals    []Proposal `json:"proposals"`
	Approvals    []Approval `json:"approvals"`
	Actions      []Action   `json:"actions"`
	ChecksBefore []Check    `json:"checks_before"`
	ChecksAfter  []Check    `json:"checks_after"`
	Undo         []string   `json:"undo"`
	Outcome      string     `json:"outcome"`
}

// IncidentSummary identifies the incident.
type IncidentSummary struct {
	ID          int64      `json:"id"`
	Asset       string     `json:"asset"`
	FailureMode string     `json:"failure_mode"`
	Severity    string     `json:"severity"`
	Summary     string     `json:"summary"`
	OpenedAt    time.Time  `json:"opened_at"`
	ResolvedAt  *time.Time `json:"resolved_at,omitempty"`
}

// Evidence is one fact the diagnosis rests on, with where it came from.
type Evidence struct {
	Kind   string `json:"kind"`
	Source string `json:"source"`
	Detail string `json:"detail"`
}

// Proposal is one step of the plan.
type Proposal struct {
	Order      int    `json:"order,omitempty"`
	Class      string `json:"class"`
	Target     string `json:"target"`
	Title      string `json:"title"`
	Executor   string `json:"executor"`
	Reversible bool   `json:"reversible,omitempty"`
	Undo       string `json:"undo,omitempty"`
	Why        string `json:"why,omitempty"`
	// PayloadSHA256 is the hash of exactly what would run.
	PayloadSHA256 string `json:"payload_sha256,omitempty"`
	// RequestID is the approval request routed for it (0: none, e.g. a step L3 ran under its rule).
	RequestID int64 `json:"request_id,omitempty"`
}

// Approval is one decision by a named person.
type Approval struct {
	RequestID     int64      `json:"request_id"`
	Class         string     `json:"class"`
	Title         string     `json:"title"`
	PayloadSHA256 string     `json:"payload_sha256"`
	Status        string     `json:"status"`
	DecidedBy     string     `json:"decided_by,omitempty"`
	DecidedAt     *time.Time `json:"decided_at,omitempty"`
}

// What an action ran on. pkg/remediation records these values and the receipt renders them.
const (
	// AuthorityApproval: a named approver approved exactly this payload.
	AuthorityApproval = "approval"
	// AuthorityL3: no new approval; the domain is at L3 and the class and target have a clean record.
	AuthorityL3 = "l3_clean_record"
)

// Action is one executed or handed-over action.
type Action struct {
	ID     int64  `json:"id"`
	Class  string `json:"class"`
	Target string `json:"target"`
	Status string `json:"status"`
	Result string `json:"result"`
	Undo   string `json:"undo"`
	// Authority is approval (request RequestID, decided by ApprovedBy) or l3_clean_record (Rule says
	// which rule and which record of approved, verified runs it relied on).
	Authority     string `json:"authority,omitempty"`
	RequestID     int64  `json:"request_id,omitempty"`
	ApprovedBy    string `json:"approved_by,omitempty"`
	Rule          string `json:"rule,omitempty"`
	PayloadSHA256 string `json:"payload_sha256,omitempty"`
}

// Check is one metric as measured before or after the fix.
type Check struct {
	At      time.Time `json:"at"`
	Asset   string    `json:"asset"`
	Metric  string    `json:"metric"`
	Subject string    `json:"subject,omitempty"`
	Value   float64   `json:"value"`
	Status  string    `json:"status"`
	Why     string    `json:"why,omitempty"`
}

// DecodeBody reads a stored receipt's body.
func DecodeBody(r Receipt) (Body, error) {
	var b Body
	if err := json.Unmarshal(r.Body, &b); err != nil {
		return Body{}, fmt.Errorf("receipt #%d: %w", r.Seq, err)
	}
	return b, nil
}

// AuthorityLine says in words what an action ran on.
func (a Action) AuthorityLine() string {
	switch a.Authority {
	case AuthorityL3:
		return "no new approval (L3): " + a.Rule
	case AuthorityApproval:
		return fmt.Sprintf("approval #%d by %s", a.RequestID, a.ApprovedBy)
	}
	return ""
}
