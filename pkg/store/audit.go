package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ToolCall is one line of the audit log.
type ToolCall struct {
	At    time.Time
	Agent string
	// Caller is the authenticated caller's name (HTTP), "" on stdio.
	Caller     string
	Tool       string
	Outcome    string // ok or tool_error
	Duration   time.Duration
	ArgsSHA256 string
	Error      string
}

// RecordToolCall appends one call to the audit log.
func (s *Store) RecordToolCall(ctx context.Context, c ToolCall) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tool_calls(at, agent, caller, tool, outcome, duration_ms, args_sha256, error)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			Timestamp(c.At), c.Agent, c.Caller, c.Tool, c.Outcome, float64(c.Duration.Microseconds())/1000, c.ArgsSHA256, c.Error)
		if err != nil {
			return fmt.Errorf("record tool call: %w", err)
		}
		return nil
	})
}

// CountToolCalls counts audit lines, optionally for one agent ("" for all), after the lines this
// process queued behind its answers are written.
func (s *Store) CountToolCalls(ctx context.Context, agent string) (int, error) {
	if err := s.AwaitWrites(ctx); err != nil {
		return 0, err
	}
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT count(*) FROM tool_calls WHERE ? = '' OR agent = ?`, agent, agent).Scan(&n)
	return n, err
}
