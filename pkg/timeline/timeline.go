// Package timeline is the one shape of a record's history — an incident's timeline, an approval
// request's events — and the one way such a history is written and read.
package timeline

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/dataworkers/dw/pkg/store"
)

// Event is one line of a history.
type Event struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Actor  string    `json:"actor"`
	Detail string    `json:"detail,omitempty"`
}

// Log is a history table: Table holds the events (columns at, kind, actor, detail and an id that
// orders events at the same instant), Key names the record each belongs to. Both are fixed names
// chosen by the package that owns the table, never input.
type Log struct {
	Table string
	Key   string
}

// Append writes one event for record id inside tx.
func (l Log) Append(ctx context.Context, tx *sql.Tx, id int64, e Event) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO `+l.Table+` (`+l.Key+`, at, kind, actor, detail) VALUES (?, ?, ?, ?, ?)`,
		id, store.Timestamp(e.At), e.Kind, e.Actor, e.Detail)
	if err != nil {
		return fmt.Errorf("%s of #%d: %w", l.Table, id, err)
	}
	return nil
}

// Read returns record id's events, oldest first.
func (l Log) Read(ctx context.Context, db *sql.DB, id int64) ([]Event, error) {
	rows, err := db.QueryContext(ctx, `SELECT at, kind, actor, detail FROM `+l.Table+` WHERE `+l.Key+` = ? ORDER BY at, id`, id)
	if err != nil {
		return nil, fmt.Errorf("read %s of #%d: %w", l.Table, id, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var at string
		if err := rows.Scan(&at, &e.Kind, &e.Actor, &e.Detail); err != nil {
			return nil, err
		}
		if e.At, err = store.ParseTimestamp(at); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
