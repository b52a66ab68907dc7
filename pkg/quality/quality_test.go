package quality_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
	"github.com/dataworkers/dw/pkg/warehouse"
)

func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// The scenario's table: 15 days (2025-12-01 … 12-15) of 16 hours (00:00–15:00) × 100 rows. On the
// last day 18 % of egress_bytes are null (i % 50 < 9); before it none are.
const (
	sqliteFill = `INSERT INTO usage_hourly WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < 23999)
SELECT 'u-' || i, i % 100, strftime('%Y-%m-%d %H:00:00', '2025-12-01', '+' || (i / 1600) || ' days', '+' || ((i % 1600) / 100) || ' hours'),
  CASE WHEN i / 1600 = 14 AND i % 50 < 9 THEN NULL ELSE 1000 + i END FROM seq`
	pgFill = `INSERT INTO usage_hourly SELECT 'u-' || i, i % 100, timestamp '2025-12-01' + (i / 1600) * interval '1 day' + ((i % 1600) / 100) * interval '1 hour',
  CASE WHEN i / 1600 = 14 AND i % 50 < 9 THEN NULL ELSE 1000 + i END FROM generate_series(0, 23999) i`
	events = `INSERT INTO events VALUES ('e-1', 'a', '2025-12-15 01:00:00'), ('e-2', 'a', '2025-12-15 02:00:00'), ('e-2', 'b', '2025-12-15 03:00:00'), ('e-3', NULL, '2025-12-15 04:00:00'), ('e-9', 'old', '2025-12-01 04:00:00')`
)

var ddl = []string{
	`CREATE TABLE usage_hourly (usage_id TEXT NOT NULL UNIQUE, account_id INTEGER, hour TIMESTAMP NOT NULL, egress_bytes BIGINT)`,
	`CREATE INDEX usage_hourly_hour ON usage_hourly (hour)`,
	`CREATE TABLE events (id TEXT, kind TEXT, at TIMESTAMP)`,
	`CREATE TABLE "we""ird tab" ("se;lect" INTEGER, "at" TIMESTAMP)`,
}

type engine struct {
	rw *sql.DB
	wh *warehouse.DB
}

func engines() map[string]func(t *testing.T) engine {
	return map[string]func(t *testing.T) engine{
		"sqlite": func(t *testing.T) engine {
			path := filepath.Join(t.TempDir(), "wh.db")
			rw, err := sql.Open("sqlite3", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rw.Close() })
			for _, s := range append(ddl, sqliteFill, events) {
				if _, err := rw.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			wh, err := warehouse.Connect(&config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 10 * time.Second, MaxSampleRows: 5})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { wh.Close() })
			return engine{rw, wh}
		},
		"postgres": func(t *testing.T) engine {
			dsn := pgtest.Shared(t).NewDatabase(t)
			rw, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rw.Close() })
			for _, s := range append(ddl, pgFill, events) {
				if _, err := rw.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			wh, err := warehouse.Connect(&config.Warehouse{Engine: "postgres", DSN: dsn, StatementTimeout: 10 * time.Second, MaxSampleRows: 5})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { wh.Close() })
			return engine{rw, wh}
		},
	}
}

func openStoreB(b *testing.B) *store.Store {
	b.Helper()
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "dw.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st := storetest.Open(t)
	return st
}

// at15 is 15:05 UTC on 2025-12-(1+day).
func at15(day int) time.Time { return time.Date(2025, 12, 1+day, 15, 5, 0, 0, time.UTC) }

func runAt(t *testing.T, wh *warehouse.DB, hist *quality.History, now time.Time, req quality.Request) *quality.Report {
	t.Helper()
	w, err := quality.ParseWindow(quality.WindowSpec{Window: "today", TimeZone: "UTC"}, now)
	if err != nil {
		t.Fatal(err)
	}
	req.Window = w
	rep, err := quality.NewChecker(wh, hist, func() time.Time { return now }).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("run at %s: %v", now, err)
	}
	return rep
}

