// Package incidents keeps incidents in the shared store: opened from failed checks and deduplicated
// by asset and failure mode while open, with a timeline of events, statuses, the recorded diagnosis
// and cause, and the resolution, so "has this feed broken before?" can be answered from history.
package incidents

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/timeline"
)

// Statuses. Open ones keep deduplicating new failures; closed ones are history.
const (
	StatusOpen          = "open"
	StatusAcknowledged  = "acknowledged"
	StatusInvestigating = "investigating"
	StatusMitigated     = "mitigated"
	StatusResolved      = "resolved"
	StatusFalsePositive = "false_positive"
	StatusExpected      = "expected"
)

var openStatuses = []string{StatusOpen, StatusAcknowledged, StatusInvestigating, StatusMitigated}
var closedStatuses = []string{StatusResolved, StatusFalsePositive, StatusExpected}

// FailureModes are what an incident can be about: a quality check's kind, or a schema change.
var FailureModes = []string{"null_rate", "volume", "freshness", "uniqueness", "custom", "schema"}

// CheckFailureMode says which modes exist when mode is not one of them.
func CheckFailureMode(mode string) error {
	if !slices.Contains(FailureModes, mode) {
		return fmt.Errorf("failure_mode %q: use %s", mode, strings.Join(FailureModes, ", "))
	}
	return nil
}

// IsOpen reports whether status still collects new failures.
func IsOpen(status string) bool { return slices.Contains(openStatuses, status) }

// Incident is one stored incident.
type Incident struct {
	ID          int64            `json:"id"`
	Asset       string           `json:"asset"`
	FailureMode string           `json:"failure_mode"`
	Status      string           `json:"status"`
	Severity    string           `json:"severity"`
	Domain      string           `json:"domain,omitempty"`
	OpenedAt    time.Time        `json:"opened_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
	ResolvedAt  *time.Time       `json:"resolved_at,omitempty"`
	Summary     string           `json:"summary"`
	Occurrences int              `json:"occurrences" jsonschema:"How many failed checks joined this incident"`
	Cause       string           `json:"cause,omitempty"`
	Resolution  string           `json:"resolution,omitempty"`
	Events      []timeline.Event `json:"events,omitempty"`
}

// history is where an incident's timeline is kept.
var history = timeline.Log{Table: "incident_events", Key: "incident_id"}

// Opened is what OpenOrJoin did.
type Opened struct {
	ID     int64 `json:"id"`
	Opened bool  `json:"opened" jsonschema:"true when a new incident was opened, false when the failure joined an open one"`
}

// OpenOrJoin opens an incident for asset + failure mode, or joins the one still open, inside the
// caller's write transaction (so a check run and its incident commit together). The partial unique
// index on open incidents backs up the read-then-insert against other processes.
func OpenOrJoin(ctx context.Context, tx *sql.Tx, asset, mode, severity, summary, actor string, now time.Time) (Opened, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM incidents WHERE asset = ? AND failure_mode = ? AND status IN (`+placeholders(openStatuses)+`)`,
		append([]any{asset, mode}, anyList(openStatuses)...)...).Scan(&id)
	switch {
	case err == nil:
		if _, err := tx.ExecContext(ctx, `UPDATE incidents SET updated_at = ?, summary = ?, occurrences = occurrences + 1 WHERE id = ?`,
			store.Timestamp(now), summary, id); err != nil {
			return Opened{}, fmt.Errorf("join incident %d: %w", id, err)
		}
		return Opened{ID: id}, AddEventTx(ctx, tx, id, now, "joined", actor, summary)
	case errors.Is(err, sql.ErrNoRows):
		if err := tx.QueryRowContext(ctx, `INSERT INTO incidents (asset, failure_mode, status, severity, opened_at, updated_at, summary)
			VALUES (?, ?, 'open', ?, ?, ?, ?) RETURNING id`, asset, mode, severity, store.Timestamp(now), store.Timestamp(now), summary).Scan(&id); err != nil {
			return Opened{}, fmt.Errorf("open incident: %w", err)
		}
		return Opened{ID: id, Opened: true}, AddEventTx(ctx, tx, id, now, "opened", actor, summary)
	default:
		return Opened{}, fmt.Errorf("find open incident: %w", err)
	}
}

