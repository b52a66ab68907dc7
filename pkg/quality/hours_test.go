package quality_test

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// hourCase is one stored time value (nil for NULL) and the value column beside it (nil for NULL).
type hourCase struct {
	at    *time.Time
	text  string // the SQLite text as stored, when not the layout's own rendering
	value any
}

// hourCases spread rows over hours with gaps: hours with no rows between hours with rows, rows
// exactly on an hour's start and a microsecond before the next, rows outside the window on both
// sides, NULL timestamps and NULL values.
func hourCases() []hourCase {
	base := time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	var out []hourCase
	add := func(d time.Duration, v any) {
		t := base.Add(d)
		out = append(out, hourCase{at: &t, value: v})
	}
	add(-time.Hour, 1)                                           // before the window
	add(20*time.Minute, 2)                                       // before the window's start at 00:30
	add(30*time.Minute, 3)                                       // on the window's start
	add(59*time.Minute+59*time.Second, nil)                      // last second of the first hour
	add(time.Hour, 5)                                            // on an hour's start
	add(2*time.Hour-time.Microsecond, 6)                         // a microsecond before the next
	add(5*time.Hour+15*time.Minute, nil)                         // after three empty hours
	add(5*time.Hour+16*time.Minute, 8)                           //
	add(26*time.Hour+7*time.Minute, 9)                           // the next day, after 20 empty hours
	add(31*time.Hour+44*time.Minute+59*time.Second, 10)          // just before the window's end at 07:45
	add(31*time.Hour+45*time.Minute+time.Microsecond, 11)        // just after the window's end
	add(40*time.Hour, 12)                                        // after the window
	out = append(out, hourCase{value: 13}, hourCase{value: nil}) // NULL timestamps
	for i := 0; i < 40; i++ {
		add(3*time.Hour+time.Duration(i)*time.Minute, i%3) // a busy hour
	}
	return out
}

// hourLayouts are the ways SQLite can hold the cases: text with a space (some with minute
// precision or a Z), text with a T, and epoch seconds (some fractional).
var hourLayouts = map[string]func(i int, t time.Time) any{
	"text_space": func(i int, t time.Time) any {
		switch {
		case t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0:
			return t.Format("2006-01-02 15:04") // minute precision on an hour's start: still that hour's
		case i%3 == 0:
			return t.Format("2006-01-02 15:04:05.000000Z")
		}
		return t.Format("2006-01-02 15:04:05.999999")
	},
	"text_t": func(i int, t time.Time) any { return t.Format("2006-01-02T15:04:05.999999Z") },
	"epoch": func(i int, t time.Time) any {
		if t.Nanosecond() != 0 || i%4 == 0 {
			return float64(t.UnixNano()) / 1e9
		}
		return t.Unix()
	},
}

func fillHours(t *testing.T, db *sql.DB, table string, layout func(int, time.Time) any, ph func(int) string) {
	t.Helper()
	for i, c := range hourCases() {
		var at any
		if c.at != nil {
			at = layout(i, *c.at)
		}
		if _, err := db.Exec("INSERT INTO "+table+" VALUES ("+ph(1)+", "+ph(2)+")", at, c.value); err != nil {
			t.Fatal(err)
		}
	}
}

// hoursWarehouse creates a warehouse database on engine, fills it through load and connects to it;
// the writable connection stays open for the test.
func hoursWarehouse(t *testing.T, engine string, load func(rw *sql.DB)) *warehouse.DB {
	t.Helper()
	dsn, rw := openWritable(t, engine)
	t.Cleanup(func() { rw.Close() })
	load(rw)
	wh, err := warehouse.Connect(&config.Warehouse{Engine: engine, DSN: dsn, StatementTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close() })
	return wh
}

func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
}

// comparable strips what differs by design between formulations (the SQL shown, timings).
func comparable(rep *quality.Report) []quality.Result {
	var out []quality.Result
	for _, r := range rep.Results {
		r.SQL, r.Baseline = "", nil
		out = append(out, r)
	}
	return out
}

