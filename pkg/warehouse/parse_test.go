package warehouse

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseTableRef(t *testing.T) {
	cases := []struct {
		in   string
		want TableRef
		err  string
	}{
		{in: "usage_hourly", want: TableRef{Name: "usage_hourly"}},
		{in: "usage.usage_hourly", want: TableRef{Schema: "usage", Name: "usage_hourly"}},
		{in: "ANALYTICS.USAGE.USAGE_HOURLY", want: TableRef{Database: "ANALYTICS", Schema: "USAGE", Name: "USAGE_HOURLY"}},
		{in: `"my.schema"."we""ird"`, want: TableRef{Schema: "my.schema", Name: `we"ird`}},
		{in: "a.b.c.d", err: "use name"},
		{in: "", err: "empty identifier"},
		{in: "a..b", err: "empty identifier"},
		{in: `"open`, err: "unterminated"},
		{in: `"a"b`, err: "after a closing quote"},
		{in: `a"b"`, err: "whole name part"},
		{in: "bad\x00name", err: "control character"},
		{in: strings.Repeat("x", 300), err: "longer than"},
	}
	for _, c := range cases {
		got, err := ParseTableRef(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseTableRef(%q) err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseTableRef(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func FuzzParseTableRefRoundTrips(f *testing.F) {
	for _, s := range []string{"t", "s.t", "d.s.t", `"a.b"."c""d"`, `"`, "a..", "\x00", `"x"y`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParseTableRef(s)
		if err != nil {
			return
		}
		again, err := ParseTableRef(ref.String())
		if err != nil || again != ref {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, ref, ref.String(), again, err)
		}
		for _, d := range []Dialect{{SQLite}, {Postgres}, {Snowflake}} {
			if _, err := d.QuoteTable(ref); err != nil {
				t.Fatalf("parsed ref does not quote: %v", err)
			}
		}
	})
}

func TestQuoteDoublesEmbeddedQuotes(t *testing.T) {
	got, err := Dialect{Postgres}.Quote(`a"; DROP TABLE x; --`)
	if err != nil || got != `"a""; DROP TABLE x; --"` {
		t.Fatalf("Quote = %s, %v", got, err)
	}
}

func TestCheckReadOnlySQL(t *testing.T) {
	cases := []struct {
		in, want, err string
	}{
		{in: "SELECT * FROM t WHERE x IS NULL;", want: "SELECT * FROM t WHERE x IS NULL"},
		{in: "  with v as (select 1) select * from v  ", want: "with v as (select 1) select * from v"},
		{in: "SELECT 'a;b; DELETE' AS s -- trailing; comment", want: "SELECT 'a;b; DELETE' AS s -- trailing; comment"},
		{in: "SELECT 1; DELETE FROM t", err: "only one statement"},
		{in: "DELETE FROM t", err: "must be one SELECT"},
		{in: "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", err: "DELETE"},
		{in: "SELECT $$x$$", err: "dollar"},
		{in: "SELECT 'open", err: "unterminated"},
		{in: "/* x */", err: "empty"},
		{in: ";", err: "empty"},
		{in: "SELECT set_config('default_transaction_read_only','off',false)", err: "set_config"},
		{in: `SELECT "set_config"('default_transaction_read_only','off',false)`, err: "set_config"},
		{in: `SELECT "pg_catalog"."set_config"('x','y',false)`, err: "pg_*"},
		{in: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity", err: "pg_*"},
		{in: "SELECT PG_RELOAD_CONF()", err: "pg_*"},
		{in: "SELECT lo_import('/etc/passwd')", err: "lo_*"},
		{in: "SELECT * FROM dblink('host=x', 'DELETE FROM t') AS r(x int)", err: "dblink"},
		{in: "SELECT dblink_exec('host=x', 'DELETE FROM t')", err: "dblink"},
		{in: "SELECT SYSTEM$CANCEL_ALL_QUERIES(42)", err: "SYSTEM$"},
		{in: "select system$abort_session(1)", err: "SYSTEM$"},
		{in: "SELECT 1 FROM t; SET default_transaction_read_only = off", err: "only one statement"},
		{in: "WITH s AS (SELECT 1) SELECT * FROM s, LATERAL (SELECT 1) x FOR UPDATE", err: "UPDATE"},
		{in: "SELECT 'set_config(x) pg_terminate_backend SYSTEM$X' AS note FROM t", want: "SELECT 'set_config(x) pg_terminate_backend SYSTEM$X' AS note FROM t"},
		{in: `SELECT "Set Config" FROM "pgx_t"`, want: `SELECT "Set Config" FROM "pgx_t"`},
	}
	for _, c := range cases {
		got, err := CheckReadOnlySQL(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrNotReadOnlySQL) {
				t.Errorf("CheckReadOnlySQL(%q) err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("CheckReadOnlySQL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func FuzzCheckReadOnlySQL(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT 1;", `SELECT "set_config"('a','b',false)`, "SELECT SYSTEM$X()", "SELECT ';'", "SELECT 1; SELECT 2", "/*", "--", "'", `"`, "WITH x AS (SELECT 1) SELECT * FROM x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := CheckReadOnlySQL(s)
		if err != nil {
			return
		}
		// What passes is idempotent and still a single query.
		again, err := CheckReadOnlySQL(out)
		if err != nil || again != out {
			t.Fatalf("not idempotent: %q → %q → %q, %v", s, out, again, err)
		}
	})
}

func TestParseTimeReadsDriverShapes(t *testing.T) {
	want := time.Date(2025, 12, 1, 5, 0, 0, 0, time.UTC)
	for _, v := range []any{want, "2025-12-01 05:00:00", "2025-12-01T05:00:00Z", "2025-12-01 05:00:00+00:00", []byte("2025-12-01 05"), "2025-12-01T05", int64(want.Unix())} {
		got, ok := ParseTime(v)
		if !ok || !got.Equal(want) {
			t.Errorf("ParseTime(%#v) = %v, %v", v, got, ok)
		}
	}
	if _, ok := ParseTime("yesterday"); ok {
		t.Error("ParseTime accepted prose")
	}
}

// The one-attempt layout for zoneless text answers what trying every layout in order answers:
// the same instant, or a refusal the list then makes too.
func FuzzParseTimeAgreesWithTheLayoutList(f *testing.F) {
	for _, s := range []string{"2025-12-01", "2025-12-01 05", "2025-12-01T05", "2025-12-01 05:04", "2025-12-01T05:04",
		"2025-12-01 05:04:03", "2025-12-01T05:04:03.5", "2025-12-01 05:04:03.123456789", "2025-12-01 05:04:03.1-07:00",
		"2025-12-01 05:04:03.25Z", "2025-12-01T05:04:03+02:00", "2025-13-01 05", "2025-12-01 5", "2025-12-01x05"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.TrimSpace(s)
		want, wantOK := parseTimeLayouts(s)
		got, ok := ParseTime(s)
		if _, err := strconv.ParseInt(s, 10, 64); err == nil && len(s) >= 9 {
			return // epoch seconds, read before any layout
		}
		if ok != wantOK || !got.Equal(want) {
			t.Fatalf("ParseTime(%q) = %v, %v; the layout list says %v, %v", s, got, ok, want, wantOK)
		}
	})
}

// Date columns bind the local calendar date of a bound in the window's zone (an exclusive end
// rounds up unless it is local midnight); instant columns bind the instant as before.
func TestBindBoundDateColumns(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	nyMidnight := time.Date(2025, 12, 15, 5, 0, 0, 0, time.UTC) // 00:00 in New York
	late := time.Date(2025, 12, 16, 3, 0, 0, 0, time.UTC)       // 22:00 on the 15th in New York
	cases := []struct {
		engine  Engine
		f       TimeFormat
		colType string
		t       time.Time
		loc     *time.Location
		roundUp bool
		ph      string
		val     any
	}{
		{SQLite, TimeTextDate, "DATE", nyMidnight, ny, false, "?", "2025-12-15"},
		{SQLite, TimeTextDate, "DATE", nyMidnight, ny, true, "?", "2025-12-15"},
		{SQLite, TimeTextDate, "DATE", late, ny, true, "?", "2025-12-16"},
		{SQLite, TimeTextDate, "DATE", late, ny, false, "?", "2025-12-15"},
		{SQLite, TimeTextDate, "DATE", late, nil, false, "?", "2025-12-16"}, // no zone: UTC
		{Postgres, TimeNative, "date", nyMidnight, ny, false, "$1::date", "2025-12-15"},
		{Postgres, TimeNative, "date", late, ny, true, "$1::date", "2025-12-16"},
		{Snowflake, TimeNative, "DATE", late, ny, false, "TO_DATE(?)", "2025-12-15"},
		{Postgres, TimeNative, "timestamp without time zone", nyMidnight, ny, false, "$1::timestamp", nyMidnight},
		{SQLite, TimeTextSpace, "DATETIME", nyMidnight, ny, true, "?", "2025-12-15 05:00:00"},
	}
	for i, c := range cases {
		d := Dialect{Engine: c.engine}
		a := d.NewArgs()
		if ph := d.BindBound(a, c.f, c.colType, c.t, c.loc, c.roundUp); ph != c.ph || a.Vals[0] != c.val {
			t.Errorf("case %d: placeholder %q value %v, want %q %v", i, ph, a.Vals[0], c.ph, c.val)
		}
	}
}
