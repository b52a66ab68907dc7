package store

import (
	"testing"
)

// Every insert, update and delete of a metric point or an incident bumps the version of the asset
// it belongs to (both assets when an update moves it), whoever writes it: pkg/quality's cached
// baseline series are only as exact as this. A run deleted with its points (the foreign key's
// cascade) bumps it too.
func TestSeriesVersionsFollowEveryWrite(t *testing.T) { engines(t, testSeriesVersionsFollowEveryWrite) }

func testSeriesVersionsFollowEveryWrite(t *testing.T, d Dialect) {
	st := openOn(t, d)
	version := func(asset string) int64 {
		t.Helper()
		return count(t, st, `SELECT coalesce((SELECT version FROM quality_series_versions WHERE asset = ?), 0)`, asset)
	}
	steps := []struct {
		sql  string
		want map[string]int64
	}{
		{`INSERT INTO check_runs (id, asset, started_at, finished_at, status) VALUES (1, 'a', 't', 't', 'pass')`, map[string]int64{"a": 0}},
		{`INSERT INTO metric_points (run_id, asset, metric, at, value, status) VALUES (1, 'a', 'rows', 't1', 1, 'pass'), (1, 'a', 'rows', 't2', 2, 'pass')`, map[string]int64{"a": 2}},
		{`UPDATE metric_points SET value = 3 WHERE at = 't1'`, map[string]int64{"a": 3}},
		{`UPDATE metric_points SET asset = 'b' WHERE at = 't2'`, map[string]int64{"a": 4, "b": 1}},
		{`DELETE FROM metric_points WHERE asset = 'b'`, map[string]int64{"a": 4, "b": 2}},
		{`INSERT INTO incidents (id, asset, failure_mode, status, severity, opened_at, updated_at) VALUES (5, 'a', 'volume', 'open', 'sev2', 't', 't')`, map[string]int64{"a": 5}},
		{`UPDATE incidents SET status = 'false_positive' WHERE id = 5`, map[string]int64{"a": 6}},
		{`UPDATE incidents SET asset = 'b' WHERE id = 5`, map[string]int64{"a": 7, "b": 3}},
		{`DELETE FROM incidents WHERE id = 5`, map[string]int64{"a": 7, "b": 4}},
		{`DELETE FROM check_runs WHERE id = 1`, map[string]int64{"a": 8, "b": 4}},
	}
	for _, s := range steps {
		mustExec(t, st, s.sql)
		for asset, want := range s.want {
			if got := version(asset); got != want {
				t.Fatalf("after %s: version of %s = %d, want %d", s.sql, asset, got, want)
			}
		}
	}
}

// A TRUNCATE (PostgreSQL only; it fires no row trigger) moves every asset's version, directly or
// through CASCADE from check_runs.
func TestSeriesVersionsFollowATruncate(t *testing.T) {
	engines(t, func(t *testing.T, d Dialect) {
		if d != PostgreSQL {
			t.Skip("SQLite has no TRUNCATE; its DELETE runs the row triggers")
		}
		st := openOn(t, d)
		version := func(asset string) int64 {
			t.Helper()
			return count(t, st, `SELECT coalesce((SELECT version FROM quality_series_versions WHERE asset = ?), 0)`, asset)
		}
		mustExec(t, st, `INSERT INTO check_runs (id, asset, started_at, finished_at, status) VALUES (1, 'a', 't', 't', 'pass')`)
		mustExec(t, st, `INSERT INTO metric_points (run_id, asset, metric, at, value, status) VALUES (1, 'a', 'rows', 't1', 1, 'pass')`)
		mustExec(t, st, `INSERT INTO incidents (id, asset, failure_mode, status, severity, opened_at, updated_at) VALUES (5, 'b', 'volume', 'open', 'sev2', 't', 't')`)
		a, b := version("a"), version("b")
		mustExec(t, st, `TRUNCATE check_runs CASCADE`)
		if version("a") <= a || version("b") <= b {
			t.Fatalf("after TRUNCATE … CASCADE: versions a %d→%d, b %d→%d, want both moved", a, version("a"), b, version("b"))
		}
		a, b = version("a"), version("b")
		mustExec(t, st, `TRUNCATE incidents CASCADE`)
		if version("a") <= a || version("b") <= b {
			t.Fatalf("after TRUNCATE incidents: versions a %d→%d, b %d→%d, want both moved", a, version("a"), b, version("b"))
		}
	})
}