func result(t *testing.T, rep *quality.Report, metric, subject string) quality.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Metric == metric && r.Subject == subject {
			return r
		}
	}
	t.Fatalf("no result %s %s in %+v", metric, subject, rep.Results)
	return quality.Result{}
}

func TestNullSpikeTodayFailsAgainstFlatHistory(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			hist := quality.NewHistory(openStore(t))
			req := quality.Request{Table: "usage_hourly", TimestampColumn: "hour", KeyColumns: []string{"usage_id"}}
			for day := 0; day < 14; day++ {
				rep := runAt(t, e.wh, hist, at15(day), req)
				if rep.Status != quality.Pass {
					t.Fatalf("day %d: %s", day, rep.Summary)
				}
			}
			rep := runAt(t, e.wh, hist, at15(14), req)
			nulls := result(t, rep, "null_rate", "egress_bytes")
			if nulls.Why != "18% null today against 0% in every earlier check" {
				t.Errorf("why = %q", nulls.Why)
			}
			if nulls.Status != quality.Fail || nulls.Value != 0.18 || nulls.Baseline == nil || nulls.Baseline.Points != 14 {
				t.Errorf("null result = %+v", nulls)
			}
			if nulls.Sample == nil || len(nulls.Sample.Rows) != 5 || !strings.Contains(nulls.SampleSQL, "IS NULL") {
				t.Errorf("sample = %+v (%s)", nulls.Sample, nulls.SampleSQL)
			}
			if !rep.Failed || rep.Status != quality.Fail {
				t.Errorf("report status %s failed=%v", rep.Status, rep.Failed)
			}
			// Volume and lag are normal, the key is unique by constraint (no query), NOT NULL columns need none.
			for _, m := range []struct{ metric, subject string }{{"rows_per_hour", ""}, {"freshness_lag_seconds", "hour"}, {"duplicate_rows", "usage_id"}, {"null_rate", "account_id"}, {"null_rate", "usage_id"}} {
				if r := result(t, rep, m.metric, m.subject); r.Status != quality.Pass {
					t.Errorf("%s %s: %s (%s)", m.metric, m.subject, r.Status, r.Why)
				}
			}
			if r := result(t, rep, "duplicate_rows", "usage_id"); !strings.HasPrefix(r.SQL, "-- no query") {
				t.Errorf("uniqueness on a UNIQUE column ran %q", r.SQL)
			}
			if r := result(t, rep, "null_rate", "usage_id"); !strings.Contains(r.Why, "NOT NULL") {
				t.Errorf("NOT NULL column: %q", r.Why)
			}
			vol := result(t, rep, "rows_per_hour", "")
			if vol.Rows == nil || *vol.Rows != 1600 || len(vol.Hours) != 16 || vol.Hours[0].Rows != 100 || *vol.EmptyHours != 0 {
				t.Errorf("volume = %+v", vol)
			}
			// One pass plus the indexed max(hour); on SQLite the hours are counted from the index
			// on hour by a query of their own instead of grouping the pass.
			if want := map[string]int{"sqlite": 3, "postgres": 2}[name]; rep.Queries != want {
				t.Errorf("queries = %d, want %d", rep.Queries, want)
			}
		})
	}
}

