// Package approvals routes every proposed change to a named person and records their decision.
//
// The rules it enforces:
//   - A request carries the exact payload that would run; its SHA-256 is what an approver approves,
//     and Authorize re-hashes the payload at execution time, so any edit voids the approval.
//   - Only a named approver of the request's domain (or someone it escalated to) may decide, and only
//     with their token, whose SHA-256 is in the config. The requester can never decide its own request.
//   - A request that waits past its class's expiry escalates to the next person in the domain's
//     escalation chain; when the chain is exhausted it expires. Nothing is ever granted by time,
//     autonomy level or default.
//   - Nothing is requested or authorized for a target that a domain below L2 covers: L0 (manual) only
//     answers questions and L1 (observe) changes nothing; L2 (propose) is the first level whose
//     changes are routed and, once approved, run. Authorize re-checks this, as the config may have
//     been lowered since the request. A target no domain covers has no named approver and is
//     refused as well.
//   - The org-wide stop can be set and lifted only by an authenticated approver, never by a tool.
package approvals

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/auth"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/notify"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/timeline"
)

// Status of a request.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusRejected = "rejected"
	StatusExpired  = "expired"
)

// Proposal is what asks for approval: one action of one class on one target.
type Proposal struct {
	IncidentID int64  `json:"incident_id,omitempty"`
	Class      string `json:"class"`
	Target     string `json:"target"`
	Title      string `json:"title"`
	// Payload is exactly what would run (a DAG id and state, a schema, a statement, a diff).
	Payload map[string]any `json:"payload"`
}

// Request is a stored approval request.
type Request struct {
	ID              int64            `json:"id"`
	IncidentID      int64            `json:"incident_id,omitempty"`
	Class           string           `json:"class"`
	Executor        string           `json:"executor"`
	Target          string           `json:"target"`
	Title           string           `json:"title"`
	Payload         map[string]any   `json:"payload"`
	PayloadSHA256   string           `json:"payload_sha256"`
	Domain          string           `json:"domain"`
	Approvers       []string         `json:"approvers"`
	Copied          []string         `json:"copied"`
	Escalation      []string         `json:"escalation"`
	EscalationLevel int              `json:"escalation_level"`
	RequestedBy     string           `json:"requested_by"`
	RequestedAt     time.Time        `json:"requested_at"`
	ExpiresAt       time.Time        `json:"expires_at"`
	Status          string           `json:"status"`
	DecidedBy       string           `json:"decided_by,omitempty"`
	DecidedAt       *time.Time       `json:"decided_at,omitempty"`
	Comment         string           `json:"comment,omitempty"`
	Events          []timeline.Event `json:"events,omitempty"`
}

// history is where a request's events are kept.
var history = timeline.Log{Table: "approval_events", Key: "request_id"}

// Service is the approvals state machine over the shared store.
type Service struct {
	st     *store.Store
	cfg    *config.Config
	now    func() time.Time
	notify notify.Notifier // may be nil
}

// New builds the service. notifier may be nil.
func New(st *store.Store, cfg *config.Config, now func() time.Time, notifier notify.Notifier) *Service {
	return &Service{st: st, cfg: cfg, now: now, notify: notifier}
}

// Canonical returns the payload as compact JSON with sorted keys, and its SHA-256. Two payloads that
// mean the same JSON hash the same; any change of a value changes the hash.
func Canonical(payload map[string]any) ([]byte, string, error) {
	if len(payload) == 0 {
		return nil, "", errors.New("payload is empty: give exactly what would run (e.g. {\"dag_id\": …} for pause_job)")
	}
	b, err := json.Marshal(payload) // maps marshal with sorted keys, recursively
	if err != nil {
		return nil, "", fmt.Errorf("payload: %w", err)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]), nil
}

// decodePayload reads a stored payload, keeping numbers exact.
func decodePayload(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("stored payload is not a JSON object: %w", err)
	}
	return m, nil
}

