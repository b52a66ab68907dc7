package store

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// Migration 0010 rebuilds actions: the copy keeps the id counter (a deleted action's id is never
// reused), fills each row's payload hash from its approval, and makes a claim exclusive.
func TestActionsRebuildKeepsTheIDCounterAndFillsPayloadHashes(t *testing.T) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	migs, err := loadMigrations(migrationFiles, migrationDir(SQLite))
	if err != nil {
		t.Fatal(err)
	}
	var m10 string
	for _, m := range migs {
		if m.version == 10 {
			m10 = m.sql
			break
		}
		if _, err := db.Exec(m.sql); err != nil {
			t.Fatalf("migration %d: %v", m.version, err)
		}
	}
	if m10 == "" {
		t.Fatal("no migration 0010")
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO approval_requests(class, target, title, payload, payload_sha256, domain, approvers, copied, escalation,
		requested_by, requested_at, expires_at, status) VALUES ('pause_job', 'airflow:dag.x', 't', '{}', 'abc123', 'd', '[]', '[]', '[]',
		'r', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', 'approved')`)
	for i := 0; i < 3; i++ {
		exec(`INSERT INTO actions(request_id, class, target, payload, approved_by, status, started_at, finished_at)
			VALUES (1, 'pause_job', 'airflow:dag.x', '{}', 'a', 'failed', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`)
	}
	exec(`DELETE FROM actions WHERE id = 3`)
	exec(m10)
	var hash string
	if err := db.QueryRow(`SELECT payload_sha256 FROM actions WHERE id = 1`).Scan(&hash); err != nil || hash != "abc123" {
		t.Errorf("payload_sha256 = %q, %v; want the approval's abc123", hash, err)
	}
	res, err := db.Exec(`INSERT INTO actions(request_id, class, target, payload, approved_by, status, started_at, finished_at)
		VALUES (1, 'pause_job', 'airflow:dag.x', '{}', 'a', 'running', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := res.LastInsertId(); id != 4 {
		t.Errorf("new action id = %d, want 4 (id 3 was used before the rebuild)", id)
	}
	// A second claim on the same approval is refused by the index.
	if _, err := db.Exec(`INSERT INTO actions(request_id, class, target, payload, approved_by, status, started_at, finished_at)
		VALUES (1, 'pause_job', 'airflow:dag.x', '{}', 'a', 'succeeded', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`); !IsUniqueViolation(err) {
		t.Errorf("second claim on request 1: %v, want a unique violation", err)
	}
}
