package quality

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DimensionSpecOf rebuilds the dimension spec a recorded keys_moved point came from: its subject
// is the key column, or "<measure> by <key>" when a measure's sum was tracked per key.
func DimensionSpecOf(subject string) DimensionSpec {
	if measure, key, ok := strings.Cut(subject, " by "); ok && measure != "" && key != "" {
		return DimensionSpec{Column: key, Measure: measure}
	}
	return DimensionSpec{Column: subject}
}

// ReconcileSpecsOf are the specs a recorded reconcile_ratio point may have come from, the likelier
// first: its subject is the upstream table (rows compared), or "<upstream>.<column>" (sums
// compared), and a dotted table name reads the same as a table and a column, so the caller tries
// each until the warehouse resolves one.
func ReconcileSpecsOf(subject string) []ReconcileSpec {
	out := []ReconcileSpec{{Upstream: subject}}
	if i := strings.LastIndex(subject, "."); i > 0 && i < len(subject)-1 {
		out = append(out, ReconcileSpec{Upstream: subject[:i], Column: subject[i+1:], UpstreamColumn: subject[i+1:]})
	}
	return out
}

// SchemaColumn is one column of the snapshot the schema check keeps on a table's asset.
type SchemaColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// RecordedSchema is what the schema check keeps on a table's asset: the columns at its last run
// and the latest change it saw (when, in one sentence, and column by column).
type RecordedSchema struct {
	Columns   []SchemaColumn
	ChangedAt time.Time
	Change    string
	Changes   []ColumnChange
}

// ReadRecordedSchema reads the schema check's attributes of an asset; an asset the check never
// ran on has no columns and no changes.
func ReadRecordedSchema(attrs map[string]string) (RecordedSchema, error) {
	var s RecordedSchema
	if v := attrs[AttrColumns]; v != "" {
		if err := json.Unmarshal([]byte(v), &s.Columns); err != nil {
			return s, fmt.Errorf("attribute %s is unreadable: %w", AttrColumns, err)
		}
	}
	if v := attrs[AttrSchemaChanges]; v != "" {
		if err := json.Unmarshal([]byte(v), &s.Changes); err != nil {
			return s, fmt.Errorf("attribute %s is unreadable: %w", AttrSchemaChanges, err)
		}
	}
	if v := attrs[AttrSchemaChangedAt]; v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return s, fmt.Errorf("attribute %s is unreadable: %w", AttrSchemaChangedAt, err)
		}
		s.ChangedAt = t
	}
	s.Change = attrs[AttrSchemaChange]
	return s, nil
}

// Harmful is true for a change that can break a reader: a column removed, retyped or made nullable.
func (ch ColumnChange) Harmful() bool {
	return ch.Change == "removed" || ch.Change == "retyped" || ch.Change == "made_nullable"
}

// Describe is the change in one phrase ("weight removed (was BIGINT)").
func (ch ColumnChange) Describe() string { return describeChange(ch) }

// Undone says whether the columns cols have reverted ch: a removed column is back with its old
// type, a retyped one has its old type again, one made nullable is NOT NULL again.
func (ch ColumnChange) Undone(cols []SchemaColumn) bool {
	i := slices.IndexFunc(cols, func(c SchemaColumn) bool { return strings.EqualFold(c.Name, ch.Column) })
	switch ch.Change {
	case "removed", "retyped":
		return i >= 0 && strings.EqualFold(cols[i].Type, ch.From)
	case "made_nullable":
		return i >= 0 && !cols[i].Nullable
	case "added":
		return i < 0
	case "made_not_null":
		return i >= 0 && cols[i].Nullable
	}
	return false
}
