package main

import (
	"context"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/receipts"
)

// Every path a catalog import takes refuses the store's private files — the receipts key, the
// database, a symlink to the key, a ../ path, a hard link, an events directory holding a link —
// with an error that quotes none of their content.
func TestCatalogImportsRefuseTheStoresPrivateFiles(t *testing.T) {
	env := mcpkittest.Env(t, "dw-context-catalog")
	if _, err := env.Store.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	storePath := env.Config.Store.Path
	keyPath := receipts.KeyPath(storePath)
	key, err := receipts.LoadOrCreateKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	keyHex := hex.EncodeToString(key)
	dir := t.TempDir()
	link := filepath.Join(dir, "catalog.yaml")
	must(t, os.Symlink(keyPath, link))
	hard := filepath.Join(filepath.Dir(keyPath), "manifest.json")
	must(t, os.Link(keyPath, hard))
	sub := filepath.Join(filepath.Dir(keyPath), "target")
	must(t, os.Mkdir(sub, 0o755))
	events := filepath.Join(dir, "events")
	must(t, os.Mkdir(events, 0o755))
	must(t, os.Symlink(keyPath, filepath.Join(events, "run.json")))
	paths := map[string]string{
		"key": keyPath, "db": storePath, "wal": storePath + "-wal", "symlink": link, "hardlink": hard,
		"dotdot": filepath.Join(sub, "..", "receipts.key"),
	}
	tl := map[string]func(string) map[string]any{
		"import_dbt_manifest":       func(p string) map[string]any { return map[string]any{"path": p} },
		"import_openlineage_events": func(p string) map[string]any { return map[string]any{"path": p} },
		"register_assets":           func(p string) map[string]any { return map[string]any{"path": p} },
	}
	byName := map[string]bool{}
	for _, tool := range tools(env) {
		args, ok := tl[tool.Name]
		if !ok {
			continue
		}
		byName[tool.Name] = true
		cases := maps.Clone(paths)
		if tool.Name == "import_openlineage_events" {
			cases["directory with a link"] = events
		}
		for how, p := range cases {
			msg := mcpkittest.Call(t, tool, args(p), nil)
			if !strings.Contains(msg, "private file of the Data Workers store") {
				t.Errorf("%s (%s %s): want a refusal, got %q", tool.Name, how, p, msg)
			}
			if strings.Contains(msg, keyHex[:8]) || strings.Contains(msg, "SQLite") {
				t.Errorf("%s (%s): error quotes content: %q", tool.Name, how, msg)
			}
		}
	}
	if len(byName) != len(tl) {
		t.Fatalf("tools checked: %v, want all of %d", byName, len(tl))
	}
}

// Catalog imports read only regular files: a device, a FIFO, a link to either, or an events
// directory holding a FIFO is refused with an error naming it, never read until memory runs out
// or waited on for a writer.
func TestCatalogImportsRefuseDevicesAndFIFOs(t *testing.T) {
	env := mcpkittest.Env(t, "dw-context-catalog")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "catalog.yaml")
	must(t, syscall.Mkfifo(fifo, 0o600))
	zeroLink := filepath.Join(dir, "zero.yaml")
	must(t, os.Symlink("/dev/zero", zeroLink))
	events := filepath.Join(dir, "events")
	must(t, os.Mkdir(events, 0o755))
	must(t, os.WriteFile(filepath.Join(events, "a.json"), []byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`), 0o600))
	must(t, syscall.Mkfifo(filepath.Join(events, "run.json"), 0o600))
	cases := map[string][]string{
		"register_assets":           {"/dev/zero", fifo, zeroLink},
		"import_openlineage_events": {"/dev/zero", fifo, zeroLink, events},
	}
	seen := 0
	for _, tool := range tools(env) {
		paths, ok := cases[tool.Name]
		if !ok {
			continue
		}
		seen++
		for _, p := range paths {
			msg := mcpkittest.Call(t, tool, map[string]any{"path": p}, nil)
			if !strings.Contains(msg, "not a regular file") && !strings.Contains(msg, "outside the directories tools may read") { // /dev/zero is refused for where it is
				t.Errorf("%s %s: want a not-a-regular-file refusal, got %q", tool.Name, p, msg)
			}
		}
	}
	if seen != len(cases) {
		t.Fatalf("tools checked: %d, want %d", seen, len(cases))
	}
}

// Parse errors of caller-named files quote at most a short excerpt of them.
func TestCatalogParseErrorsQuoteOnlyAShortExcerpt(t *testing.T) {
	env := mcpkittest.Env(t, "dw-context-catalog")
	secret := strings.Repeat("2597e547ab", 6) + "cdef"
	dir := t.TempDir()
	cases := []struct{ tool, file, body string }{
		{"import_dbt_manifest", "manifest.json", `{"metadata":{"dbt_version":` + `"x"},"nodes":{"model.a":{"unique_id":"model.a","resource_type":` + secret + `}}}`},
		{"import_dbt_manifest", "bare.json", secret},
		{"import_openlineage_events", "events.json", `{"eventType":"COMPLETE","eventTime":"` + secret + `","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`},
		{"register_assets", "catalog.yaml", "assets:\n  - urn: " + secret + "\n    " + secret + ": 1\n"},
		{"register_assets", "bare.yaml", secret + "\n"},
	}
	all := tools(env)
	for _, c := range cases {
		p := filepath.Join(dir, c.file)
		must(t, os.WriteFile(p, []byte(c.body), 0o600))
		for _, tool := range all {
			if tool.Name != c.tool {
				continue
			}
			msg := mcpkittest.Call(t, tool, map[string]any{"path": p}, nil)
			if msg == "" {
				t.Errorf("%s %s: want a parse error", c.tool, c.file)
			}
			if strings.Contains(msg, secret[:16]) {
				t.Errorf("%s %s: error quotes more than a short excerpt: %q", c.tool, c.file, msg)
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
