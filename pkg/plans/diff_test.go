package plans

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
		{"no header", "@@ -1 +1 @@\n-a\n+A\n", "", "no --- and +++"},
		{"no --- line", "+++ b/f\n@@ -1 +1 @@\n-a\n+A\n", "", "without the --- line"},
		{"count mismatch names the hunk header", "diff --git a/f.sql b/f.sql\n--- a/f.sql\n+++ b/f.sql\n@@ -2,3 +2,3 @@ select\n b\n-c\n+C\n", "", `hunk "@@ -2,3 +2,3 @@ select"`},
		{"nearest of two matches", "--- a/f.sql\n+++ b/f.sql\n@@ -4 +4 @@\n-x\n+X\n", "", ""},
		{"two files", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-a\n+A\n", "", "second file"},
		{"garbage", "hello", "", "not part of a unified diff"},
		{"bad hunk header", "--- a/f\n+++ b/f\n@@ -x +1 @@\n", "", "bad line number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code := code
			if c.name == "nearest of two matches" {
				code, c.want = "x\na\nb\nx\nc\nd\ne\nf\nx\n", "x\na\nb\nX\nc\nd\ne\nf\nx\n"
			}
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

// lf and crlf convert line endings for the CRLF cases.
func lf(s string) string   { return strings.ReplaceAll(s, "\r\n", "\n") }
func crlf(s string) string { return strings.ReplaceAll(lf(s), "\n", "\r\n") }

// FuzzApplyDiff: any text as code and diff either applies or is refused with an error; it never
// panics, and a diff unifiedDiff wrote always applies to its own base and gives exactly the
// other side, final newline or not, and in CRLF for a CRLF base.
func FuzzApplyDiff(f *testing.F) {
	f.Add(egressModel, "--- a/m.sql\n+++ b/m.sql\n@@ -1,2 +1,2 @@\n-with usage as (\n+with u as (\n     select account_id, hour, egress_bytes\n", "x")
	f.Add("a\nb\n", "--- a/f\n+++ b/f\n@@ -1,0 +1,1 @@\n+z\n", "a\nz\nb\n")
	f.Add("", "--- /dev/null\n+++ b/new.sql\n@@ -0,0 +1,1 @@\n+select 1\n", "select 1\n")
	f.Add("a\n", "--- a/f\n+++ b/f\n@@ -99999999,1 +1 @@\n-a\n", "")
	f.Add("a\nb", "--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n")
	f.Add("a\r\nb\r\n", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n", "A\r\nb\r\nc")
	f.Add("select 1\r\nfrom t", "", "select 2\r\nfrom t")
	f.Fuzz(func(t *testing.T, code, diff, other string) {
		_, _, _ = ApplyDiff(code, diff) // must not panic
		base, want := code, other
		if crlfOnly(code) && !strings.Contains(lf(code)+lf(other), "\r") {
			// A CRLF model: the diff is of its lines, and the result keeps CRLF.
			base, other, want = lf(code), lf(other), crlf(other)
		} else if strings.Contains(code, "\r") || strings.Contains(other, "\r") {
			return // a lone CR or mixed endings: lines are not comparable through a diff
		}
		d := unifiedDiff("m.sql", base, other)
		if d == "" {
			return
		}
		got, _, err := ApplyDiff(code, d)
		if err != nil {
			t.Fatalf("own diff does not apply: %v\n%s", err, d)
		}
		if got != want {
			t.Fatalf("own diff applied to %q gives %q, want %q\n%s", code, got, want, d)
		}
	})
}

// A model without a final newline: the diff says so as git does, git apply takes it, and
// ApplyDiff gives what git gives.
func TestUnifiedDiffWithoutFinalNewlineAppliesWithGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	cases := []struct{ name, old, new string }{
		{"old side lacks it", "select 1\nfrom t\nwhere x", "select 1\nfrom t\nwhere y\n"},
		{"new side lacks it", "select 1\nfrom t\n", "select 1\nfrom u"},
		{"both lack it", "a\nb\nc\nd\ne\nf", "a\nB\nc\nd\ne\nf"},
		{"only the newline changes", "a\nb", "a\nb\n"},
		{"the story's model", strings.TrimSuffix(egressModel, "\n"), strings.Replace(strings.TrimSuffix(egressModel, "\n"), "group by 1, 2", "group by 1, 2, 3", 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "models", "m.sql"), []byte(c.old), 0o644); err != nil {
				t.Fatal(err)
			}
			d := unifiedDiff("models/m.sql", c.old, c.new)
			if err := os.WriteFile(filepath.Join(dir, "change.diff"), []byte(d), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"apply", "--check", "change.diff"}, {"apply", "change.diff"}} {
				cmd := exec.Command(git, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %s: %v\n%s\n%s", strings.Join(args, " "), err, out, d)
				}
			}
			byGit, err := os.ReadFile(filepath.Join(dir, "models", "m.sql"))
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := ApplyDiff(c.old, d)
			if err != nil || got != c.new || string(byGit) != c.new {
				t.Fatalf("ApplyDiff %q (%v), git %q, want %q\n%s", got, err, byGit, c.new, d)
			}
		})
	}
}

// ApplyDiff holds a diff to its "\ No newline at end of file" markers on both sides.
func TestApplyDiffHonoursNoNewlineMarkers(t *testing.T) {
	cases := []struct{ name, code, diff, want, err string }{
		{"adds the final newline", "a\nb", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n", ""},
		{"drops the final newline", "a\nb\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n", "a\nb", ""},
		{"context at the end without one", "a\nb", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n", "A\nb", ""},
		{"marker but the code ends in a newline", "a\nb\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n", "", "ends in one"},
		{"no marker but the code lacks the newline", "a\nb", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n", "", "No newline at end of file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := ApplyDiff(c.code, c.diff)
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

// A CRLF model is patched by its lines and keeps its CRLF endings.
func TestApplyDiffPatchesACRLFModel(t *testing.T) {
	code := crlf(egressModel)
	changed := strings.Replace(egressModel, "group by 1, 2", "group by 1, 2, 3", 1)
	diff := unifiedDiff("m.sql", egressModel, changed)
	got, _, err := ApplyDiff(code, diff)
	if err != nil || got != crlf(changed) {
		t.Fatalf("got %q, %v", got, err)
	}
	// A diff written with CRLF line ends (as Windows tools do) applies the same way.
	if got, _, err := ApplyDiff(code, crlf(diff)); err != nil || got != crlf(changed) {
		t.Fatalf("CRLF diff: %q, %v", got, err)
	}
}

// BenchmarkApplyDiffLargeModel: a hunk near the top of a long file with repeated lines; find
// stops once it is further from the stated line than the best match. DW_BENCH_LINES sets the size.
func BenchmarkApplyDiffLargeModel(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("DW_BENCH_LINES")); err == nil && v > 0 {
		n = v
	}
	code := strings.Repeat("select 1\n", n)
	diff := "--- a/m.sql\n+++ b/m.sql\n@@ -2,2 +2,2 @@\n select 1\n-select 1\n+select 2\n"
	for b.Loop() {
		if _, _, err := ApplyDiff(code, diff); err != nil {
			b.Fatal(err)
		}
	}
}