func hoursRequest(table string) quality.Request {
	return quality.Request{Table: table, TimestampColumn: "at", Checks: []quality.Check{quality.Volume, quality.VolumeByHour, quality.Freshness, quality.NullRate},
		Window: quality.Window{Since: time.Date(2025, 12, 1, 0, 30, 0, 0, time.UTC), Until: time.Date(2025, 12, 2, 7, 45, 0, 0, time.UTC), Label: "in the window", TimeZone: "Asia/Kolkata"}}
}

func runHours(t *testing.T, wh *warehouse.DB, table string, wide bool) *quality.Report {
	t.Helper()
	now := time.Date(2025, 12, 2, 7, 45, 0, 0, time.UTC)
	req := hoursRequest(table)
	if wide { // every stored row: the pass scans the table instead of ranging over the index
		// (freshness left out: with a window reaching past now, the grouped pass's newest row
		// may lie in the future, which the indexed read of max(at) <= now never returns)
		req.Window.Since, req.Window.Until = now.Add(-72*time.Hour), now.Add(72*time.Hour)
		req.Checks = []quality.Check{quality.Volume, quality.VolumeByHour, quality.NullRate}
	}
	rep, err := quality.NewChecker(wh, nil, func() time.Time { return now }).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return rep
}

// TestHourlyCountsAgreeAcrossFormulations runs the same check on the same rows with and without an
// index on the timestamp, so once through the grouped pass and once through range counts over the
// index, in every SQLite time layout, and on PostgreSQL (timestamp and timestamptz): every result
// must be the same, hour by hour.
func TestHourlyCountsAgreeAcrossFormulations(t *testing.T) {
	var want []quality.Result
	for _, name := range []string{"text_space", "text_t", "epoch"} {
		t.Run(name, func(t *testing.T) {
			wh := hoursWarehouse(t, "sqlite", func(rw *sql.DB) {
				execAll(t, rw, `CREATE TABLE plain (at TIMESTAMP, v INTEGER)`, `CREATE TABLE indexed (at TIMESTAMP, v INTEGER)`, `CREATE INDEX indexed_at ON indexed (at)`)
				q := func(int) string { return "?" }
				fillHours(t, rw, "plain", hourLayouts[name], q)
				fillHours(t, rw, "indexed", hourLayouts[name], q)
			})
			wideRanges := runHours(t, wh, "indexed", true)
			if sql := result(t, wideRanges, "rows_per_hour", "").SQL; !strings.Contains(sql, `WHERE +"at" >= ?`) || !strings.Contains(sql, "WITH RECURSIVE") {
				t.Fatalf("over every row the pass should scan and the hours range over the index: %s", sql)
			}
			if g, r := comparable(runHours(t, wh, "plain", true)), comparable(wideRanges); !reflect.DeepEqual(g, r) {
				t.Fatalf("formulations disagree over every row:\ngrouped %+v\nranges  %+v", g, r)
			}
			grouped, ranges := runHours(t, wh, "plain", false), runHours(t, wh, "indexed", false)
			vol := result(t, ranges, "rows_per_hour", "")
			if !strings.Contains(vol.SQL, "WITH RECURSIVE") || strings.Contains(result(t, grouped, "rows_per_hour", "").SQL, "WITH RECURSIVE") {
				t.Fatalf("formulations not as planned:\nindexed: %s\nplain: %s", vol.SQL, result(t, grouped, "rows_per_hour", "").SQL)
			}
			if g, r := comparable(grouped), comparable(ranges); !reflect.DeepEqual(g, r) {
				t.Fatalf("formulations disagree:\ngrouped %+v\nranges  %+v", g, r)
			}
			got := comparable(ranges)
			if want == nil {
				want = got
			} else if !reflect.DeepEqual(got, want) {
				t.Fatalf("layout %s disagrees with text_space:\n%+v\n%+v", name, got, want)
			}
		})
	}
	hours := result(t, &quality.Report{Results: want}, "rows_per_hour", "")
	wantHours := []quality.HourCount{
		{Hour: time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC), Rows: 2}, {Hour: time.Date(2025, 12, 1, 1, 0, 0, 0, time.UTC), Rows: 2},
		{Hour: time.Date(2025, 12, 1, 3, 0, 0, 0, time.UTC), Rows: 40}, {Hour: time.Date(2025, 12, 1, 5, 0, 0, 0, time.UTC), Rows: 2},
		{Hour: time.Date(2025, 12, 2, 2, 0, 0, 0, time.UTC), Rows: 1}, {Hour: time.Date(2025, 12, 2, 7, 0, 0, 0, time.UTC), Rows: 1},
	}
	if !reflect.DeepEqual(hours.Hours, wantHours) || hours.Rows == nil || *hours.Rows != 48 {
		t.Fatalf("hours %+v rows %v, want %+v and 48", hours.Hours, hours.Rows, wantHours)
	}
	for _, typ := range []string{"timestamp", "timestamptz"} {
		t.Run("postgres_"+typ, func(t *testing.T) {
			wh := hoursWarehouse(t, "postgres", func(rw *sql.DB) {
				execAll(t, rw, `CREATE TABLE indexed (at `+typ+`, v INTEGER)`, `CREATE INDEX indexed_at ON indexed (at)`)
				fillHours(t, rw, "indexed", func(_ int, at time.Time) any { return at }, func(i int) string { return fmt.Sprintf("$%d", i) })
			})
			if got := comparable(runHours(t, wh, "indexed", false)); !reflect.DeepEqual(got, want) {
				t.Fatalf("PostgreSQL %s disagrees with SQLite:\n%+v\n%+v", typ, got, want)
			}
		})
	}
}

