package console

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPayloadsAreShownReadably(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload map[string]any
		kind    string
		pre     bool
		lines   []diffLine
		value   string
	}{
		{"a short value inline", map[string]any{"dag_id": "sync_metered_usage_to_stripe"}, "text", false, nil, "sync_metered_usage_to_stripe"},
		{"SQL preformatted", map[string]any{"statement": "INSERT INTO t\nSELECT 1"}, "sql", true, nil, "INSERT INTO t\nSELECT 1"},
		{"a schema indented", map[string]any{"schema": `{"type":"record","fields":[]}`}, "schema", true, nil, "{\n  \"type\": \"record\",\n  \"fields\": []\n}"},
		{"a unified diff marked", map[string]any{"diff": "--- a/m.sql\n+++ b/m.sql\n@@ -1 +1 @@\n-old\n+new\n"}, "diff", true,
			[]diffLine{{"", "--- a/m.sql"}, {"", "+++ b/m.sql"}, {"hunk", "@@ -1 +1 @@"}, {"del", "-old"}, {"add", "+new"}}, ""},
		{"a diff under another key", map[string]any{"change": "@@ -1 +1 @@\n-a\n+b"}, "diff", true, []diffLine{{"hunk", "@@ -1 +1 @@"}, {"del", "-a"}, {"add", "+b"}}, ""},
		{"numbers exactly", map[string]any{"job_id": json.Number("55")}, "json", false, nil, "55"},
		{"nested values as JSON", map[string]any{"conf": map[string]any{"date": "2026-11-29"}}, "json", true, nil, "{\n  \"date\": \"2026-11-29\"\n}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := readablePayload(tc.payload)
			if len(parts) != 1 {
				t.Fatalf("%d parts", len(parts))
			}
			p := parts[0]
			if p.Kind != tc.kind || p.Pre != tc.pre || (tc.lines == nil && p.Value != tc.value) {
				t.Fatalf("got %+v", p)
			}
			if tc.lines != nil && (len(p.Lines) != len(tc.lines) || !equalLines(p.Lines, tc.lines)) {
				t.Fatalf("lines %+v, want %+v", p.Lines, tc.lines)
			}
		})
	}
	// Keys come in a stable order.
	parts := readablePayload(map[string]any{"b": "1", "a": "2"})
	if parts[0].Key != "a" || parts[1].Key != "b" {
		t.Fatalf("%+v", parts)
	}
}

func equalLines(a, b []diffLine) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Any JSON object a proposal may carry renders without panicking, and every string value survives.
func FuzzReadablePayload(f *testing.F) {
	for _, s := range []string{`{"diff":"--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y"}`, `{"schema":"{not json"}`, `{"sql":""}`, `{"x":null,"y":[1,{"z":true}]}`, `{"diff":""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var p map[string]any
		if json.Unmarshal([]byte(raw), &p) != nil {
			return
		}
		parts := readablePayload(p)
		if len(parts) != len(p) {
			t.Fatalf("%d parts for %d keys", len(parts), len(p))
		}
		for _, part := range parts {
			if s, ok := p[part.Key].(string); ok && part.Lines == nil && part.Kind != "schema" && part.Value != s {
				t.Fatalf("%q changed to %q", s, part.Value)
			}
			if s, ok := p[part.Key].(string); ok && part.Lines != nil {
				var texts []string
				for _, l := range part.Lines {
					texts = append(texts, l.Text)
				}
				if strings.Join(texts, "\n") != strings.TrimRight(s, "\n") {
					t.Fatalf("diff lines lost text of %q", s)
				}
			}
		}
	})
}
