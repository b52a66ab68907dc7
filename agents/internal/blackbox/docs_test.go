package blackbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

type listedTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
	Annotations struct {
		ReadOnly    bool `json:"readOnlyHint"`
		Destructive bool `json:"destructiveHint"`
	} `json:"annotations"`
}

func agentTools(t *testing.T, agent string) []listedTool {
	t.Helper()
	cmd := exec.Command(startAgent(), agent, "tools")
	cmd.Env = childEnv(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s tools: %v", agent, err)
	}
	var res struct {
		Tools []listedTool `json:"tools"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	sort.Slice(res.Tools, func(i, j int) bool { return res.Tools[i].Name < res.Tools[j].Name })
	return res.Tools
}

func kindOf(tl listedTool) string {
	switch {
	case tl.Annotations.ReadOnly:
		return "read"
	case tl.Annotations.Destructive:
		return "destructive"
	}
	return "write"
}

// firstSentence ends at the first ". " that does not close an abbreviation such as "e.g." or "i.e.".
func firstSentence(s string) string {
	for from := 0; ; {
		i := strings.Index(s[from:], ". ")
		if i < 0 {
			return s
		}
		end := from + i + 1
		if !strings.HasSuffix(s[:end], "e.g.") && !strings.HasSuffix(s[:end], "i.e.") && !strings.HasSuffix(s[:end], "etc.") {
			return s[:end]
		}
		from = end
	}
}

// TestToolDocsMatchTheBinaries regenerates docs/tools.md and README.md's tools table from each
// binary's `tools` output and fails when the committed text differs. UPDATE_DOCS=true rewrites them.
func TestToolDocsMatchTheBinaries(t *testing.T) {
	var table, ref bytes.Buffer
	table.WriteString("| Agent | Tool | Kind | What it does |\n|---|---|---|---|\n")
	ref.WriteString("# Tools reference\n\nGenerated from each binary's `tools` output by `UPDATE_DOCS=true go test ./agents/internal/blackbox -run TestToolDocs`; do not edit by hand.\n")
	for _, a := range agents {
		tools := agentTools(t, a)
		fmt.Fprintf(&ref, "\n## %s\n", a)
		for _, tl := range tools {
			fmt.Fprintf(&table, "| %s | `%s` | %s | %s |\n", a, tl.Name, kindOf(tl), strings.ReplaceAll(firstSentence(tl.Description), "|", "\\|"))
			fmt.Fprintf(&ref, "\n### `%s` (%s)\n\n%s\n", tl.Name, kindOf(tl), tl.Description)
			props, _ := tl.InputSchema["properties"].(map[string]any)
			if len(props) == 0 {
				ref.WriteString("\nNo arguments.\n")
				continue
			}
			required := map[string]bool{}
			if rs, ok := tl.InputSchema["required"].([]any); ok {
				for _, r := range rs {
					required[fmt.Sprint(r)] = true
				}
			}
			names := make([]string, 0, len(props))
			for n := range props {
				names = append(names, n)
			}
			sort.Strings(names)
			ref.WriteString("\n| Argument | Type | Required | Description |\n|---|---|---|---|\n")
			for _, n := range names {
				p, _ := props[n].(map[string]any)
				typ := fmt.Sprint(p["type"])
				if e, ok := p["enum"]; ok {
					typ += fmt.Sprintf(" (one of %v)", e)
				}
				req := ""
				if required[n] {
					req = "yes"
				}
				desc, _ := p["description"].(string)
				fmt.Fprintf(&ref, "| `%s` | %s | %s | %s |\n", n, typ, req, strings.ReplaceAll(desc, "|", "\\|"))
			}
		}
	}
	root := repoRoot()
	checkGenerated(t, filepath.Join(root, "docs", "tools.md"), ref.String(), "", "")
	checkGenerated(t, filepath.Join(root, "README.md"), table.String(), "<!-- tools:begin -->\n", "<!-- tools:end -->")
}

// checkGenerated compares (or, with UPDATE_DOCS=true, writes) the whole file, or the part between
// the begin and end markers.
func checkGenerated(t *testing.T, path, want, begin, end string) {
	t.Helper()
	cur, err := os.ReadFile(path)
	if err != nil && begin != "" {
		t.Fatal(err)
	}
	next := want
	if begin != "" {
		s := string(cur)
		i, j := strings.Index(s, begin), strings.Index(s, end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the markers %q … %q", path, begin, end)
		}
		next = s[:i+len(begin)] + want + s[j:]
	}
	if os.Getenv("UPDATE_DOCS") == "true" {
		if err := os.WriteFile(path, []byte(next), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(cur) != next {
		t.Errorf("%s is out of date with the binaries' tools: run UPDATE_DOCS=true go test ./agents/internal/blackbox -run TestToolDocs", path)
	}
}

// TestNoAgentServesAHumanDecision checks, across all five binaries, that no tool's name looks like
// one of the human side's decisions: approving, rejecting, stopping, resuming, changing autonomy,
// settling an action or setting a person's severity or status. Those are dw-incidents subcommands.
func TestNoAgentServesAHumanDecision(t *testing.T) {
	banned := []string{"approve", "reject", "stop", "resume", "autonomy", "decide", "grant", "severity", "settle", "set_status"}
	for _, a := range agents {
		for _, tl := range agentTools(t, a) {
			for _, b := range banned {
				if strings.Contains(tl.Name, b) {
					t.Errorf("%s serves %s, which looks like it could %s: that must stay a human command", a, tl.Name, b)
				}
			}
		}
	}
}