func TestFailedCheckOpensOneIncidentAndItsPointsLeaveTheBaseline(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			st := openStore(t)
			hist := quality.NewHistory(st)
			req := quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Checks: []quality.Check{quality.NullRate}, Columns: []string{"egress_bytes"}, OpenIncidents: func(string) bool { return true }}
			for day := 0; day < 6; day++ {
				runAt(t, e.wh, hist, at15(day), req)
			}
			first := runAt(t, e.wh, hist, at15(14), req)
			second := runAt(t, e.wh, hist, at15(14).Add(time.Hour), req)
			if len(first.Incidents) != 1 || !first.Incidents[0].Opened || first.Incidents[0].FailureMode != "null_rate" {
				t.Fatalf("first incidents = %+v", first.Incidents)
			}
			if len(second.Incidents) != 1 || second.Incidents[0].Opened || second.Incidents[0].ID != first.Incidents[0].ID {
				t.Fatalf("second run did not join the open incident: %+v", second.Incidents)
			}
			// The failing points stay out of training: the baseline is still six flat earlier checks.
			nulls := result(t, second, "null_rate", "egress_bytes")
			if nulls.Baseline == nil || nulls.Baseline.Points != 6 || nulls.Why != "18% null today against 0% in every earlier check" {
				t.Errorf("baseline after the incident = %+v, %q", nulls.Baseline, nulls.Why)
			}
			var n int
			if err := st.DB.QueryRow(`SELECT count(*) FROM incidents WHERE asset = ? AND status = 'open'`, first.Asset).Scan(&n); err != nil || n != 1 {
				t.Errorf("open incidents = %d, %v", n, err)
			}
			runs, err := hist.Runs(context.Background(), quality.HistoryQuery{Asset: "usage_hourly", Metric: "null_rate", Limit: 3})
			if err != nil || len(runs) != 3 || runs[0].Metrics[0].IncidentID == nil || runs[2].Metrics[0].IncidentID != nil {
				t.Errorf("history = %+v, %v", runs, err)
			}
		})
	}
}

func TestUniquenessCustomSQLAndUnindexedFreshness(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			var progress []int
			rep := runAt(t, e.wh, quality.NewHistory(openStore(t)), at15(14), quality.Request{
				Table: "events", TimestampColumn: "at", KeyColumns: []string{"id"},
				Progress: func(done, total int, _ string) {
					if done > total {
						t.Errorf("progress %d of %d", done, total)
					}
					progress = append(progress, done)
				},
				Assertions: []quality.Assertion{
					{Name: "kind_present", SQL: "SELECT id, at FROM events WHERE kind IS NULL AND at >= {{window_start}} AND at < {{window_end}};"},
					{Name: "no_old_kind", SQL: "SELECT * FROM events WHERE kind = 'old' AND at >= {{window_start}}"},
				},
			})
			// pass, duplicates, two assertions: one progress report after each.
			if rep.Queries != 4 || len(progress) != 4 || progress[3] != 4 {
				t.Errorf("queries %d, progress %v", rep.Queries, progress)
			}
			dup := result(t, rep, "duplicate_rows", "id")
			if dup.Status != quality.Fail || dup.Value != 1 || dup.Sample == nil || len(dup.Sample.Rows) != 1 || dup.Sample.Rows[0][0] != "e-2" {
				t.Errorf("duplicates = %+v", dup)
			}
			if dup.Why != "1 row duplicates (id) today" {
				t.Errorf("dup why = %q", dup.Why)
			}
			kind := result(t, rep, "violating_rows", "kind_present")
			if kind.Status != quality.Fail || kind.Value != 1 || len(kind.Sample.Rows) != 1 || kind.Why != "1 row violates kind_present today" {
				t.Errorf("assertion = %+v", kind)
			}
			if r := result(t, rep, "violating_rows", "no_old_kind"); r.Status != quality.Pass {
				t.Errorf("no_old_kind = %+v", r)
			}
			// No index on "at" and the window ends now: the pass's max(at) answers freshness.
			fresh := result(t, rep, "freshness_lag_seconds", "at")
			if fresh.Newest == nil || !fresh.Newest.Equal(time.Date(2025, 12, 15, 4, 0, 0, 0, time.UTC)) || fresh.Value != 11*3600+300 {
				t.Errorf("freshness = %+v", fresh)
			}
		})
	}
}

