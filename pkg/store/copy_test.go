package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
)

func mustExec(t *testing.T, st *Store, q string, args ...any) {
	t.Helper()
	if err := st.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(q, args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func count(t *testing.T, st *Store, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := st.DB.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// A local SQLite store moves into an empty PostgreSQL one whole: every row with its id (foreign
// keys and the claim rowids included), the id counters past the copied ids, and a second copy
// refused unless told to replace.
func TestCopyMovesASQLiteStoreIntoPostgres(t *testing.T) {
	ctx := context.Background()
	src, dst := openOn(t, SQLite), openOn(t, PostgreSQL)
	mustExec(t, src, `INSERT INTO graph_assets (id, urn, system, first_seen) VALUES (7, 'kafka:topic/a', 'kafka', 't'), (9, 'warehouse:x/db.s.t', 'warehouse', 't')`)
	mustExec(t, src, `INSERT INTO graph_asset_claims (asset_id, source, observed_at) VALUES (7, 's1', 't'), (9, 's1', 't')`)
	mustExec(t, src, `INSERT INTO graph_edges (from_id, to_id, kind, source, observed_at) VALUES (7, 9, 'reads', 's1', 't')`)
	mustExec(t, src, `UPDATE graph_generation SET n = 4, logged_from = 2`)
	mustExec(t, src, `INSERT INTO incidents (id, asset, failure_mode, status, severity, opened_at, updated_at) VALUES (41, 'a', 'volume', 'open', 'sev2', 't', 't')`)
	mustExec(t, src, `INSERT INTO incident_events (incident_id, at, kind, actor, detail) VALUES (41, 't', 'opened', 'dw', 'it''s ? here')`)
	mustExec(t, src, `INSERT INTO check_runs (asset, started_at, finished_at, status) VALUES ('a', 't', 't', 'fail')`)
	mustExec(t, src, `INSERT INTO metric_points (run_id, asset, metric, at, value, status, baseline, incident_id) VALUES (1, 'a', 'rows', 't', 12.5, 'fail', NULL, 41)`)
	for i := 0; i < 450; i++ { // more than one batch
		if err := src.RecordToolCall(ctx, ToolCall{Agent: "dw-quality", Tool: "t", Outcome: "ok", ArgsSHA256: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := Copy(ctx, src, dst, CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byTable := map[string]int64{}
	for _, c := range counts {
		byTable[c.Table] = c.Rows
	}
	if byTable["tool_calls"] != 450 || byTable["graph_asset_claims"] != 2 || byTable["metric_points"] != 1 || byTable["schema_migrations"] != 0 {
		t.Fatalf("copied %+v", counts)
	}
	for _, q := range []string{`SELECT count(*) FROM tool_calls`, `SELECT count(*) FROM graph_edges`, `SELECT count(*) FROM incident_events`} {
		if a, b := count(t, src, q), count(t, dst, q); a != b {
			t.Errorf("%s: source %d, target %d", q, a, b)
		}
	}
	if n := count(t, dst, `SELECT n FROM graph_generation WHERE id = 1`); n != 4 {
		t.Errorf("graph generation = %d, want the source's 4", n)
	}
	if got := count(t, dst, `SELECT count(*) FROM incident_events WHERE incident_id = 41 AND detail = 'it''s ? here'`); got != 1 {
		t.Errorf("incident event not copied verbatim")
	}
	if a, b := count(t, src, `SELECT max(rowid) FROM graph_asset_claims`), count(t, dst, `SELECT max(rowid) FROM graph_asset_claims`); a != b {
		t.Errorf("claim rowids: source %d, target %d", a, b)
	}
	// The next incident the team store opens gets a fresh id.
	var id int64
	if err := dst.Write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRow(`INSERT INTO incidents (asset, failure_mode, status, severity, opened_at, updated_at) VALUES ('b', 'volume', 'open', 'sev2', 't', 't') RETURNING id`).Scan(&id)
	}); err != nil || id != 42 {
		t.Fatalf("next incident id = %d, %v; want 42", id, err)
	}
	// The target's triggers keep its series versions: one bump for the copied point of asset a,
	// one for its copied incident.
	version := func() int64 { return count(t, dst, `SELECT version FROM quality_series_versions WHERE asset = 'a'`) }
	before := version()
	if before != 2 {
		t.Errorf("target's series version of a = %d, want 2", before)
	}
	if _, err := Copy(ctx, src, dst, CopyOptions{}); !errors.Is(err, ErrTargetNotEmpty) {
		t.Fatalf("second copy: %v, want ErrTargetNotEmpty", err)
	}
	if count(t, dst, `SELECT count(*) FROM incidents`) != 2 {
		t.Fatal("the refused copy changed the target")
	}
	if _, err := Copy(ctx, src, dst, CopyOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, dst, `SELECT count(*) FROM incidents`); n != 1 {
		t.Fatalf("after replace: %d incidents, want the source's 1", n)
	}
	if after := version(); after <= before {
		t.Errorf("series version of a went from %d to %d across a replacing copy: it must only grow", before, after)
	}
}

// A row the target cannot take aborts the whole copy: the target stays empty.
func TestAFailedCopyLeavesTheTargetEmpty(t *testing.T) {
	ctx := context.Background()
	src, dst := openOn(t, SQLite), openOn(t, PostgreSQL)
	mustExec(t, src, `INSERT INTO incidents (id, asset, failure_mode, status, severity, opened_at, updated_at) VALUES (1, 'a', 'volume', 'open', 'sev2', 't', 't')`)
	// SQLite's dynamic typing lets text into an INTEGER column; PostgreSQL refuses it.
	mustExec(t, src, `INSERT INTO incident_events (incident_id, at, kind, actor) VALUES (1, 't', 'opened', 'dw')`)
	mustExec(t, src, `INSERT INTO tool_calls (at, agent, tool, outcome, duration_ms, args_sha256) VALUES ('t', 'a', 't', 'ok', 'slow', 'h')`)
	if _, err := Copy(ctx, src, dst, CopyOptions{}); err == nil {
		t.Fatal("want the bad row refused")
	}
	if n := count(t, dst, `SELECT count(*) FROM incidents`); n != 0 {
		t.Fatalf("a failed copy left %d incidents in the target", n)
	}
}