// AddEventTx appends to an incident's timeline inside a transaction.
func AddEventTx(ctx context.Context, tx *sql.Tx, id int64, at time.Time, kind, actor, detail string) error {
	return history.Append(ctx, tx, id, timeline.Event{At: at, Kind: kind, Actor: actor, Detail: detail})
}

// Store reads and updates incidents.
type Store struct {
	st  *store.Store
	now func() time.Time
}

// New returns the incident store.
func New(st *store.Store, now func() time.Time) *Store { return &Store{st: st, now: now} }

// Open opens or joins an incident in its own transaction.
func (s *Store) Open(ctx context.Context, asset, mode, severity, summary, actor string) (Opened, error) {
	if asset == "" || mode == "" {
		return Opened{}, errors.New("an incident needs an asset URN and a failure mode (e.g. null_rate, volume, freshness, uniqueness, custom)")
	}
	var o Opened
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		var err error
		o, err = OpenOrJoin(ctx, tx, asset, mode, severity, summary, actor, s.now().UTC())
		return err
	})
	return o, err
}

// AddEvent appends to an incident's timeline.
func (s *Store) AddEvent(ctx context.Context, id int64, kind, actor, detail string) error {
	return s.st.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE incidents SET updated_at = ? WHERE id = ?`, store.Timestamp(s.now()), id); err != nil {
			return err
		}
		return AddEventTx(ctx, tx, id, s.now().UTC(), kind, actor, detail)
	})
}

// SetStatus moves an incident to a new status, recording who and why. Closing statuses set
// resolved_at; a closed incident can be reopened only by a new failure (a new incident).
func (s *Store) SetStatus(ctx context.Context, id int64, status, actor, note string) (Incident, error) {
	now := s.now().UTC()
	err := s.st.Write(ctx, func(tx *sql.Tx) error { return SetStatusTx(ctx, tx, id, status, actor, note, now) })
	if err != nil {
		return Incident{}, err
	}
	return s.Get(ctx, id)
}

// SetStatusTx is SetStatus inside the caller's write transaction, so a resolution can commit
// together with what it depends on (the receipt, the actions it verifies) or not at all. It reads
// the current status inside tx: an incident another process closed meanwhile is not closed twice.
func SetStatusTx(ctx context.Context, tx *sql.Tx, id int64, status, actor, note string, now time.Time) error {
	if !slices.Contains(openStatuses, status) && !slices.Contains(closedStatuses, status) {
		return fmt.Errorf("status %q: use one of %s", status, strings.Join(append(slices.Clone(openStatuses), closedStatuses...), ", "))
	}
	var cur string
	err := tx.QueryRowContext(ctx, `SELECT status FROM incidents WHERE id = ?`, id).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("no incident #%d (get_incident_history lists them)", id)
	}
	if err != nil {
		return fmt.Errorf("read incident %d status: %w", id, err)
	}
	if !IsOpen(cur) {
		return fmt.Errorf("incident #%d is already %s; a new failure opens a new incident", id, cur)
	}
	var resolved, resolution any
	if !IsOpen(status) {
		resolved, resolution = store.Timestamp(now), note
	}
	if _, err := tx.ExecContext(ctx, `UPDATE incidents SET status = ?, updated_at = ?, resolved_at = ?, resolution = COALESCE(?, resolution) WHERE id = ?`,
		status, store.Timestamp(now), resolved, resolution, id); err != nil {
		return fmt.Errorf("set incident %d status: %w", id, err)
	}
	return AddEventTx(ctx, tx, id, now, "status", actor, fmt.Sprintf("%s → %s: %s", cur, status, note))
}

// RecordDiagnosis stores the diagnosis (JSON) and its one-line cause on the incident.
func (s *Store) RecordDiagnosis(ctx context.Context, id int64, diagnosisJSON, cause, actor string) error {
	now := s.now().UTC()
	return s.st.Write(ctx, func(tx *sql.Tx) error {
		return recordDiagnosisTx(ctx, tx, id, diagnosisJSON, cause, actor, now)
	})
}

func recordDiagnosisTx(ctx context.Context, tx *sql.Tx, id int64, diagnosisJSON, cause, actor string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE incidents SET diagnosis = ?, cause = ?, updated_at = ?,
		status = CASE WHEN status = 'open' THEN 'investigating' ELSE status END WHERE id = ?`, diagnosisJSON, cause, store.Timestamp(now), id)
	if err != nil {
		return fmt.Errorf("record diagnosis of incident %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("no incident #%d (get_incident_history lists them)", id)
	}
	return AddEventTx(ctx, tx, id, now, "diagnosed", actor, cause)
}