func TestBadInputsAreClearErrors(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			c := quality.NewChecker(e.wh, quality.NewHistory(openStore(t)), func() time.Time { return at15(14) })
			w, _ := quality.ParseWindow(quality.WindowSpec{}, at15(14))
			cases := []struct {
				req  quality.Request
				kind error
				text string
			}{
				{quality.Request{Table: `usage_hourly"; DROP TABLE usage_hourly; --`}, nil, "quote"},
				{quality.Request{Table: `"usage_hourly""; DROP TABLE usage_hourly; --"`}, warehouse.ErrNoSuchTable, "does not exist"},
				{quality.Request{Table: "missing_table"}, warehouse.ErrNoSuchTable, "list_tables"},
				{quality.Request{Table: "usage_hourly", TimestampColumn: `hour"; --`}, warehouse.ErrNoSuchColumn, "columns: usage_id"},
				{quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Columns: []string{"egress\x00"}}, nil, "control character"},
				{quality.Request{Table: "events", TimestampColumn: "kind"}, warehouse.ErrTypeMismatch, "not a timestamp"},
				{quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Checks: []quality.Check{quality.Custom}, Assertions: []quality.Assertion{{Name: "x", SQL: "DELETE FROM usage_hourly"}}}, warehouse.ErrNotReadOnlySQL, "SELECT"},
				{quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Checks: []quality.Check{quality.Custom}, Assertions: []quality.Assertion{{Name: "x", SQL: "SELECT 1; DROP TABLE usage_hourly"}}}, warehouse.ErrNotReadOnlySQL, "one statement"},
				{quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Checks: []quality.Check{quality.Custom}, Assertions: []quality.Assertion{{Name: "x", SQL: "SELECT * FROM nowhere"}}}, warehouse.ErrNoSuchTable, "nowhere"},
				{quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Checks: []quality.Check{quality.Custom}, Assertions: []quality.Assertion{{Name: "x", SQL: "SELECT * FROM usage_hourly WHERE hour + 1 > 'x'"}}}, nil, ""},
			}
			if name == "sqlite" {
				cases[5].text = "holds"
				cases[len(cases)-1].req.Assertions[0].SQL = "SELECT * FROM usage_hourly WHERE nope > 1"
				cases[len(cases)-1].kind = warehouse.ErrNoSuchColumn
			} else {
				cases[len(cases)-1].kind = warehouse.ErrTypeMismatch
			}
			for i, tc := range cases {
				tc.req.Window = w
				_, err := c.Run(context.Background(), tc.req)
				if err == nil {
					t.Errorf("case %d (%q): no error", i, tc.req.Table)
					continue
				}
				if tc.kind != nil && !errors.Is(err, tc.kind) {
					t.Errorf("case %d: err = %v, want kind %v", i, err, tc.kind)
				}
				if !strings.Contains(err.Error(), tc.text) {
					t.Errorf("case %d: err = %v, want it to mention %q", i, err, tc.text)
				}
			}
			// The hostile names harmed nothing.
			var n int
			if err := e.rw.QueryRow(`SELECT count(*) FROM usage_hourly`).Scan(&n); err != nil || n != 24000 {
				t.Errorf("usage_hourly rows = %d, %v", n, err)
			}
		})
	}
}

func TestRunawayAssertionTimesOut(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			short, err := reconnect(t, e, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := quality.ParseWindow(quality.WindowSpec{}, at15(14))
			_, err = quality.NewChecker(short, nil, func() time.Time { return at15(14) }).Run(context.Background(), quality.Request{
				Table: "usage_hourly", Window: w, Checks: []quality.Check{quality.Custom},
				Assertions: []quality.Assertion{{Name: "forever", SQL: "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r WHERE i < 0"}},
			})
			if !errors.Is(err, warehouse.ErrTimeout) || !strings.Contains(err.Error(), "warehouse.statement_timeout") {
				t.Fatalf("err = %v, want a statement timeout naming the config key", err)
			}
		})
	}
}

func TestHostileColumnNamesAreQuoted(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			if _, err := e.rw.Exec(`INSERT INTO "we""ird tab" VALUES (NULL, '2025-12-15 01:00:00'), (2, '2025-12-15 02:00:00')`); err != nil {
				t.Fatal(err)
			}
			rep := runAt(t, e.wh, nil, at15(14), quality.Request{Table: `"we""ird tab"`, TimestampColumn: "at", Columns: []string{"se;lect"}, Checks: []quality.Check{quality.NullRate, quality.Volume}})
			if r := result(t, rep, "null_rate", "se;lect"); r.Value != 0.5 {
				t.Errorf("null rate of the odd column = %+v", r)
			}
		})
	}
}