// Request routes a proposal to the approvers of the domain its target belongs to. extraOwners
// (e.g. catalog owners of the target) are copied.
func (s *Service) Request(ctx context.Context, p Proposal, requestedBy string, extraOwners []string) (Request, error) {
	class, ok := s.cfg.Class(p.Class)
	if !ok {
		return Request{}, fmt.Errorf("unknown action class %q; use one of %s", p.Class, strings.Join(config.ActionClassNames(), ", "))
	}
	if strings.TrimSpace(p.Target) == "" || strings.TrimSpace(p.Title) == "" {
		return Request{}, errors.New("a proposal needs a target (the asset URN it changes) and a title")
	}
	payload, hash, err := Canonical(p.Payload)
	if err != nil {
		return Request{}, err
	}
	if err := CheckAutonomy(s.cfg, p.Target); err != nil {
		return Request{}, err
	}
	dom, ok := s.cfg.DomainFor(p.Target)
	if !ok {
		return Request{}, fmt.Errorf("no domain in the config covers %s: add it to a domain's assets (domains[].assets) so the request has a named approver", p.Target)
	}
	var approvers []string
	for _, a := range dom.Approvers {
		approvers = append(approvers, a.Name)
	}
	if len(approvers) == 0 {
		return Request{}, fmt.Errorf("domain %s names no approvers: add domains[].approvers with a name and token_sha256", dom.Name)
	}
	var copied []string
	for _, o := range append(slices.Clone(dom.Owners), extraOwners...) {
		if o != "" && !slices.Contains(approvers, o) && !slices.Contains(copied, o) {
			copied = append(copied, o)
		}
	}
	now := s.now().UTC()
	r := Request{
		IncidentID: p.IncidentID, Class: p.Class, Executor: class.Executor, Target: p.Target, Title: p.Title,
		PayloadSHA256: hash, Domain: dom.Name, Approvers: approvers, Copied: copied,
		Escalation: slices.Clone(dom.Escalation), RequestedBy: requestedBy, RequestedAt: now,
		ExpiresAt: now.Add(class.Expiry), Status: StatusPending,
	}
	if r.Escalation == nil {
		r.Escalation = []string{}
	}
	if r.Copied == nil {
		r.Copied = []string{}
	}
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO approval_requests(incident_id, class, target, title, payload, payload_sha256,
			domain, approvers, copied, escalation, requested_by, requested_at, expires_at, status)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending') RETURNING id`,
			nullID(r.IncidentID), r.Class, r.Target, r.Title, string(payload), hash, r.Domain, jsonList(r.Approvers),
			jsonList(r.Copied), jsonList(r.Escalation), requestedBy, store.Timestamp(now), store.Timestamp(r.ExpiresAt)).Scan(&r.ID); err != nil {
			return fmt.Errorf("store approval request: %w", err)
		}
		return addEvent(ctx, tx, r.ID, now, "requested", requestedBy,
			fmt.Sprintf("%s on %s routed to %s (copied: %s); expires %s", r.Class, r.Target, strings.Join(approvers, ", "),
				strings.Join(copied, ", "), r.ExpiresAt.Format(time.RFC3339)))
	})
	if err != nil {
		return Request{}, err
	}
	s.tell(ctx, r.ID, fmt.Sprintf("Approval needed (#%d, %s): %s — target %s. Approvers: %s. Copied: %s. Decide with `dw-incidents approvals show %d`. Payload sha256 %s.",
		r.ID, r.Class, r.Title, r.Target, strings.Join(r.Approvers, ", "), strings.Join(r.Copied, ", "), r.ID, hash))
	return s.Get(ctx, r.ID)
}

// tell notifies and records the outcome; a failed notification never fails the request.
func (s *Service) tell(ctx context.Context, id int64, text string) {
	if s.notify == nil {
		return
	}
	kind, detail := "notified", "slack"
	if err := s.notify.Notify(ctx, notify.Message{Text: text}); err != nil {
		kind, detail = "notify_failed", err.Error()
	}
	_ = s.st.Write(ctx, func(tx *sql.Tx) error { return addEvent(ctx, tx, id, s.now().UTC(), kind, "data-workers", detail) })
}

// Get returns a request with its history, after applying any escalation or expiry that is due.
func (s *Service) Get(ctx context.Context, id int64) (Request, error) {
	if err := s.refresh(ctx); err != nil {
		return Request{}, err
	}
	rs, err := s.query(ctx, `WHERE id = ?`, id)
	if err != nil {
		return Request{}, err
	}
	if len(rs) == 0 {
		return Request{}, fmt.Errorf("no approval request #%d", id)
	}
	r := rs[0]
	r.Events, err = s.events(ctx, id)
	return r, err
}

