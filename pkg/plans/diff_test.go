package plans

import (
	"strings"
	"testing"
	"time"
)

// The story's model as it would sit in the dbt project (models/marts/fct_billable_egress.sql).
const egressModel = `with usage as (
    select account_id, hour, egress_bytes
    from {{ source('usage', 'usage_hourly') }}
    where hour >= dateadd(day, -35, current_date)
)
select
    account_id,
    date_trunc('day', hour) as usage_day,
    sum(coalesce(egress_bytes, 0)) as billable_bytes,
    sum(coalesce(egress_bytes, 0)) / power(1024, 3) as billable_gib
from usage
group by 1, 2
`

func TestSplitModelCodeDiffAppliesToTheModel(t *testing.T) {
	from := time.Date(2026, 8, 14, 0, 0, 0, 0, time.UTC)
	code, n := splitModelCode(egressModel, sourceRef("usage", "usage_hourly"), "ANALYTICS.USAGE.USAGE_HOURLY_V2", "hour", "usage_hourly", from)
	if n != 1 {
		t.Fatalf("%d references rewritten", n)
	}
	for _, want := range []string{
		"select * from {{ source('usage', 'usage_hourly') }} where hour < cast('2026-08-14 00:00:00' as timestamp)",
		"select * from ANALYTICS.USAGE.USAGE_HOURLY_V2 where hour >= cast('2026-08-14 00:00:00' as timestamp)",
		") as usage_hourly\n    where hour >= dateadd"} {
		if !strings.Contains(code, want) {
			t.Errorf("model lacks %q:\n%s", want, code)
		}
	}
	diff := unifiedDiff("models/marts/fct_billable_egress.sql", egressModel, code)
	t.Log(diff)
	got, path, err := ApplyDiff(egressModel, diff)
	if err != nil || got != code || path != "models/marts/fct_billable_egress.sql" {
		t.Fatalf("apply: %v, path %q, equal %v", err, path, got == code)
	}
	// Against code that moved on, the same diff is refused with the hunk named.
	moved := strings.Replace(egressModel, "from {{ source('usage', 'usage_hourly') }}", "from {{ ref('stg_usage') }}", 1)
	if _, _, err := ApplyDiff(moved, diff); err == nil || !strings.Contains(err.Error(), "hunk 1") {
		t.Errorf("stale diff: %v", err)
	}
}

func TestSplitModelCodeKeepsAnAlias(t *testing.T) {
	code := "select u.hour from {{ source(\"usage\",\"usage_hourly\") }} u where u.hour > 0\n"
	out, n := splitModelCode(code, sourceRef("usage", "usage_hourly"), "A.B.C_V2", "hour", "usage_hourly", time.Unix(0, 0))
	if n != 1 || strings.Contains(out, "as usage_hourly") || !strings.Contains(out, ") u where") {
		t.Errorf("%d: %s", n, out)
	}
}

func TestApplyDiffTable(t *testing.T) {
	code := "a\nb\nc\nd\ne\n"
	cases := []struct {
		name, diff, want, err string
	}{
		{"replace", "--- a/f.sql\n+++ b/f.sql\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n", "a\nb\nC\nd\ne\n", ""},
		{"offset", "--- a/f.sql\n+++ b/f.sql\n@@ -10,2 +10,2 @@\n-d\n+D\n e\n", "a\nb\nc\nD\ne\n", ""},
		{"insert", "--- a/f.sql\n+++ b/f.sql\n@@ -1,0 +2,1 @@\n+x\n", "a\nx\nb\nc\nd\ne\n", ""},
		{"git headers", "diff --git a/f.sql b/f.sql\nindex 1..2 100644\n--- a/f.sql\n+++ b/f.sql\n@@ -5 +5 @@\n-e\n+E\n", "a\nb\nc\nd\nE\n", ""},
		{"context mismatch", "--- a/f.sql\n+++ b/f.sql\n@@ -2,2 +2,2 @@\n x\n-c\n+C\n", "", "does not apply"},
		{"count mismatch", "--- a/f.sql\n+++ b/f.sql\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n", "", "header says"},
		{"no header", "@@ -1 +1 @@\n-a\n+A\n", "", "no +++"},
		{"two files", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-a\n+A\n", "", "second file"},
		{"garbage", "hello", "", "not part of a unified diff"},
		{"bad hunk header", "--- a/f\n+++ b/f\n@@ -x +1 @@\n", "", "bad line number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := ApplyDiff(code, c.diff)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want error with %q, got %v (%q)", c.err, err, got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// FuzzApplyDiff: any text as code and diff either applies or is refused with an error; it never
// panics, and a diff unifiedDiff wrote always applies to its own base.
func FuzzApplyDiff(f *testing.F) {
	f.Add(egressModel, "--- a/m.sql\n+++ b/m.sql\n@@ -1,2 +1,2 @@\n-with usage as (\n+with u as (\n     select account_id, hour, egress_bytes\n", "x")
	f.Add("a\nb\n", "--- a/f\n+++ b/f\n@@ -1,0 +1,1 @@\n+z\n", "a\nz\nb\n")
	f.Add("", "--- /dev/null\n+++ b/new.sql\n@@ -0,0 +1,1 @@\n+select 1\n", "select 1\n")
	f.Add("a\n", "--- a/f\n+++ b/f\n@@ -99999999,1 +1 @@\n-a\n", "")
	f.Fuzz(func(t *testing.T, code, diff, other string) {
		_, _, _ = ApplyDiff(code, diff) // must not panic
		d := unifiedDiff("m.sql", code, other)
		if d == "" {
			return
		}
		got, _, err := ApplyDiff(code, d)
		if err != nil {
			if strings.Contains(code, "\r") || strings.Contains(other, "\r") {
				return // CRLF is normalised in diffs, not in code
			}
			t.Fatalf("own diff does not apply: %v\n%s", err, d)
		}
		// Files end in a newline; without one the last line is ambiguous in a diff that carries no
		// "\ No newline at end of file" marker, so only the content of whole lines is compared.
		whole := func(s string) bool { return s == "" || strings.HasSuffix(s, "\n") }
		if whole(code) && whole(other) && got != other {
			t.Fatalf("own diff applied to %q gives %q, want %q\n%s", code, got, other, d)
		}
	})
}