func reconnect(t *testing.T, e engine, timeout time.Duration) (*warehouse.DB, error) {
	t.Helper()
	var c config.Warehouse
	switch e.wh.Dialect.Engine {
	case warehouse.SQLite:
		var file string
		if err := e.rw.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
			return nil, err
		}
		c = config.Warehouse{Engine: "sqlite", DSN: file}
	default:
		var db string
		if err := e.rw.QueryRow(`SELECT current_database()`).Scan(&db); err != nil {
			return nil, err
		}
		c = config.Warehouse{Engine: "postgres", DSN: strings.Replace(pgtest.Shared(t).DSN, "/postgres?", "/"+db+"?", 1)}
	}
	c.StatementTimeout = timeout
	wh, err := warehouse.Connect(&c)
	if err == nil {
		t.Cleanup(func() { wh.Close() })
	}
	return wh, err
}

func TestDateAndZonedWindowColumnsCountTodaysRows(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			stmts := []string{
				`CREATE TABLE daily (d DATE, v INTEGER)`,
				`INSERT INTO daily VALUES ('2025-12-14', 1), ('2025-12-15', 2), ('2025-12-15', NULL), ('2025-12-16', 3)`,
			}
			if name == "postgres" {
				stmts = append(stmts, `CREATE TABLE zoned (at TIMESTAMPTZ, v INTEGER)`,
					`INSERT INTO zoned VALUES ('2025-12-15 10:00:00+00', 1), ('2025-12-14 23:00:00-05', NULL), ('2025-12-14 12:00:00+00', 3)`)
			}
			for _, s := range stmts {
				if _, err := e.rw.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			checks := []quality.Check{quality.Volume, quality.NullRate}
			rep := runAt(t, e.wh, nil, at15(14), quality.Request{Table: "daily", TimestampColumn: "d", Columns: []string{"v"}, Checks: checks})
			if r := result(t, rep, "rows_per_hour", ""); *r.Rows != 2 {
				t.Errorf("date column: rows today = %d (%s)", *r.Rows, r.SQL)
			}
			if r := result(t, rep, "null_rate", "v"); r.Value != 0.5 {
				t.Errorf("date column: null rate = %v", r.Value)
			}
			if name != "postgres" {
				return
			}
			rep = runAt(t, e.wh, nil, at15(14), quality.Request{Table: "zoned", TimestampColumn: "at", Columns: []string{"v"}, Checks: checks})
			if r := result(t, rep, "rows_per_hour", ""); *r.Rows != 2 || !strings.Contains(r.SQL, "::timestamptz") {
				t.Errorf("timestamptz column: rows today = %d (%s)", *r.Rows, r.SQL)
			}
		})
	}
}

// A DATE column holds local calendar days: a New York "today" window starts at 05:00Z, which must
// bind as the local date (not round up to tomorrow on SQLite, nor sort after today's date on
// PostgreSQL), and late in the local evening (already tomorrow in UTC) today is still today.
func TestDateColumnWindowInNonUTCZone(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			for _, s := range []string{
				`CREATE TABLE daily (d DATE, v INTEGER)`,
				`INSERT INTO daily VALUES ('2025-12-14', 1), ('2025-12-15', 2), ('2025-12-15', NULL), ('2025-12-16', 3)`,
			} {
				if _, err := e.rw.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			cases := []struct {
				window  string
				now     time.Time
				rows    int64
				nullPct float64
			}{
				{"today", time.Date(2025, 12, 15, 15, 5, 0, 0, time.UTC), 2, 0.5}, // 10:05 in New York
				{"today", time.Date(2025, 12, 16, 3, 0, 0, 0, time.UTC), 2, 0.5},  // 22:00 on the 15th in New York
				{"yesterday", time.Date(2025, 12, 16, 3, 0, 0, 0, time.UTC), 1, 0},
				{"today", time.Date(2025, 12, 16, 5, 0, 1, 0, time.UTC), 1, 0}, // just after local midnight of the 16th
			}
			for _, c := range cases {
				w, err := quality.ParseWindow(quality.WindowSpec{Window: c.window, TimeZone: "America/New_York"}, c.now)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := quality.NewChecker(e.wh, nil, func() time.Time { return c.now }).Run(context.Background(), quality.Request{
					Table: "daily", TimestampColumn: "d", Columns: []string{"v"}, Window: w,
					Checks:     []quality.Check{quality.Volume, quality.NullRate, quality.Custom},
					Assertions: []quality.Assertion{{Name: "in_window", SQL: `SELECT * FROM daily WHERE d >= {{window_start}} AND d < {{window_end}}`}},
				})
				if err != nil {
					t.Fatalf("%s at %s: %v", c.window, c.now, err)
				}
				if r := result(t, rep, "rows_per_hour", ""); *r.Rows != c.rows {
					t.Errorf("%s at %s: rows = %d, want %d (%s)", c.window, c.now, *r.Rows, c.rows, r.SQL)
				}
				if r := result(t, rep, "null_rate", "v"); r.Value != c.nullPct {
					t.Errorf("%s at %s: null rate = %v, want %v", c.window, c.now, r.Value, c.nullPct)
				}
				if r := result(t, rep, "violating_rows", "in_window"); r.Value != float64(c.rows) {
					t.Errorf("%s at %s: custom assertion window rows = %v, want %d (%s)", c.window, c.now, r.Value, c.rows, r.SQL)
				}
			}
		})
	}
}