// List returns requests, newest first; status "" means all.
func (s *Service) List(ctx context.Context, status string, incidentID int64) ([]Request, error) {
	if err := s.refresh(ctx); err != nil {
		return nil, err
	}
	// Only the filters given become conditions: SQLite cannot use an index for `(? = '' OR
	// status = ?)`, and every list read (and decoded) every request ever made.
	where, args := []string{"1 = 1"}, []any{}
	if status != "" {
		where, args = append(where, "status = ?"), append(args, status)
	}
	if incidentID != 0 {
		where, args = append(where, "incident_id = ?"), append(args, incidentID)
	}
	return s.query(ctx, "WHERE "+strings.Join(where, " AND ")+" ORDER BY id DESC", args...)
}

// Decided returns the newest limit requests that are no longer pending, newest first: the
// console's list, which must not read (and decode) every request a mature store holds. The read
// walks the requests newest first and stops at the limit.
func (s *Service) Decided(ctx context.Context, limit int) ([]Request, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("approvals: decided requests: the limit must be positive, not %d", limit)
	}
	if err := s.refresh(ctx); err != nil {
		return nil, err
	}
	return s.query(ctx, `WHERE status <> ? ORDER BY id DESC LIMIT ?`, StatusPending, limit)
}

// refresh escalates or expires every pending request whose time is up. It runs on every read, so the
// state an approver or a tool sees is always current under the injected clock.
func (s *Service) refresh(ctx context.Context) error {
	now := s.now().UTC()
	due, err := s.query(ctx, `WHERE status = 'pending' AND expires_at <= ? ORDER BY id`, store.Timestamp(now))
	if err != nil || len(due) == 0 {
		return err
	}
	var notes []struct {
		id   int64
		text string
	}
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		for _, r := range due {
			class, _ := s.cfg.Class(r.Class)
			expires, level := r.ExpiresAt, r.EscalationLevel
			approvers, chain := r.Approvers, r.Escalation
			for !expires.After(now) && len(chain) > 0 {
				next := chain[0]
				chain = chain[1:]
				if !slices.Contains(approvers, next) {
					approvers = append(approvers, next)
				}
				level++
				at := expires
				expires = expires.Add(class.Expiry)
				if err := addEvent(ctx, tx, r.ID, at, "escalated", "data-workers", fmt.Sprintf("no decision by %s; escalated to %s", at.Format(time.RFC3339), next)); err != nil {
					return err
				}
				notes = append(notes, struct {
					id   int64
					text string
				}{r.ID, fmt.Sprintf("Escalated to %s: approval #%d (%s) — %s. No decision was made in time.", next, r.ID, r.Class, r.Title)})
			}
			status := StatusPending
			if !expires.After(now) {
				status = StatusExpired
				if err := addEvent(ctx, tx, r.ID, expires, "expired", "data-workers", "no decision before the escalation chain ran out; nothing was granted"); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE approval_requests SET approvers = ?, escalation = ?, escalation_level = ?, expires_at = ?, status = ?
				WHERE id = ? AND status = 'pending'`, jsonList(approvers), jsonList(chain), level, store.Timestamp(expires), status, r.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("refresh approval requests: %w", err)
	}
	for _, n := range notes {
		s.tell(ctx, n.id, n.text)
	}
	return nil
}

// Decision is a person's answer to one request.
type Decision struct {
	RequestID int64
	Approver  string
	Token     string
	Approve   bool
	// PayloadSHA256 is the hash the approver was shown; it must match the stored payload's.
	PayloadSHA256 string
	Comment       string
}

// ErrNotAuthorized is returned for a wrong token, an approver not on the request, or self-approval.
var ErrNotAuthorized = errors.New("not authorized")

// Decide records an approval or a rejection by a named approver, proving them with their token.
func (s *Service) Decide(ctx context.Context, d Decision) (Request, error) {
	if err := s.Authenticate(d.Approver, d.Token); err != nil {
		s.recordRefusal(ctx, d.RequestID, d.Approver, err.Error())
		return Request{}, fmt.Errorf("%w: %v", ErrNotAuthorized, err)
	}
	return s.DecideAuthenticated(ctx, d)
}

func (s *Service) recordRefusal(ctx context.Context, id int64, who, reason string) {
	_ = s.st.Write(ctx, func(tx *sql.Tx) error {
		var n int
		if tx.QueryRowContext(ctx, `SELECT count(*) FROM approval_requests WHERE id = ?`, id).Scan(&n); n == 0 {
			return nil
		}
		return addEvent(ctx, tx, id, s.now().UTC(), "refused", who, reason)
	})
}

// IsRequester reports whether name caused the request: it requested it itself, or an agent asked on
// its behalf ("dw-incidents for alice" over HTTP). A requester never decides their own request.
func (r Request) IsRequester(name string) bool {
	return auth.ActedFor(r.RequestedBy, name)
}

// DecideAuthenticated records a decision for an approver whose identity the caller has already
// proven with their token (the console's signed-in session). Only human entry points call it.
func (s *Service) DecideAuthenticated(ctx context.Context, d Decision) (Request, error) {
	r, err := s.Get(ctx, d.RequestID)
	if err != nil {
		return Request{}, err
	}
	refuse := func(reason string) (Request, error) {
		s.recordRefusal(ctx, r.ID, d.Approver, reason)
		return Request{}, fmt.Errorf("%w: %s", ErrNotAuthorized, reason)
	}
	if r.IsRequester(d.Approver) {
		return refuse(d.Approver + " requested this change and cannot decide it")
	}
	if !slices.Contains(r.Approvers, d.Approver) {
		return refuse(fmt.Sprintf("%s is not an approver of request #%d (approvers: %s)", d.Approver, r.ID, strings.Join(r.Approvers, ", ")))
	}
	if r.Status != StatusPending {
		return Request{}, fmt.Errorf("request #%d is %s; it can no longer be decided (request a new approval)", r.ID, r.Status)
	}
	if d.Approve && d.PayloadSHA256 != r.PayloadSHA256 {
		return refuse(fmt.Sprintf("the payload you approved (sha256 %s) is not the one stored (sha256 %s): review it again with `approvals show %d`",
			short(d.PayloadSHA256), short(r.PayloadSHA256), r.ID))
	}
	status, kind := StatusRejected, "rejected"
	if d.Approve {
		status, kind = StatusApproved, "approved"
	}
	now := s.now().UTC()
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE approval_requests SET status = ?, decided_by = ?, decided_at = ?, comment = ?
			WHERE id = ? AND status = 'pending' AND payload_sha256 = ?`, status, d.Approver, store.Timestamp(now), d.Comment, r.ID, r.PayloadSHA256)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("request #%d changed while deciding; review it again", r.ID)
		}
		return addEvent(ctx, tx, r.ID, now, kind, d.Approver, d.Comment)
	})
	if err != nil {
		return Request{}, err
	}
	return s.Get(ctx, r.ID)
}

