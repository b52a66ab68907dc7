// Package mcpkittest holds the tool-surface checks every agent runs: a schema snapshot per tool and
// the invariants over tools/list.
package mcpkittest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/dataworkers/dw/configs"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/store"
)

// Env builds an Env on the embedded default config with the store in a temporary directory.
func Env(t testing.TB, agent string) *mcpkit.Env {
	t.Helper()
	home := t.TempDir()
	lookup := func(k string) (string, bool) {
		if k == "DW_HOME" {
			return home, true
		}
		return "", false
	}
	cfg, err := config.Load("", configs.Local, configs.LocalName, lookup)
	if err != nil {
		t.Fatal(err)
	}
	lazy := store.NewLazy(cfg.Store.Path, store.Options{URL: cfg.Store.URL})
	t.Cleanup(func() { lazy.Close() })
	secrets := mcpkit.NewRedactor(cfg)
	e := &mcpkit.Env{Agent: agent, Config: cfg, Logger: discardLogger(), Store: lazy, Now: timeNow, Redact: secrets.Redact, Secrets: secrets}
	// The test's scratch directories (every t.TempDir of this test shares home's parent) are where
	// its files are; beyond them, files are confined as in production.
	e.Roots.Allow(filepath.Dir(home))
	if root := ModuleRoot(); root != "" {
		e.Roots.Allow(root) // and the repository's testdata
	}
	return e
}

// ModuleRoot is the directory of the go.mod above the working directory (a test runs in its
// package's directory), or "".
func ModuleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

var toolNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// CheckSnapshots compares each tool's JSON definition with testdata/toolsnaps/<name>.json.
// UPDATE_TOOLSNAPS=true rewrites them; a missing snapshot fails, so a new tool is a deliberate act.
func CheckSnapshots(t *testing.T, tools []mcpkit.Tool) {
	t.Helper()
	update := os.Getenv("UPDATE_TOOLSNAPS") == "true"
	dir := filepath.Join("testdata", "toolsnaps")
	for _, tool := range tools {
		got := toolJSON(t, tool)
		path := filepath.Join(dir, tool.Name+".json")
		if update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("tool %s has no snapshot %s: run UPDATE_TOOLSNAPS=true go test ./agents/... to create it on purpose", tool.Name, path)
			continue
		}
		if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
			t.Errorf("tool %s differs from its snapshot %s; if the change is intended, rerun with UPDATE_TOOLSNAPS=true\n--- got ---\n%s", tool.Name, path, got)
		}
	}
}

func toolJSON(t *testing.T, tool mcpkit.Tool) []byte {
	t.Helper()
	raw, err := json.Marshal(tool.Def())
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// CheckInvariants lists the tools through the real server and checks every rule of the tool
// surface: names, all four annotations explicit, no read tool destructive, descriptions present,
// object schemas without top-level combinators, and no write tool in read-only mode.
func CheckInvariants(t *testing.T, agent string, tools []mcpkit.Tool) {
	t.Helper()
	listed := listTools(t, agent, tools)
	if len(listed) != len(tools) {
		t.Fatalf("tools/list returned %d tools, want %d", len(listed), len(tools))
	}
	seen := map[string]bool{}
	for _, tl := range listed {
		name, _ := tl["name"].(string)
		if !toolNameRE.MatchString(name) {
			t.Errorf("tool name %q does not match %s", name, toolNameRE)
		}
		if seen[name] {
			t.Errorf("duplicate tool %q", name)
		}
		seen[name] = true
		if d, _ := tl["description"].(string); len(d) < 20 {
			t.Errorf("tool %s: description too short to choose the tool by", name)
		}
		ann, _ := tl["annotations"].(map[string]any)
		for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			if _, ok := ann[k].(bool); !ok {
				t.Errorf("tool %s: annotation %s is not set explicitly", name, k)
			}
		}
		if ann["readOnlyHint"] == true && ann["destructiveHint"] == true {
			t.Errorf("tool %s: read-only and destructive", name)
		}
		for _, key := range []string{"inputSchema", "outputSchema"} {
			sch, _ := tl[key].(map[string]any)
			if sch["type"] != "object" {
				t.Errorf("tool %s: %s type is %v, want object", name, key, sch["type"])
			}
			for _, comb := range []string{"anyOf", "oneOf", "allOf", "not"} {
				if _, ok := sch[comb]; ok {
					t.Errorf("tool %s: %s has a top-level %s", name, key, comb)
				}
			}
		}
	}
	ro, err := mcpkit.Select(tools, mcpkit.Selection{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range listTools(t, agent, ro) {
		ann, _ := tl["annotations"].(map[string]any)
		if ann["readOnlyHint"] != true {
			t.Errorf("read-only mode exposes %v, which is not read-only", tl["name"])
		}
	}
}

func listTools(t *testing.T, agent string, tools []mcpkit.Tool) []map[string]any {
	t.Helper()
	srv := mcpkit.NewServer(tools, mcpkit.ServerOptions{Name: agent, Version: "test"})
	resp := srv.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	raw, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result struct {
			Tools []map[string]any `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out.Result.Tools
}
