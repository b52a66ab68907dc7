package receipts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostile holds what a value written into a receipt may carry: a table's cell separator, code
// fences, markup, and a line break.
const hostile = "a | b `tick` <script>alert(1)</script> **x**\nsecond line & more"

// richReceipt fills every part of a receipt, with hostile strings in every free field, so a
// rendering that drops, reorders or re-escapes anything shows up against the golden files.
func richReceipt() (Receipt, Body) {
	at := time.Date(2026, 11, 29, 15, 30, 0, 0, time.UTC)
	resolved, decided := at.Add(2*time.Hour), at.Add(20*time.Minute)
	b := Body{
		Incident: IncidentSummary{ID: 3, Asset: "warehouse:sqlite/main.usage`hourly|x", FailureMode: "null_rate" + hostile, Severity: "sev1",
			Summary: "egress_bytes null in 18%" + hostile, OpenedAt: at, ResolvedAt: &resolved},
		PlanID: 4,
		Cause:  "v12 removed response_bytes; " + hostile,
		Evidence: []Evidence{
			{Kind: "schema_diff", Source: "registry:" + hostile, Detail: "v12 drops response_bytes " + hostile},
			{Kind: "lineage" + hostile, Source: "graph", Detail: ""},
		},
		Proposals: []Proposal{
			{Order: 1, Class: "pause_job", Target: "job:airflow/x", Title: "Pause x " + hostile, Executor: "data_workers", RequestID: 7, Undo: "unpause x " + hostile},
			{Class: "trigger_job" + hostile, Target: "job:airflow/`x|y`", Title: "Re-run x", Executor: "owner" + hostile},
		},
		Approvals: []Approval{
			{RequestID: 7, Class: "pause_job", Title: "Pause x", PayloadSHA256: "ab12", Status: "approved", DecidedBy: "ann " + hostile, DecidedAt: &decided},
			{RequestID: 8, Class: "trigger_job" + hostile, Title: "Re-run", PayloadSHA256: "cd|34`", Status: "pending"},
		},
		Actions: []Action{
			{ID: 10, Class: "pause_job", Target: "job:airflow/x", Status: "succeeded", Result: "paused " + hostile, Undo: "unpause x " + hostile,
				Authority: AuthorityApproval, RequestID: 7, ApprovedBy: "ann " + hostile},
			{ID: 11, Class: "trigger_job", Target: "job:airflow/x|" + hostile, Status: "failed" + hostile, Result: "", Undo: "",
				Authority: AuthorityL3, Rule: "L3 clean record: " + hostile},
			{ID: 12, Class: "notify", Target: "slack:#data", Status: "handed_over", Result: "sent", Undo: "none"},
		},
		ChecksBefore: []Check{
			{At: at, Asset: "warehouse:sqlite/main.usage_hourly", Metric: "null_rate", Subject: "egress_bytes" + hostile, Value: 0.18, Status: "fail", Why: "above 0.01 " + hostile},
		},
		ChecksAfter: []Check{
			{At: resolved, Asset: "warehouse:`x`|y", Metric: "null_rate" + hostile, Value: 0, Status: "pass"},
			{At: resolved, Asset: "warehouse:sqlite/main.usage_hourly", Metric: "row_count", Value: 1.5e7, Status: "pass", Why: "within 5%"},
		},
		Undo:    []string{"unpause x " + hostile, "revert schema v13"},
		Outcome: "resolved " + hostile,
	}
	return Receipt{Seq: 9, IncidentID: 3, CreatedAt: resolved.Add(time.Minute), MAC: "mac|`9`", PrevMAC: "mac8" + hostile}, b
}

// TestMarkdownMatchesTheGoldenFiles: the files under testdata were first written by Markdown before
// receipts were built as a Doc, so the Doc's rendering reproduces what receipts always read as;
// rich.md has since changed only where a hostile value broke out of its table cell or code span
// (a "|" or line break in a class, status or name; a backtick in a target or hash).
func TestMarkdownMatchesTheGoldenFiles(t *testing.T) {
	rich, richBody := richReceipt()
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		r Receipt
		b Body
	}{
		"rich.md": {rich, richBody},
		"bare.md": {Receipt{Seq: 1, IncidentID: 1, CreatedAt: at, MAC: "m1"}, Body{Incident: IncidentSummary{ID: 1, Asset: "a", OpenedAt: at}}},
	} {
		want, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := Markdown(c.r, c.b); got != string(want) {
			t.Errorf("%s differs from the golden file:\n got:\n%s\nwant:\n%s", name, got, want)
		}
	}
}

// Whatever a value holds, every row of every table keeps its table's columns: no value ends its
// cell or its row early.
func TestHostileValuesStayInTheirCells(t *testing.T) {
	r, b := richReceipt()
	md := Markdown(r, b)
	lines := strings.Split(md, "\n")
	cols := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, "|") {
			cols = 0
			continue
		}
		n := unescapedPipes(l) - 1
		if cols == 0 {
			cols = n // the header
			continue
		}
		if n != cols {
			t.Errorf("line %d has %d cells, its table %d:\n%s", i+1, n, cols, l)
		}
	}
	if !strings.Contains(md, "| `` job:airflow/`x\\|y` `` |") {
		t.Errorf("a target holding backticks is not one code span:\n%s", md)
	}
}

func unescapedPipes(l string) int {
	n := 0
	for i := 0; i < len(l); i++ {
		if l[i] == '\\' {
			i++
			continue
		}
		if l[i] == '|' {
			n++
		}
	}
	return n
}