// Diagnosis returns the stored diagnosis JSON ("" when none).
func (s *Store) Diagnosis(ctx context.Context, id int64) (string, error) {
	var d string
	err := s.st.DB.QueryRowContext(ctx, `SELECT diagnosis FROM incidents WHERE id = ?`, id).Scan(&d)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("no incident #%d", id)
	}
	return d, err
}

// Timeline kinds of severity changes: a rule's (the blast radius) and a person's.
const (
	EventSeverity       = "severity"
	EventPersonSeverity = "severity_set"
)

// ValidSeverity reports whether sev is sev1 (worst) … sev4.
func ValidSeverity(sev string) bool {
	return sev == "sev1" || sev == "sev2" || sev == "sev3" || sev == "sev4"
}

// SetSeverity records a person's severity: it is applied as given, and no rule lowers it later.
func (s *Store) SetSeverity(ctx context.Context, id int64, severity, person, why string) error {
	if err := checkPersonSeverity(severity, person); err != nil {
		return err
	}
	now := s.now().UTC()
	return s.st.Write(ctx, func(tx *sql.Tx) error {
		return setSeverityTx(ctx, tx, id, severity, person, why, now)
	})
}

func checkPersonSeverity(severity, person string) error {
	if !ValidSeverity(severity) {
		return fmt.Errorf("severity %q: use sev1, sev2, sev3 or sev4", severity)
	}
	if strings.TrimSpace(person) == "" {
		return errors.New("a person's severity needs their name")
	}
	return nil
}

// setSeverityTx applies a person's severity inside tx and records it on the timeline.
func setSeverityTx(ctx context.Context, tx *sql.Tx, id int64, severity, person, why string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE incidents SET severity = ?, updated_at = ? WHERE id = ?`, severity, store.Timestamp(now), id)
	if err != nil {
		return fmt.Errorf("set incident %d severity: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("no incident #%d (get_incident_history lists them)", id)
	}
	return AddEventTx(ctx, tx, id, now, EventPersonSeverity, person, severity+": "+why)
}

// OpenWithSeverity opens or joins an incident as Open does, with a severity the caller chose: it is
// recorded as set by actor (SetSeverity), so no rule lowers it later. Joining an open incident applies
// it only when it is worse than the incident's current severity.
func (s *Store) OpenWithSeverity(ctx context.Context, asset, mode, severity, summary, actor string) (Opened, error) {
	if asset == "" || mode == "" {
		return Opened{}, errors.New("an incident needs an asset URN and a failure mode (e.g. null_rate, volume, freshness, uniqueness, custom)")
	}
	if err := checkPersonSeverity(severity, actor); err != nil {
		return Opened{}, err
	}
	now := s.now().UTC()
	var o Opened
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		var err error
		if o, err = OpenOrJoin(ctx, tx, asset, mode, severity, summary, actor, now); err != nil {
			return err
		}
		var cur string
		if err := tx.QueryRowContext(ctx, `SELECT severity FROM incidents WHERE id = ?`, o.ID).Scan(&cur); err != nil {
			return fmt.Errorf("read incident %d: %w", o.ID, err)
		}
		if !o.Opened && ValidSeverity(cur) && cur <= severity {
			return nil // joining never lowers the open incident's severity
		}
		return setSeverityTx(ctx, tx, o.ID, severity, actor, "given when the incident was opened", now)
	})
	return o, err
}

// PersonSeverity is the latest severity a person set on the incident ("" when none), from its timeline.
func PersonSeverity(inc Incident) (severity, person string) {
	for _, e := range inc.Events {
		if sev, ok := personSeverity(e.Kind, e.Detail); ok {
			severity, person = sev, e.Actor
		}
	}
	return severity, person
}

func personSeverity(kind, detail string) (string, bool) {
	if kind != EventPersonSeverity {
		return "", false
	}
	sev, _, ok := strings.Cut(detail, ":")
	return sev, ok && ValidSeverity(sev)
}

// personSeverityTx is PersonSeverity read inside tx, so a decision and the write it leads to see
// the same timeline.
func personSeverityTx(ctx context.Context, tx *sql.Tx, id int64) (severity, person string, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT actor, detail FROM incident_events WHERE incident_id = ? AND kind = ? ORDER BY at, id`, id, EventPersonSeverity)
	if err != nil {
		return "", "", fmt.Errorf("read incident %d timeline: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var actor, detail string
		if err := rows.Scan(&actor, &detail); err != nil {
			return "", "", err
		}
		if sev, ok := personSeverity(EventPersonSeverity, detail); ok {
			severity, person = sev, actor
		}
	}
	return severity, person, rows.Err()
}