// SQLite compares what is stored: a column mixing epoch numbers and text (or two text layouts)
// would silently compare wrongly, so the format probe reads both ends and refuses a mix, naming the
// column; a column of one format at both ends is used.
func TestSQLiteMixedTimeFormatsAreRefused(t *testing.T) {
	e := engines()["sqlite"](t)
	now := at15(14)
	epoch := now.Add(-time.Hour).Unix()
	for _, s := range []string{
		`CREATE TABLE mixed (at, v INTEGER)`,
		fmt.Sprintf(`INSERT INTO mixed VALUES ('2025-12-15 10:00:00', 1), (%d, 2), ('2025-12-15 11:00:00', 3)`, epoch),
		`CREATE TABLE layouts (at TEXT, v INTEGER)`,
		`INSERT INTO layouts VALUES ('2025-12-15 10:00:00', 1), ('2025-12-15T11:00:00', 2)`,
		`CREATE TABLE epochs (at INTEGER, v INTEGER)`,
		fmt.Sprintf(`INSERT INTO epochs VALUES (%d, 1), (%d, 2), (%d, 3)`, epoch, epoch+60, now.Add(-48*time.Hour).Unix()),
	} {
		if _, err := e.rw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	c := quality.NewChecker(e.wh, nil, func() time.Time { return now })
	w, err := quality.ParseWindow(quality.WindowSpec{}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ table, want string }{{"mixed", "epoch seconds"}, {"layouts", "text with a T"}} {
		_, err := c.Run(context.Background(), quality.Request{Table: tc.table, TimestampColumn: "at", Window: w, Checks: []quality.Check{quality.Volume}})
		if err == nil || !errors.Is(err, warehouse.ErrTypeMismatch) || !strings.Contains(err.Error(), "column at mixes time formats") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a type mismatch naming column at and %q", tc.table, err, tc.want)
		}
	}
	rep, err := c.Run(context.Background(), quality.Request{Table: "epochs", TimestampColumn: "at", Window: w, Checks: []quality.Check{quality.Volume}})
	if err != nil {
		t.Fatal(err)
	}
	if r := result(t, rep, "rows_per_hour", ""); *r.Rows != 2 {
		t.Errorf("epoch column: rows today = %d, want 2 (%s)", *r.Rows, r.SQL)
	}
}

func TestCompositeKeyUniqueness(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			if _, err := e.rw.Exec(`INSERT INTO events VALUES ('e-2', 'b', '2025-12-15 05:00:00')`); err != nil {
				t.Fatal(err)
			}
			rep := runAt(t, e.wh, nil, at15(14), quality.Request{Table: "events", TimestampColumn: "at", KeyColumns: []string{"id", "kind"}, Checks: []quality.Check{quality.Uniqueness}})
			r := result(t, rep, "duplicate_rows", "id,kind")
			if r.Value != 1 || r.Status != quality.Fail || len(r.Sample.Rows) != 1 || r.Sample.Columns[2] != "copies" || !strings.Contains(r.SQL, "GROUP BY") {
				t.Errorf("composite key = %+v", r)
			}
		})
	}
}