// Authenticate checks a named approver's token against the SHA-256 in the config.
func (s *Service) Authenticate(name, token string) error {
	a, ok := s.cfg.Approver(name)
	if !ok {
		return fmt.Errorf("%q is not a named approver in any domain of the config", name)
	}
	if a.TokenSHA256 == "" {
		return fmt.Errorf("approver %s has no token_sha256 in the config; add one (printf %%s \"$TOKEN\" | sha256sum)", name)
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(strings.ToLower(a.TokenSHA256))) != 1 {
		return fmt.Errorf("wrong token for approver %s", name)
	}
	return nil
}

// ErrVoided means the payload about to run is not the one that was approved.
var ErrVoided = errors.New("approval voided")

// ErrAutonomy means a domain covering the target is below L2, so no change to it is routed or run.
var ErrAutonomy = errors.New("autonomy too low for changes")

// ProposeLevel is the lowest autonomy at which changes are routed to an approver and run once
// approved (L2 propose). L0 manual answers questions only; L1 observe changes nothing.
const ProposeLevel = 2

// CheckAutonomy refuses a target when any domain covering it is below L2 (every covering domain
// must allow changes, not only the first, which routes the request), naming the domain, its level
// and the config key to raise. A target no domain covers is refused too: it has no named approver.
func CheckAutonomy(cfg *config.Config, target string) error {
	covered := false
	for i, d := range cfg.Domains {
		if !slices.ContainsFunc(d.Assets, func(p string) bool { return config.MatchPattern(p, target) }) {
			continue
		}
		covered = true
		if d.Level() < ProposeLevel {
			return fmt.Errorf("%w: domain %s (covering %s) is at %q; L0 (manual) answers questions only and L1 (observe) changes nothing, "+
				"so nothing is requested or run for it: raise domains[%d].autonomy (%s) to L2 or above if changes should be proposed to its approvers",
				ErrAutonomy, d.Name, target, d.Autonomy, i, d.Name)
		}
	}
	if !covered {
		return fmt.Errorf("%w: no domain in the config covers %s, so it has no named approver: add it to a domain's assets (domains[].assets) at autonomy L2 or above",
			ErrAutonomy, target)
	}
	return nil
}

