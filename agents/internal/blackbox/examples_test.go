package blackbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	File string
	Line int
	Lang string
	Text string
	// Skip is the reason given by a `<!-- docs-test: skip: REASON -->` line just before the block.
	Skip string
}

var skipMarker = regexp.MustCompile(`^<!-- docs-test: skip: (.+) -->$`)

// docBlocks reads the fenced code blocks of a file of the repository.
func docBlocks(t *testing.T, rel string) []docBlock {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(), rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docBlock
	var cur *docBlock
	var lines []string
	skip := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &docBlock{File: rel, Line: n, Lang: strings.TrimPrefix(line, "```"), Skip: skip}
			lines = nil
		case cur != nil && line == "```":
			cur.Text = strings.Join(lines, "\n") + "\n"
			out = append(out, *cur)
			cur, skip = nil, ""
		case cur != nil:
			lines = append(lines, line)
		default:
			if m := skipMarker.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				skip = m[1]
			} else if strings.TrimSpace(line) != "" {
				skip = ""
			}
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: unclosed code block", rel, cur.Line)
	}
	return out
}

// nodeBin is .ci/node_modules/.bin, where .ci/run installs Claude Code and the Inspector CLI.
func nodeBin() string { return filepath.Join(repoRoot(), ".ci", "node_modules", ".bin") }

// needNodeTool skips (or, under CI, fails) when .ci/run has not installed the named tool.
func needNodeTool(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(nodeBin(), name)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s missing at %s: .ci/run must install it", name, p)
		}
		t.Skipf("%s not installed (bash .ci/run installs it at %s)", name, p)
	}
	return p
}

// freshUser is the environment of a new user: an empty HOME (so no earlier client config and the
// default DW_HOME under it), no DW_* settings, and the CI-installed node tools on PATH.
func freshUser(t *testing.T) (home string, env []string) {
	t.Helper()
	home = t.TempDir()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "DW_") || k == "HOME" || k == "PATH" || k == "GITHUB_STEP_SUMMARY" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "PATH="+nodeBin()+string(os.PathListSeparator)+os.Getenv("PATH"),
		// Claude Code's health check needs no API key and, with these, sends nothing anywhere.
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	return home, env
}

func runBash(t *testing.T, dir string, env []string, script string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("bash: %v", err)
	}
	return out.String(), errb.String(), code
}

// TestReadmeAndConnectingShellExamplesRun runs every shell example of the README and
// docs/connecting.md as written, from the checkout's root, as a new user with a fresh DW_HOME. A
// block that cannot run here says why in a skip marker; the Claude Code lines have their own test.
func TestReadmeAndConnectingShellExamplesRun(t *testing.T) {
	for _, file := range []string{"README.md", "docs/connecting.md"} {
		for _, b := range docBlocks(t, file) {
			if b.Lang != "sh" {
				continue
			}
			t.Run(strings.ReplaceAll(file, "/", "_")+"_line_"+itoa(b.Line), func(t *testing.T) {
				if b.Skip != "" {
					t.Skipf("%s:%d: %s", b.File, b.Line, b.Skip)
				}
				if strings.Contains(b.Text, "claude mcp") {
					t.Skip("run by TestClaudeCodeConnectsFromReadme")
				}
				if strings.Contains(b.Text, "mcp-inspector") {
					needNodeTool(t, "mcp-inspector")
				}
				_, env := freshUser(t)
				out, errOut, code := runBash(t, repoRoot(), env, b.Text)
				if code != 0 {
					t.Fatalf("%s:%d exits %d:\n%s\nstdout:\n%s\nstderr:\n%s", b.File, b.Line, code, b.Text, out, errOut)
				}
			})
		}
	}
}

// TestClaudeCodeConnectsFromReadme pastes the README's Claude Code lines into a shell on a fresh
// HOME and DW_HOME: `claude mcp list` must report all five servers connected.
func TestClaudeCodeConnectsFromReadme(t *testing.T) {
	needNodeTool(t, "claude")
	var block *docBlock
	for _, b := range docBlocks(t, "README.md") {
		if b.Lang == "sh" && strings.Contains(b.Text, "claude mcp add") {
			block = &b
			break
		}
	}
	if block == nil {
		t.Fatal("README.md has no `claude mcp add` block")
	}
	_, env := freshUser(t)
	out, errOut, code := runBash(t, repoRoot(), env, block.Text)
	if code != 0 {
		t.Fatalf("README.md:%d exits %d\nstdout:\n%s\nstderr:\n%s", block.Line, code, out, errOut)
	}
	for _, a := range agents {
		if !regexp.MustCompile(`(?m)^` + a + `: .*start-agent\.sh ` + a + `.*✔ Connected`).MatchString(out) {
			t.Errorf("claude mcp list does not show %s connected:\n%s\nstderr:\n%s", a, out, errOut)
		}
	}
}