// SetDomainAndSeverity records what a rule (the blast radius) decided, and returns the severity
// the incident then has: the rule's, except that a worse severity a person set is kept (sev1 is
// worst). Nothing is written when neither the domain nor the severity changes.
func (s *Store) SetDomainAndSeverity(ctx context.Context, id int64, domain, severity, actor, why string) (string, error) {
	if !ValidSeverity(severity) {
		return "", fmt.Errorf("severity %q: use sev1, sev2, sev3 or sev4", severity)
	}
	now := s.now().UTC()
	var applied string
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		var err error
		applied, err = ruleSeverityTx(ctx, tx, id, domain, severity, actor, why, now)
		return err
	})
	return applied, err
}

// RecordDiagnosisAndSeverity stores the diagnosis (JSON) and its cause, then the domain and the
// rule's severity as SetDomainAndSeverity does, in one transaction. severity "" (no blast radius
// could be computed) keeps the incident's severity. It returns the severity the incident then has.
func (s *Store) RecordDiagnosisAndSeverity(ctx context.Context, id int64, diagnosisJSON, cause, domain, severity, actor, why string) (string, error) {
	if severity != "" && !ValidSeverity(severity) {
		return "", fmt.Errorf("severity %q: use sev1, sev2, sev3 or sev4", severity)
	}
	now := s.now().UTC()
	var applied string
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := recordDiagnosisTx(ctx, tx, id, diagnosisJSON, cause, actor, now); err != nil {
			return err
		}
		var err error
		applied, err = ruleSeverityTx(ctx, tx, id, domain, severity, actor, why, now)
		return err
	})
	return applied, err
}

