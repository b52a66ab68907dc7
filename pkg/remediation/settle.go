package remediation

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/store"
)

// Interrupted lists actions still marked running: claimed and dispatched, but the process that ran
// them stopped before recording how they ended. Each blocks its step or approval from running again
// until a person settles it.
func (e *Executor) Interrupted(ctx context.Context) ([]Action, error) {
	return e.query(ctx, `WHERE status = ? ORDER BY id`, StatusRunning)
}

// Settle records, for an action left running, the outcome a person saw in the target system
// (succeeded or failed), with who and why. Nothing is dispatched: a failed outcome lets the approval
// or plan step run again on the next remediate; a succeeded one stays unverified until the checks
// run. Only running actions can be settled, so a recorded outcome is never rewritten.
func (e *Executor) Settle(ctx context.Context, id int64, outcome, who, reason string) (Action, error) {
	if outcome != StatusSucceeded && outcome != StatusFailed {
		return Action{}, fmt.Errorf("outcome %q: use succeeded or failed, as the target system shows it", outcome)
	}
	if strings.TrimSpace(who) == "" || strings.TrimSpace(reason) == "" {
		return Action{}, errors.New("settling an action needs who and why")
	}
	note := fmt.Sprintf("settled as %s by %s at %s: %s (the process running it stopped before recording the outcome)",
		outcome, who, store.Timestamp(e.now()), reason)
	err := e.st.Write(ctx, func(tx *sql.Tx) error {
		var status, result string
		err := tx.QueryRowContext(ctx, `SELECT status, result FROM actions WHERE id = ?`, id).Scan(&status, &result)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("action #%d does not exist", id)
		}
		if err != nil {
			return fmt.Errorf("read action #%d: %w", id, err)
		}
		if status != StatusRunning {
			return fmt.Errorf("action #%d is %s, not running: its outcome is already recorded", id, status)
		}
		errText := ""
		if outcome == StatusFailed {
			errText = note
		}
		res := map[string]any{}
		_ = json.Unmarshal([]byte(result), &res) // a running action has no result yet ("null")
		if res == nil {
			res = map[string]any{}
		}
		res["settled"] = note
		raw, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE actions SET status = ?, finished_at = ?, error = ?, result = ? WHERE id = ?`,
			outcome, store.Timestamp(e.now()), errText, string(raw), id)
		if err != nil {
			return fmt.Errorf("settle action #%d: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return Action{}, err
	}
	as, err := e.query(ctx, `WHERE id = ?`, id)
	if err != nil || len(as) == 0 {
		return Action{}, fmt.Errorf("read action #%d after settling it: %v", id, err)
	}
	return as[0], nil
}
