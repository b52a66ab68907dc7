package registry

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/store"
)

// Seen is what the store knows about one version: when it was first and last listed.
type Seen struct {
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
}

// RecordVersions stores the versions just read, keeping the first time each was seen (the
// registry keeps no timestamps) and refreshing last_seen and the soft-delete flag. It returns
// what the store now holds for each version.
func RecordVersions(ctx context.Context, st *store.Store, now time.Time, versions []SubjectVersion) (map[int]Seen, error) {
	ts := store.Timestamp(now)
	err := st.Write(ctx, func(tx *sql.Tx) error {
		for _, v := range versions {
			fp := fingerprint(v)
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_versions(subject, version, id, schema_type, fingerprint, first_seen, last_seen, deleted, schema)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT(subject, version) DO UPDATE SET last_seen = excluded.last_seen, deleted = excluded.deleted,
					id = excluded.id, fingerprint = excluded.fingerprint, schema = excluded.schema, schema_type = excluded.schema_type`,
				v.Subject, v.Version, v.ID, string(v.Type), fp, ts, ts, v.Deleted, v.Schema)
			if err != nil {
				return fmt.Errorf("record %s version %d: %w", v.Subject, v.Version, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[int]Seen{}
	if len(versions) == 0 {
		return out, nil
	}
	rows, err := st.DB.QueryContext(ctx, `SELECT version, first_seen, last_seen FROM schema_versions WHERE subject = ?`, versions[0].Subject)
	if err != nil {
		return nil, fmt.Errorf("read schema_versions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		var f, l string
		if err := rows.Scan(&v, &f, &l); err != nil {
			return nil, err
		}
		ft, err := store.ParseTimestamp(f)
		if err != nil {
			return nil, err
		}
		lt, err := store.ParseTimestamp(l)
		if err != nil {
			return nil, err
		}
		out[v] = Seen{FirstSeen: ft, LastSeen: lt}
	}
	return out, rows.Err()
}

// fingerprint identifies the schema text; an unparsable text still gets a hash of its bytes.
func fingerprint(v SubjectVersion) string {
	s, err := schema.Parse(v.Type, v.Schema)
	if err != nil {
		s = &schema.Schema{Format: v.Type, Text: v.Schema}
	}
	return s.Fingerprint()
}