// mcpJSONBlocks are the README's .mcp.json examples: the first for this checkout, the second for a
// repository beside it.
func mcpJSONBlocks(t *testing.T) []docBlock {
	var out []docBlock
	for _, b := range docBlocks(t, "README.md") {
		if b.Lang == "json" && strings.Contains(b.Text, `"mcpServers"`) {
			out = append(out, b)
		}
	}
	if len(out) != 2 {
		t.Fatalf("README.md has %d .mcp.json examples, want 2 (this checkout, your repository)", len(out))
	}
	return out
}

// userRepo lays out a new user's repository beside a Data Workers checkout (../data-workers) with
// the given .mcp.json, and returns the repository's directory.
func userRepo(t *testing.T, mcpJSON string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(repoRoot(), filepath.Join(dir, "data-workers")); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "my-repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".mcp.json"), []byte(mcpJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo
}

type sdkServer struct {
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Capabilities []string `json:"capabilities"`
	Tools        []struct {
		Name  string `json:"name"`
		Title string `json:"title"`
	} `json:"tools"`
	CheckConnections struct {
		IsError   bool   `json:"isError"`
		Agent     string `json:"agent"`
		StoreOK   bool   `json:"store_ok"`
		StorePath string `json:"store_path"`
	} `json:"check_connections"`
	Prompts           []string `json:"prompts"`
	Resources         []string `json:"resources"`
	ResourceTemplates []string `json:"resource_templates"`
	Error             string   `json:"error"`
	Stderr            string   `json:"stderr"`
}

// TestSDKClientConnectsFromReadmeMCPJSON starts every server of both README .mcp.json examples with
// the official TypeScript SDK client, as a host would: tools list, titles, a check_connections whose
// structured result the SDK validates against the output schema, prompts and resource templates.
func TestSDKClientConnectsFromReadmeMCPJSON(t *testing.T) {
	needNodeTool(t, "mcp-inspector") // .ci/run installs the SDK beside it
	sdk := filepath.Join(repoRoot(), ".ci", "node_modules", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("@modelcontextprotocol/sdk missing at %s: .ci/run must install it", sdk)
		}
		t.Skip("@modelcontextprotocol/sdk not installed (bash .ci/run installs it)")
	}
	script := filepath.Join(repoRoot(), "agents", "internal", "blackbox", "testdata", "clients", "sdk-client.mjs")
	blocks := mcpJSONBlocks(t)
	for i, b := range blocks {
		name := []string{"this_checkout", "your_repository"}[i]
		t.Run(name, func(t *testing.T) {
			home, env := freshUser(t)
			dir := repoRoot()
			if i == 1 {
				dir = userRepo(t, b.Text)
			}
			mcpJSON := filepath.Join(t.TempDir(), "mcp.json")
			if err := os.WriteFile(mcpJSON, []byte(b.Text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("node", script, sdk, mcpJSON)
			cmd.Dir, cmd.Env = dir, env
			var errb strings.Builder
			cmd.Stderr = &errb
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("sdk client: %v\n%s\n%s", err, out, errb.String())
			}
			var report map[string]sdkServer
			if err := json.Unmarshal(out, &report); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for _, a := range agents {
				r, ok := report[a]
				if !ok || r.Error != "" {
					t.Errorf("%s (README.md:%d): %s\n%s", a, b.Line, r.Error, r.Stderr)
					continue
				}
				cc := r.CheckConnections
				if r.Server.Name != a || len(r.Tools) == 0 || cc.IsError || cc.Agent != a || !cc.StoreOK ||
					!strings.HasPrefix(cc.StorePath, filepath.Join(home, ".dataworkers")) {
					t.Errorf("%s: %+v", a, r)
				}
				for _, tl := range r.Tools {
					if tl.Title == "" {
						t.Errorf("%s: tool %s has no title", a, tl.Name)
					}
				}
				checkPromptsAndResources(t, a, r)
			}
		})
	}
}