// ruleSeverityTx applies a rule's severity inside tx, reading the current severity and the
// person's in the same transaction; severity "" keeps the current one.
func ruleSeverityTx(ctx context.Context, tx *sql.Tx, id int64, domain, severity, actor, why string, now time.Time) (string, error) {
	var curSev, curDomain string
	err := tx.QueryRowContext(ctx, `SELECT severity, domain FROM incidents WHERE id = ?`, id).Scan(&curSev, &curDomain)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("no incident #%d (get_incident_history lists them)", id)
	}
	if err != nil {
		return "", fmt.Errorf("read incident %d: %w", id, err)
	}
	applied := severity
	if applied == "" {
		applied = curSev
	} else if sev, person, err := personSeverityTx(ctx, tx, id); err != nil {
		return "", err
	} else if sev != "" && sev < severity {
		applied = sev
		why += fmt.Sprintf(" (the rule gives %s; %s set by %s is kept)", severity, sev, person)
	}
	if applied == curSev && domain == curDomain {
		return applied, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE incidents SET domain = ?, severity = ?, updated_at = ? WHERE id = ?`, domain, applied, store.Timestamp(now), id); err != nil {
		return "", fmt.Errorf("set incident %d severity: %w", id, err)
	}
	return applied, AddEventTx(ctx, tx, id, now, EventSeverity, actor, fmt.Sprintf("%s → %s: %s", curSev, applied, why))
}

// Get returns one incident with its timeline.
func (s *Store) Get(ctx context.Context, id int64) (Incident, error) {
	is, err := s.query(ctx, `WHERE id = ?`, id)
	if err != nil {
		return Incident{}, err
	}
	if len(is) == 0 {
		return Incident{}, fmt.Errorf("no incident #%d (get_incident_history lists them)", id)
	}
	inc := is[0]
	if inc.Events, err = history.Read(ctx, s.st.DB, id); err != nil {
		return Incident{}, err
	}
	return inc, nil
}

// Query selects incidents for history. Empty fields do not filter.
type Query struct {
	Assets      []string // any of these assets (e.g. every asset on a lineage path)
	Domain      string
	FailureMode string
	Status      string // a status, or "open" / "closed" for the groups
	Since       time.Time
	Limit       int
}

// History returns incidents matching q, newest first.
func (s *Store) History(ctx context.Context, q Query) ([]Incident, error) {
	clause, args := historySelection(q)
	return s.query(ctx, clause, args...)
}

// historySelection is History's WHERE, order and limit: newest first, which the index on
// opened_at serves when no asset is named (migration 0018) and the asset index when one is
// (several assets' incidents are merged by a sort of theirs).
func historySelection(q Query) (string, []any) {
	var where []string
	var args []any
	if len(q.Assets) > 0 {
		where = append(where, "asset IN ("+placeholders(q.Assets)+")")
		args = append(args, anyList(q.Assets)...)
	}
	if q.Domain != "" {
		where = append(where, "domain = ?")
		args = append(args, q.Domain)
	}
	if q.FailureMode != "" {
		where = append(where, "failure_mode = ?")
		args = append(args, q.FailureMode)
	}
	switch q.Status {
	case "":
	case "open":
		where = append(where, "status IN ("+placeholders(openStatuses)+")")
		args = append(args, anyList(openStatuses)...)
	case "closed":
		where = append(where, "status IN ("+placeholders(closedStatuses)+")")
		args = append(args, anyList(closedStatuses)...)
	default:
		where = append(where, "status = ?")
		args = append(args, q.Status)
	}
	if !q.Since.IsZero() {
		where = append(where, "opened_at >= ?")
		args = append(args, store.Timestamp(q.Since))
	}
	limit := q.Limit
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	clause := ""
	if len(where) > 0 {
		clause = "WHERE " + strings.Join(where, " AND ")
	}
	return clause + fmt.Sprintf(" ORDER BY opened_at DESC, id DESC LIMIT %d", limit), args
}

func (s *Store) query(ctx context.Context, where string, args ...any) ([]Incident, error) {
	rows, err := s.st.DB.QueryContext(ctx, `SELECT id, asset, failure_mode, status, severity, domain, opened_at, updated_at,
		COALESCE(resolved_at, ''), summary, occurrences, cause, resolution FROM incidents `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read incidents: %w", err)
	}
	defer rows.Close()
	var out []Incident
	for rows.Next() {
		var i Incident
		var opened, updated, resolved string
		if err := rows.Scan(&i.ID, &i.Asset, &i.FailureMode, &i.Status, &i.Severity, &i.Domain, &opened, &updated, &resolved,
			&i.Summary, &i.Occurrences, &i.Cause, &i.Resolution); err != nil {
			return nil, err
		}
		if i.OpenedAt, err = store.ParseTimestamp(opened); err != nil {
			return nil, err
		}
		if i.UpdatedAt, err = store.ParseTimestamp(updated); err != nil {
			return nil, err
		}
		if i.ResolvedAt, err = store.ParseOptionalTimestamp(resolved); err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, rows.Err()
}

func placeholders[T any](v []T) string {
	return strings.TrimSuffix(strings.Repeat("?, ", len(v)), ", ")
}

func anyList(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}
