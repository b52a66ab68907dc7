package lake

import (
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Load is one snapshot read as a load: when it was committed and what it added.
type Load struct {
	SnapshotID   int64     `json:"snapshot_id"`
	ParentID     *int64    `json:"parent_id,omitempty"`
	CommittedAt  time.Time `json:"committed_at"`
	Operation    string    `json:"operation"`
	AddedRecords int64     `json:"added_records"`
	AddedFiles   int64     `json:"added_files"`
	TotalRecords *int64    `json:"total_records,omitempty"`
	SchemaID     *int      `json:"schema_id,omitempty"`
}

// LoadHistory lists the table's snapshots oldest first: freshness (the newest commit) and volume
// (records added per commit) without a query.
func LoadHistory(t *Table) []Load {
	snaps := t.Metadata().Snapshots()
	out := make([]Load, 0, len(snaps))
	for _, s := range snaps {
		l := Load{SnapshotID: s.SnapshotID, ParentID: s.ParentSnapshotID, CommittedAt: time.UnixMilli(s.TimestampMs).UTC(), SchemaID: s.SchemaID}
		if s.Summary != nil {
			l.Operation = s.Operation()
			l.AddedRecords = summaryInt(s.Summary, "added-records")
			l.AddedFiles = summaryInt(s.Summary, "added-data-files")
			if v, ok := s.Summary["total-records"]; ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					l.TotalRecords = &n
				}
			}
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CommittedAt.Before(out[j].CommittedAt) })
	return out
}

func summaryInt(p map[string]string, key string) int64 {
	n, _ := strconv.ParseInt(p[key], 10, 64)
	return n
}

// SchemaChange is a field added or dropped between the schemas of two consecutive snapshots.
type SchemaChange struct {
	Change string `json:"change" jsonschema:"added or dropped"`
	Field  string `json:"field"`
	// FieldID is Iceberg's id for the field, stable across renames.
	FieldID    int       `json:"field_id"`
	Type       string    `json:"type"`
	SnapshotID int64     `json:"snapshot_id" jsonschema:"The first snapshot written with the new schema"`
	At         time.Time `json:"at"`
	FromSchema int       `json:"from_schema"`
	ToSchema   int       `json:"to_schema"`
}

// SchemaHistory walks the snapshots oldest first and reports each field that appears or
// disappears when the schema id changes (Tableflow's schema evolution), naming the snapshot.
// A snapshot without a schema id (format v1) is read as the schema before it.
func SchemaHistory(t *Table) []SchemaChange {
	schemas := t.Schemas()
	var out []SchemaChange
	prev := -1
	for _, l := range LoadHistory(t) {
		if l.SchemaID == nil || *l.SchemaID == prev {
			continue
		}
		cur := *l.SchemaID
		if prev >= 0 {
			out = append(out, diffSchemas(schemas[prev], schemas[cur], l, prev, cur)...)
		}
		prev = cur
	}
	// A schema change with no snapshot after it yet (the table's current schema) is history too.
	if cs := t.Schema(); cs != nil && prev >= 0 && cs.ID != prev {
		at := Load{SnapshotID: 0}
		if s := t.CurrentSnapshot(); s != nil {
			at = Load{SnapshotID: s.SnapshotID, CommittedAt: time.UnixMilli(t.Metadata().LastUpdatedMs).UTC()}
		}
		out = append(out, diffSchemas(schemas[prev], cs, at, prev, cs.ID)...)
	}
	return out
}

func diffSchemas(from, to *Schema, at Load, fromID, toID int) []SchemaChange {
	if from == nil || to == nil {
		return nil
	}
	fields := func(s *Schema) map[int]Field {
		m := map[int]Field{}
		for _, f := range s.Fields() {
			m[f.ID] = f
		}
		return m
	}
	a, b := fields(from), fields(to)
	var out []SchemaChange
	mk := func(change string, f Field) SchemaChange {
		return SchemaChange{Change: change, Field: f.Name, FieldID: f.ID, Type: f.Type.String(), SnapshotID: at.SnapshotID, At: at.CommittedAt,
			FromSchema: fromID, ToSchema: toID}
	}
	for _, f := range from.Fields() {
		if _, ok := b[f.ID]; !ok {
			out = append(out, mk("dropped", f))
		}
	}
	for _, f := range to.Fields() {
		if _, ok := a[f.ID]; !ok {
			out = append(out, mk("added", f))
		}
	}
	return out
}

// Describe summarises a change in one sentence.
func (c SchemaChange) Describe(tableName string) string {
	return fmt.Sprintf("field %s (%s) %s in %s at snapshot %d (%s), schema %d → %d", c.Field, c.Type, c.Change, tableName, c.SnapshotID,
		c.At.Format(time.RFC3339), c.FromSchema, c.ToSchema)
}