func TestProfileTableOnePassPerEngine(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			w, _ := quality.ParseWindow(quality.WindowSpec{}, at15(14))
			p, err := quality.NewChecker(e.wh, nil, func() time.Time { return at15(14) }).ProfileTable(context.Background(),
				quality.ProfileRequest{Table: "usage_hourly", TimestampColumn: "hour", Window: &w, Distinct: true})
			if err != nil {
				t.Fatal(err)
			}
			if p.Rows != 1600 || len(p.Columns) != 4 || strings.Count(p.SQL, "SELECT") != 1 {
				t.Fatalf("profile = %+v", p)
			}
			eg := p.Columns[3]
			if eg.Name != "egress_bytes" || eg.Nulls != 288 || eg.NullRate != 0.18 || eg.Distinct == nil || *eg.Distinct != 1312 || eg.Avg == nil || eg.Min == nil {
				t.Errorf("egress_bytes = %+v", eg)
			}
			if id := p.Columns[0]; *id.Distinct != 1600 || id.Avg != nil {
				t.Errorf("usage_id = %+v", id)
			}
		})
	}
}

// An unreadable history must not leave volume or freshness at pass: the run errors (as the null
// rate does), so run_monitors counts the monitor as failing and exits 1. The reads are prefetched
// while the warehouse runs the statements; the failed read still fails its result's run.
func TestUnreadableHistoryIsAnErrorNotAPass(t *testing.T) {
	for _, check := range []quality.Check{quality.Volume, quality.VolumeByHour, quality.Freshness, quality.NullRate, quality.Column, quality.Dimension} {
		t.Run(string(check), func(t *testing.T) {
			e := engines()["sqlite"](t)
			st := openStore(t)
			if err := st.Write(context.Background(), func(tx *sql.Tx) error {
				_, err := tx.Exec(`DROP TABLE metric_points`)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			now := at15(14)
			w, err := quality.ParseWindow(quality.WindowSpec{Window: "today", TimeZone: "UTC"}, now)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := quality.NewChecker(e.wh, quality.NewHistory(st), func() time.Time { return now }).Run(context.Background(),
				quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Window: w, Checks: []quality.Check{check}, Columns: []string{"egress_bytes"},
					Dimension: &quality.DimensionSpec{Column: "account_id"}})
			if err == nil || !strings.Contains(err.Error(), "check history") {
				t.Fatalf("run with an unreadable history: report %+v, err %v", rep, err)
			}
		})
	}
}

// Failing points of an asset that never opens incidents (no domain, autonomy L0) stay out of the
// baseline; once a failure's incident is judged a false positive, its point trains again.
func TestFailingPointsTrainOnlyWhenJudgedFalsePositive(t *testing.T) {
	cases := []struct {
		name       string
		incidents  bool
		markAs     string
		wantPoints int
	}{
		{"no incidents: fail point excluded", false, "", 6},
		{"open incident: fail point excluded", true, "", 6},
		{"false positive: fail point trains", true, "false_positive", 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := engines()["sqlite"](t)
			st := openStore(t)
			hist := quality.NewHistory(st)
			req := quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Checks: []quality.Check{quality.NullRate}, Columns: []string{"egress_bytes"}}
			if c.incidents {
				req.OpenIncidents = func(string) bool { return true }
			}
			for day := 0; day < 6; day++ {
				runAt(t, e.wh, hist, at15(day), req)
			}
			first := runAt(t, e.wh, hist, at15(14), req)
			if first.Status != quality.Fail {
				t.Fatalf("the spike did not fail: %+v", first.Results)
			}
			if c.markAs != "" {
				if err := st.Write(context.Background(), func(tx *sql.Tx) error {
					_, err := tx.Exec(`UPDATE incidents SET status = ?, resolved_at = updated_at WHERE id = ?`, c.markAs, first.Incidents[0].ID)
					return err
				}); err != nil {
					t.Fatal(err)
				}
			}
			pts, err := hist.Series(context.Background(), first.Asset, "null_rate", "egress_bytes", at15(14).Add(time.Hour), 100)
			if err != nil || len(pts) != c.wantPoints {
				t.Fatalf("training points = %d (%v), want %d", len(pts), err, c.wantPoints)
			}
		})
	}
}

