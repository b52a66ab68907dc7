package approvals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/dataworkers/dw/pkg/store"
)

// StopState is the org-wide stop.
type StopState struct {
	Stopped bool      `json:"stopped"`
	By      string    `json:"by,omitempty"`
	At      time.Time `json:"at,omitempty"`
	Reason  string    `json:"reason,omitempty"`
}

// ErrStopped is returned by every dispatcher while the org-wide stop is on.
var ErrStopped = errors.New("the org-wide stop is on")

// SetStop turns the org-wide stop on or off. Only an authenticated, named approver can do it; no MCP
// tool calls this.
func (s *Service) SetStop(ctx context.Context, approver, token string, stopped bool, reason string) (StopState, error) {
	if err := s.Authenticate(approver, token); err != nil {
		return StopState{}, fmt.Errorf("%w: %v", ErrNotAuthorized, err)
	}
	value := "off"
	if stopped {
		value = "on"
	}
	now := s.now().UTC()
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO policy_state(key, value, updated_by, updated_at, reason) VALUES ('org_stop', ?, ?, ?, ?)
			ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_by = excluded.updated_by,
			updated_at = excluded.updated_at, reason = excluded.reason`, value, approver, store.Timestamp(now), reason)
		return err
	})
	if err != nil {
		return StopState{}, fmt.Errorf("set org-wide stop: %w", err)
	}
	return s.Stop(ctx)
}

// Stop reads the org-wide stop.
func (s *Service) Stop(ctx context.Context) (StopState, error) {
	var value, by, at, reason string
	err := s.st.DB.QueryRowContext(ctx, `SELECT value, updated_by, updated_at, reason FROM policy_state WHERE key = 'org_stop'`).Scan(&value, &by, &at, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return StopState{}, nil
	}
	if err != nil {
		return StopState{}, fmt.Errorf("read org-wide stop: %w", err)
	}
	t, err := store.ParseTimestamp(at)
	if err != nil {
		return StopState{}, err
	}
	return StopState{Stopped: value == "on", By: by, At: t, Reason: reason}, nil
}

// CheckNotStopped is what every dispatcher calls right before acting.
func (s *Service) CheckNotStopped(ctx context.Context) error {
	st, err := s.Stop(ctx)
	if err != nil {
		return err
	}
	if st.Stopped {
		return fmt.Errorf("%w (set by %s at %s: %s): nothing is dispatched until a named approver runs `dw-incidents resume`",
			ErrStopped, st.By, st.At.Format(time.RFC3339), st.Reason)
	}
	return nil
}