// TestSparseTableKeepsTheGroupedPass: with ANALYZE's row count saying the table holds about one row
// an hour, seeking every hour costs more than sorting, so the pass stays grouped.
func TestSparseTableKeepsTheGroupedPass(t *testing.T) {
	var rw *sql.DB
	wh := hoursWarehouse(t, "sqlite", func(db *sql.DB) {
		rw = db
		execAll(t, db, `CREATE TABLE sparse (at TIMESTAMP, v INTEGER)`, `CREATE INDEX sparse_at ON sparse (at)`,
			`INSERT INTO sparse WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < 499)
SELECT strftime('%Y-%m-%d %H:%M:%S', '2025-12-01', '+' || (i * 3600 / 2) || ' seconds'), i FROM seq`)
	})
	req := hoursRequest("sparse")
	req.Window.Since, req.Window.Until = time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 12, 12, 0, 0, 0, 0, time.UTC)
	run := func() quality.Result {
		rep, err := quality.NewChecker(wh, nil, func() time.Time { return req.Window.Until }).Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return result(t, rep, "rows_per_hour", "")
	}
	before := run() // never analyzed: no row estimate, so the index is trusted
	execAll(t, rw, `ANALYZE`)
	after := run()
	if !strings.Contains(before.SQL, "WITH RECURSIVE") || strings.Contains(after.SQL, "WITH RECURSIVE") || !strings.Contains(after.SQL, "GROUP BY 1") {
		t.Fatalf("before ANALYZE: %s\nafter: %s", before.SQL, after.SQL)
	}
	if !reflect.DeepEqual(before.Hours, after.Hours) || *before.Rows != 500 || *after.Rows != 500 {
		t.Fatalf("counts differ: %d %v / %d %v", *before.Rows, before.Hours[:3], *after.Rows, after.Hours[:3])
	}
}