// On a SQLite database in WAL mode a run also serves the cached description ahead of its marker
// (read on another connection once the snapshot's first statement returns): a column added since
// the table was described is measured by the next run.
func TestASQLiteRunMeasuresAColumnAddedSinceItWasDescribed(t *testing.T) {
	e := engines()["sqlite"](t)
	if _, err := e.rw.Exec(`PRAGMA journal_mode=WAL`); err != nil {
		t.Fatal(err)
	}
	req := quality.Request{Table: "usage_hourly", TimestampColumn: "hour", KeyColumns: []string{"usage_id"}, Checks: []quality.Check{quality.NullRate}}
	before := runAt(t, e.wh, nil, at15(14), req) // described and cached
	for _, r := range before.Results {
		if r.Subject == "region" {
			t.Fatalf("region measured before it exists: %+v", r)
		}
	}
	if _, err := e.rw.Exec(`ALTER TABLE usage_hourly ADD COLUMN region TEXT`); err != nil {
		t.Fatal(err)
	}
	after := runAt(t, e.wh, nil, at15(14), req)
	if r := result(t, after, "null_rate", "region"); r.Value != 1 {
		t.Fatalf("added column: %+v, want 100 %% null measured", r)
	}
}

// A run on PostgreSQL serves the table's cached description ahead of its change marker, which is
// read beside the statements. When the table changed since it was described, the run plans again
// from the new description: a column whose NOT NULL was dropped, and which now holds nulls, is
// measured, never answered 0 % by the constraint it no longer has; a table dropped meanwhile is
// reported missing.
func TestARunPlansAgainWhenTheTableChangedSinceItWasDescribed(t *testing.T) {
	e := engines()["postgres"](t)
	if _, err := e.rw.Exec(`ALTER TABLE usage_hourly ALTER COLUMN account_id SET NOT NULL`); err != nil {
		t.Fatal(err)
	}
	req := quality.Request{Table: "usage_hourly", TimestampColumn: "hour", KeyColumns: []string{"usage_id"}, Checks: []quality.Check{quality.NullRate}}
	before := runAt(t, e.wh, nil, at15(14), req) // described and cached: account_id NOT NULL
	if r := result(t, before, "null_rate", "account_id"); r.Value != 0 || !strings.HasPrefix(r.SQL, "-- no query") {
		t.Fatalf("NOT NULL column: %+v", r)
	}
	if _, err := e.rw.Exec(`ALTER TABLE usage_hourly ALTER COLUMN account_id DROP NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rw.Exec(`UPDATE usage_hourly SET account_id = NULL WHERE hour >= '2025-12-15' AND usage_id LIKE '%0'`); err != nil {
		t.Fatal(err)
	}
	after := runAt(t, e.wh, nil, at15(14), req)
	if r := result(t, after, "null_rate", "account_id"); r.Value != 0.1 || strings.HasPrefix(r.SQL, "-- no query") {
		t.Fatalf("after DROP NOT NULL and nulls: %+v, want 10 %% measured", r)
	}
	if _, err := e.rw.Exec(`DROP TABLE usage_hourly`); err != nil {
		t.Fatal(err)
	}
	w, err := quality.ParseWindow(quality.WindowSpec{Window: "today", TimeZone: "UTC"}, at15(14))
	if err != nil {
		t.Fatal(err)
	}
	req.Window = w
	c := quality.NewChecker(e.wh, nil, func() time.Time { return at15(14) })
	if _, err := c.Run(context.Background(), req); !errors.Is(err, warehouse.ErrNoSuchTable) {
		t.Fatalf("run after DROP TABLE = %v, want ErrNoSuchTable", err)
	}
}