// Authorize checks, right before execution, that request id is approved for exactly this payload.
func (s *Service) Authorize(ctx context.Context, id int64, payload map[string]any) (Request, error) {
	r, err := s.Get(ctx, id)
	if err != nil {
		return Request{}, err
	}
	if r.Status != StatusApproved {
		return r, fmt.Errorf("request #%d is %s, not approved: nothing runs without a named approval", id, r.Status)
	}
	// The config may have been lowered since the request was routed and approved.
	if err := CheckAutonomy(s.cfg, r.Target); err != nil {
		return r, fmt.Errorf("request #%d (approved by %s) does not run: %w", id, r.DecidedBy, err)
	}
	_, hash, err := Canonical(payload)
	if err != nil {
		return r, err
	}
	if hash != r.PayloadSHA256 {
		return r, fmt.Errorf("%w: the payload changed since %s approved request #%d (approved sha256 %s, now %s); request a new approval",
			ErrVoided, r.DecidedBy, id, short(r.PayloadSHA256), short(hash))
	}
	return r, nil
}

func (s *Service) query(ctx context.Context, where string, args ...any) ([]Request, error) {
	rows, err := s.st.DB.QueryContext(ctx, `SELECT id, COALESCE(incident_id, 0), class, target, title, payload, payload_sha256, domain,
		approvers, copied, escalation, escalation_level, requested_by, requested_at, expires_at, status, decided_by, decided_at, comment
		FROM approval_requests `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read approval requests: %w", err)
	}
	defer rows.Close()
	var out []Request
	for rows.Next() {
		var r Request
		var payload, approvers, copied, chain, reqAt, expAt, decAt string
		if err := rows.Scan(&r.ID, &r.IncidentID, &r.Class, &r.Target, &r.Title, &payload, &r.PayloadSHA256, &r.Domain,
			&approvers, &copied, &chain, &r.EscalationLevel, &r.RequestedBy, &reqAt, &expAt, &r.Status, &r.DecidedBy, &decAt, &r.Comment); err != nil {
			return nil, err
		}
		if r.Payload, err = decodePayload(payload); err != nil {
			return nil, err
		}
		_ = json.Unmarshal([]byte(approvers), &r.Approvers)
		_ = json.Unmarshal([]byte(copied), &r.Copied)
		_ = json.Unmarshal([]byte(chain), &r.Escalation)
		if r.RequestedAt, err = store.ParseTimestamp(reqAt); err != nil {
			return nil, err
		}
		if r.ExpiresAt, err = store.ParseTimestamp(expAt); err != nil {
			return nil, err
		}
		if r.DecidedAt, err = store.ParseOptionalTimestamp(decAt); err != nil {
			return nil, err
		}
		if c, ok := s.cfg.Class(r.Class); ok {
			r.Executor = c.Executor
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Service) events(ctx context.Context, id int64) ([]timeline.Event, error) {
	return history.Read(ctx, s.st.DB, id)
}

func addEvent(ctx context.Context, tx *sql.Tx, id int64, at time.Time, kind, actor, detail string) error {
	return history.Append(ctx, tx, id, timeline.Event{At: at, Kind: kind, Actor: actor, Detail: detail})
}

func jsonList(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}