// TestFreshnessFromTheLayoutRead: on SQLite with an index on the timestamp, the layout read that
// planning makes (the column's smallest and largest value, in the run's snapshot) also answers the
// freshness statement, one statement fewer, and ignores rows in the future as that statement does.
func TestFreshnessFromTheLayoutRead(t *testing.T) {
	now := time.Date(2025, 12, 2, 7, 45, 0, 0, time.UTC)
	var rw *sql.DB
	wh := hoursWarehouse(t, "sqlite", func(db *sql.DB) {
		rw = db
		execAll(t, db, `CREATE TABLE events (at TIMESTAMP, v INTEGER)`, `CREATE INDEX events_at ON events (at)`,
			`INSERT INTO events VALUES ('2025-12-02 05:15:00', 1), ('2025-12-02 06:45:00', 2)`)
	})
	req := quality.Request{Table: "events", TimestampColumn: "at", Checks: []quality.Check{quality.Freshness},
		Window: quality.Window{Since: now.Add(-24 * time.Hour), Until: now, Label: "today", TimeZone: "UTC"}}
	c := quality.NewChecker(wh, nil, func() time.Time { return now })
	rep, err := c.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	fresh := result(t, rep, "freshness_lag_seconds", "at")
	if fresh.Value != 3600 || !strings.Contains(fresh.SQL, "typeof(hi)") || rep.Queries != 1 {
		t.Fatalf("freshness %v from %q in %d queries, want 3600 s from the layout read in 1", fresh.Value, fresh.SQL, rep.Queries)
	}
	execAll(t, rw, `INSERT INTO events VALUES ('2025-12-02 12:00:00', 3)`) // in the future
	if rep, err = c.Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	fresh = result(t, rep, "freshness_lag_seconds", "at")
	if fresh.Value != 3600 || !strings.Contains(fresh.SQL, "typeof(hi)") || rep.Queries != 1 {
		t.Fatalf("with a future row: freshness %v from %q in %d queries, want 3600 s from the layout read in 1", fresh.Value, fresh.SQL, rep.Queries)
	}
}

// TestFreshnessFromTheLayoutReadIsTheStatementsAnswer: what the layout read answers for freshness
// is what `max(ts) WHERE ts <= bound(now)` answers, in the cases where the largest stored value
// is not that answer: a date column read in a zone west of UTC (the bound is the local day), text
// with an offset (the largest text is not the newest instant), a fraction inside the run's own
// second (the bound has whole seconds), and epoch seconds with a row in the future.
func TestFreshnessFromTheLayoutReadIsTheStatementsAnswer(t *testing.T) {
	cases := []struct {
		name, column string
		values       []string
		now          time.Time
		zone         string
		want         float64 // the lag the freshness statement gives
	}{
		{name: "date_west_of_utc", column: "TEXT", values: []string{"'2025-12-01'", "'2025-12-02'"},
			now: time.Date(2025, 12, 2, 3, 0, 0, 0, time.UTC), zone: "America/New_York", want: 27 * 3600},
		{name: "text_with_offset", column: "TEXT", values: []string{"'2025-12-01T04:30:00Z'", "'2025-12-01T05:00:00+02:00'"},
			now: time.Date(2025, 12, 1, 4, 40, 0, 0, time.UTC), zone: "UTC", want: 600},
		{name: "fraction_same_second", column: "TEXT", values: []string{"'2025-12-01 04:00:00'", "'2025-12-01 05:00:00.250'"},
			now: time.Date(2025, 12, 1, 5, 0, 0, 900_000_000, time.UTC), zone: "UTC", want: 3600.9},
		{name: "epoch_with_a_future_row", column: "INTEGER", values: []string{"1764561600", "1764576000"},
			now: time.Date(2025, 12, 1, 5, 0, 0, 0, time.UTC), zone: "UTC", want: 3600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wh := hoursWarehouse(t, "sqlite", func(db *sql.DB) {
				execAll(t, db, `CREATE TABLE events (at `+tc.column+`, v INTEGER)`, `CREATE INDEX events_at ON events (at)`)
				for _, v := range tc.values {
					execAll(t, db, `INSERT INTO events VALUES (`+v+`, 1)`)
				}
			})
			req := quality.Request{Table: "events", TimestampColumn: "at", Checks: []quality.Check{quality.Freshness},
				Window: quality.Window{Since: tc.now.Add(-24 * time.Hour), Until: tc.now, Label: "today", TimeZone: tc.zone}}
			rep, err := quality.NewChecker(wh, nil, func() time.Time { return tc.now }).Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			fresh := result(t, rep, "freshness_lag_seconds", "at")
			if fresh.Value != tc.want || rep.Queries != 1 || !strings.Contains(fresh.SQL, "typeof(hi)") {
				t.Errorf("freshness lag %v s from %q in %d queries; the freshness statement gives %v s, and the layout read should answer it", fresh.Value, fresh.SQL, rep.Queries, tc.want)
			}
		})
	}
}