// TestInspectorCLIConnectsFromReadmeMCPJSON reads the README's .mcp.json through the Inspector's
// own --config option, for each server.
func TestInspectorCLIConnectsFromReadmeMCPJSON(t *testing.T) {
	bin := inspector(t)
	b := mcpJSONBlocks(t)[0]
	mcpJSON := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(mcpJSON, []byte(b.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		t.Run(a, func(t *testing.T) {
			_, env := freshUser(t)
			cmd := exec.Command(bin, "--cli", "--config", mcpJSON, "--server", a, "--method", "tools/call", "--tool-name", "check_connections", "--format", "json")
			cmd.Dir, cmd.Env = repoRoot(), env
			var errb strings.Builder
			cmd.Stderr = &errb
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("inspector: %v\n%s\n%s", err, out, errb.String())
			}
			var res struct {
				Result struct {
					StructuredContent struct {
						Agent string `json:"agent"`
					} `json:"structuredContent"`
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if err := json.Unmarshal(out, &res); err != nil || res.Result.IsError || res.Result.StructuredContent.Agent != a {
				t.Fatalf("%v: %s", err, out)
			}
		})
	}
}

// TestCIGateOfflineExampleGivesTheVerdictShown runs docs/ci-gate.md's offline example in a
// producer's repository (its schemas from testdata, its catalog file from the doc) and requires the
// exact output the doc shows after it, and exit 100.
func TestCIGateOfflineExampleGivesTheVerdictShown(t *testing.T) {
	blocks := docBlocks(t, "docs/ci-gate.md")
	repo := producerRepo(t, blocks)
	var script, shown *docBlock
	for i, b := range blocks {
		if b.Lang == "sh" && strings.Contains(b.Text, "check_schema_change") {
			script = &blocks[i]
			for _, c := range blocks[i+1:] {
				if c.Lang == "text" {
					shown = &c
					break
				}
			}
			break
		}
	}
	if script == nil || shown == nil {
		t.Fatal("docs/ci-gate.md: no offline sh example followed by the text it prints")
	}
	_, env := freshUser(t)
	out, errOut, code := runBash(t, repo, env, script.Text)
	if code != 100 {
		t.Fatalf("docs/ci-gate.md:%d exits %d, the doc says 100\nstdout:\n%s\nstderr:\n%s", script.Line, code, out, errOut)
	}
	if out != shown.Text {
		t.Errorf("docs/ci-gate.md:%d shows:\n%s\nbut the example prints:\n%s", shown.Line, shown.Text, out)
	}
	if !strings.Contains(errOut, `"msg":"blocked"`) {
		t.Errorf("stderr does not log blocked:\n%s", errOut)
	}
}

// producerRepo is a producer's repository: a git repository whose main holds the earlier schema,
// on a pull-request branch that drops a field, with the files the doc shows (a yaml block whose
// first line is `# PATH`) and Data Workers checked out at .dw. It is cloned from a bare origin, so
// origin/main exists as in a CI checkout with fetch-depth 0.
func producerRepo(t *testing.T, blocks []docBlock) string {
	t.Helper()
	dir := t.TempDir()
	origin, repo := filepath.Join(dir, "origin.git"), filepath.Join(dir, "producer")
	src := filepath.Join(repoRoot(), "agents", "internal", "blackbox", "testdata", "producer")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@example.com", "GIT_COMMITTER_NAME=ci",
			"GIT_COMMITTER_EMAIL=ci@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(rel string, data []byte) {
		t.Helper()
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(rel string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	git(dir, "init", "-q", "--bare", "-b", "main", origin)
	git(dir, "clone", "-q", origin, repo)
	git(repo, "checkout", "-q", "-b", "main")
	write("schemas/orders-value.avsc", read("orders-value.v1.avsc"))
	for _, b := range blocks {
		if b.Lang != "yaml" {
			continue
		}
		first, _, _ := strings.Cut(b.Text, "\n")
		if rel, ok := strings.CutPrefix(first, "# "); ok && !strings.ContainsAny(rel, " :") {
			write(rel, []byte(b.Text))
		}
	}
	git(repo, "add", "-A")
	git(repo, "commit", "-q", "-m", "orders-value v1")
	git(repo, "push", "-q", "origin", "main")
	git(repo, "checkout", "-q", "-b", "drop-discount")
	write("schemas/orders-value.avsc", read("orders-value.v2.avsc"))
	write("schemas/history/orders-value.v1.avsc", read("orders-value.v1.avsc"))
	git(repo, "commit", "-q", "-am", "orders-value: drop discount_cents")
	if err := os.Symlink(repoRoot(), filepath.Join(repo, ".dw")); err != nil {
		t.Fatal(err)
	}
	return repo
}

// TestCIGateGitHubActionsExampleRuns runs docs/ci-gate.md's workflow step by step the way the runner
// does (bash -e -o pipefail, GITHUB_* and RUNNER_TEMP set, the checkouts laid out as the `uses`
// steps would): every step passes but the gate, which exits 100 with annotations on the schema file
// and the summary in $GITHUB_STEP_SUMMARY.
func TestCIGateGitHubActionsExampleRuns(t *testing.T) {
	blocks := docBlocks(t, "docs/ci-gate.md")
	var wf struct {
		Jobs map[string]struct {
			Env   map[string]string `yaml:"env"`
			Steps []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				With map[string]any    `yaml:"with"`
				Run  string            `yaml:"run"`
				Env  map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	found := false
	for _, b := range blocks {
		if b.Lang == "yaml" && strings.Contains(b.Text, "jobs:") {
			if err := yaml.Unmarshal([]byte(b.Text), &wf); err != nil {
				t.Fatalf("docs/ci-gate.md:%d: %v", b.Line, err)
			}
			found = true
			break
		}
	}
	if !found || len(wf.Jobs) != 1 {
		t.Fatalf("docs/ci-gate.md: want one workflow with one job, got %+v", wf)
	}
	repo := producerRepo(t, blocks)
	// The pull request's checkout has no history file: the job takes the earlier version from main.
	if err := os.RemoveAll(filepath.Join(repo, "schemas", "history")); err != nil {
		t.Fatal(err)
	}
	_, env := freshUser(t)
	runnerTemp, summary := t.TempDir(), filepath.Join(t.TempDir(), "summary.md")
	env = append(env, "GITHUB_ACTIONS=true", "GITHUB_WORKSPACE="+repo, "GITHUB_BASE_REF=main", "RUNNER_TEMP="+runnerTemp, "GITHUB_STEP_SUMMARY="+summary)
	for _, job := range wf.Jobs {
		for k, v := range job.Env {
			env = append(env, k+"="+v)
		}
		for i, st := range job.Steps {
			last := i == len(job.Steps)-1
			switch {
			case strings.HasPrefix(st.Uses, "actions/checkout@"):
				if p, _ := st.With["path"].(string); p != "" && p != ".dw" {
					t.Fatalf("step %d checks out into %q; this test lays Data Workers out at .dw", i, p)
				}
			case strings.HasPrefix(st.Uses, "actions/setup-go@"):
				if f, _ := st.With["go-version-file"].(string); f != "" {
					if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
						t.Fatalf("setup-go's go-version-file %s: %v", f, err)
					}
				}
			case st.Uses != "":
				t.Fatalf("step %d uses %s, which this test does not know how to stand in for", i, st.Uses)
			default:
				stepEnv := env
				for k, v := range st.Env {
					stepEnv = append(stepEnv, k+"="+v)
				}
				out, errOut, code := runBash(t, repo, stepEnv, st.Run)
				want := 0
				if last {
					want = 100
				}
				if code != want {
					t.Fatalf("step %q exits %d, want %d\nstdout:\n%s\nstderr:\n%s", st.Name, code, want, out, errOut)
				}
				if last {
					if !strings.Contains(out, "::error file=schemas/orders-value.avsc,") || !strings.Contains(out, "BLOCKED") {
						t.Errorf("gate step's annotations:\n%s", out)
					}
					b, err := os.ReadFile(summary)
					if err != nil || !strings.Contains(string(b), "| ❌ fail |") {
						t.Errorf("job summary: %v\n%s", err, b)
					}
				}
			}
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// wantPrompts and wantTemplates are the prompts and resource templates each agent offers.
var (
	wantPrompts = map[string][]string{
		"dw-schema":    {"review_schema_change"},
		"dw-incidents": {"investigate_incident", "prepare_remediation"},
	}
	wantTemplates = map[string][]string{
		"dw-context-catalog": {"dw://assets/{urn}"},
		"dw-incidents":       {"dw://incidents/{id}", "dw://plans/{id}", "dw://receipts/{id}"},
	}
)

func checkPromptsAndResources(t *testing.T, agent string, r sdkServer) {
	t.Helper()
	if want := wantPrompts[agent]; strings.Join(r.Prompts, ",") != strings.Join(want, ",") {
		t.Errorf("%s prompts %v, want %v", agent, r.Prompts, want)
	}
	if want := wantTemplates[agent]; strings.Join(r.ResourceTemplates, ",") != strings.Join(want, ",") {
		t.Errorf("%s resource templates %v, want %v", agent, r.ResourceTemplates, want)
	}
}
