package main

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/receipts"
)

// privatePaths opens env's store, creates its receipts key and returns the ways a caller could name
// a private file: the key, the database, a symlink to the key, a ../ path, a relative path and a
// hard link. The key's hex is returned to check that no error quotes it.
func privatePaths(t *testing.T, env *mcpkit.Env) (map[string]string, string) {
	t.Helper()
	if _, err := env.Store.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	storePath := env.Config.Store.Path
	keyPath := receipts.KeyPath(storePath)
	key, err := receipts.LoadOrCreateKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "innocent.avsc")
	if err := os.Symlink(keyPath, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(filepath.Dir(keyPath), "copy.avsc")
	if err := os.Link(keyPath, hard); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(filepath.Dir(keyPath), "schemas")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"key":      keyPath,
		"db":       storePath,
		"symlink":  link,
		"dotdot":   filepath.Join(sub, "..", "receipts.key"),
		"relative": rel,
		"hardlink": hard,
	}, hex.EncodeToString(key)
}

// Every schema path a dw-schema tool takes refuses the store's private files, however they are
// named, with an error that quotes none of their content.
func TestSchemaToolsRefuseTheStoresPrivateFiles(t *testing.T) {
	env := mcpkittest.Env(t, "dw-schema")
	paths, keyHex := privatePaths(t, env)
	inline := `"string"`
	earlier := func(p string) []map[string]any { return []map[string]any{{"file": p}} }
	inlineEarlier := []map[string]any{{"schema": inline}}
	cases := []struct {
		tool string
		args func(p string) map[string]any
	}{
		{"diff_schema_versions", func(p string) map[string]any { return map[string]any{"schema_file": p, "old_schema": inline} }},
		{"diff_schema_versions", func(p string) map[string]any { return map[string]any{"old_schema_file": p, "schema": inline} }},
		{"check_compatibility", func(p string) map[string]any {
			return map[string]any{"schema_file": p, "earlier_versions": inlineEarlier}
		}},
		{"check_compatibility", func(p string) map[string]any { return map[string]any{"schema": inline, "earlier_versions": earlier(p)} }},
		{"assess_impact", func(p string) map[string]any {
			return map[string]any{"subject": "s-value", "schema_file": p, "earlier_versions": inlineEarlier}
		}},
		{"assess_impact", func(p string) map[string]any {
			return map[string]any{"subject": "s-value", "schema": inline, "earlier_versions": earlier(p)}
		}},
		{"check_schema_change", func(p string) map[string]any {
			return map[string]any{"subject": "s-value", "schema_file": p, "earlier_versions": inlineEarlier}
		}},
		{"check_schema_change", func(p string) map[string]any {
			return map[string]any{"subject": "s-value", "schema": inline, "earlier_versions": earlier(p)}
		}},
		{"propose_schema_fix", func(p string) map[string]any {
			return map[string]any{"subject": "s-value", "schema_file": p, "earlier_versions": inlineEarlier}
		}},
		{"propose_schema_fix", func(p string) map[string]any {
			return map[string]any{"subject": "s-value", "schema": inline, "earlier_versions": earlier(p)}
		}},
		{"register_stream_schema", func(p string) map[string]any { return map[string]any{"subject": "s-value", "schema_file": p} }},
	}
	for _, c := range cases {
		for how, p := range paths {
			msg := mcpkittest.Call(t, toolNamed(t, env, c.tool), c.args(p), nil)
			if !strings.Contains(msg, "private file of the Data Workers store") {
				t.Errorf("%s %v (%s): want a refusal, got %q", c.tool, c.args("P"), how, msg)
			}
			if strings.Contains(msg, keyHex[:8]) || strings.Contains(msg, "SQLite") {
				t.Errorf("%s (%s): error quotes content: %q", c.tool, how, msg)
			}
		}
	}
}

// The auditor's report: a parse error used to quote the whole file. Now it names the kind of
// problem and its line:column, and quotes nothing of the file.
func TestSchemaParseErrorsQuoteOnlyAShortExcerpt(t *testing.T) {
	env := mcpkittest.Env(t, "dw-schema")
	secret := strings.Repeat("2597e547ab", 6) + "cdef"
	dir := t.TempDir()
	files := map[string]string{
		"token.avsc":  secret + "\n",
		"type.avsc":   `{"type":"record","name":"r","fields":[{"name":"a","type":"` + secret + `"}]}`,
		"schema.json": `{"type":"` + secret + `"}`,
		"msg.proto":   "syntax = \"proto3\";\nmessage M { " + secret + " x = 1; }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range []map[string]any{
			{"schema_file": p, "old_schema": `"string"`, "schema_type": ""},
			{"schema": `"string"`, "earlier_versions": []map[string]any{{"file": p}}},
		} {
			tool := "diff_schema_versions"
			if _, ok := args["earlier_versions"]; ok {
				tool = "check_compatibility"
			} else {
				delete(args, "schema_type")
			}
			msg := mcpkittest.Call(t, toolNamed(t, env, tool), args, nil)
			if msg == "" {
				t.Errorf("%s on %s: want a parse error", tool, name)
				continue
			}
			if strings.Contains(msg, secret[:8]) || !strings.Contains(msg, "(at line ") {
				t.Errorf("%s on %s: want the problem named by its place only, got %q", tool, name, msg)
			}
		}
	}
}
