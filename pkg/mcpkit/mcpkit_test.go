package mcpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/pkg/store"
)

type echoIn struct {
	Table string `json:"table" jsonschema:"A table name"`
	Limit int    `json:"limit,omitempty" jsonschema:"At most this many"`
	Mode  string `json:"mode,omitempty" jsonschema:"enum=fast,enum=full"`
}

type echoOut struct {
	Table  string `json:"table"`
	Limit  int    `json:"limit"`
	Failed bool   `json:"failed"`
}

func testAgent() Agent {
	return Agent{
		Name: "dw-test",
		Tools: func(*Env) []Tool {
			return []Tool{
				Read("echo_table", "Echo the table back; used to test the kit.", func(_ context.Context, in echoIn) (echoOut, error) {
					return echoOut{Table: in.Table, Limit: in.Limit}, nil
				}),
				Read("gate_table", "Return a failing verdict for tables named bad.", func(_ context.Context, in echoIn) (echoOut, error) {
					return echoOut{Table: in.Table, Failed: in.Table == "bad"}, nil
				}),
				Write("record_note", "Write tool used to test read-only selection.", func(_ context.Context, in echoIn) (echoOut, error) {
					return echoOut{}, errors.New("backend not configured: set warehouse.dsn to secret-pw-1234")
				}),
				Destructive("explode", "Panics; the kit must contain it.", func(_ context.Context, in echoIn) (echoOut, error) {
					panic("kaboom")
				}),
			}
		},
	}
}

func run(t *testing.T, args []string, stdin string, extraEnv map[string]string) (code int, stdout, stderr string) {
	t.Helper()
	return runWith(t, testAgent(), args, stdin, extraEnv)
}

// runWith runs agent a with a fresh DW_HOME and the given extra environment.
func runWith(t *testing.T, a Agent, args []string, stdin string, extraEnv map[string]string) (code int, stdout, stderr string) {
	t.Helper()
	home := t.TempDir()
	env := func(k string) (string, bool) {
		if v, ok := extraEnv[k]; ok {
			return v, true
		}
		if k == "DW_HOME" {
			return home, true
		}
		return "", false
	}
	var out, errb bytes.Buffer
	code = Run(context.Background(), a, args, IO{In: strings.NewReader(stdin), Out: &out, Err: &errb}, env)
	return code, out.String(), errb.String()
}

func TestVersionPrintsNameAndVersion(t *testing.T) {
	code, out, _ := run(t, []string{"version"}, "", nil)
	if code != ExitOK || !strings.HasPrefix(out, "dw-test ") {
		t.Fatalf("code=%d out=%q", code, out)
	}
}

func TestToolsListsEnabledToolsWithSchemasAndAnnotations(t *testing.T) {
	code, out, _ := run(t, []string{"--read-only", "tools"}, "", nil)
	if code != ExitOK {
		t.Fatal(code)
	}
	var res struct {
		Tools []mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 2 {
		t.Fatalf("read-only lists %d tools, want the 2 read tools", len(res.Tools))
	}
	for _, tl := range res.Tools {
		a := tl.Annotations
		if a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s annotations = %+v", tl.Name, a)
		}
	}
}

func TestKindsSetAllFourAnnotations(t *testing.T) {
	tools := testAgent().Tools(nil)
	want := map[string][3]bool{ // readOnly, destructive, idempotent
		"echo_table": {true, false, true}, "record_note": {false, false, false}, "explode": {false, true, false},
	}
	for _, tl := range tools {
		w, ok := want[tl.Name]
		if !ok {
			continue
		}
		a := tl.Def().Annotations
		got := [3]bool{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint}
		if got != w || a.OpenWorldHint == nil {
			t.Errorf("%s: got %v want %v", tl.Name, got, w)
		}
	}
}

func TestSelectionByNameAndUnknownNames(t *testing.T) {
	code, out, _ := run(t, []string{"--tools", "echo_table,explode", "--exclude-tools", "explode", "tools"}, "", nil)
	if code != ExitOK || !strings.Contains(out, "echo_table") || strings.Contains(out, "explode") || strings.Contains(out, "gate_table") {
		t.Fatalf("code=%d out=%s", code, out)
	}
	code, _, errOut := run(t, []string{"--tools", "echo_tabel", "tools"}, "", nil)
	if code != ExitUsage || !strings.Contains(errOut, `unknown tool "echo_tabel"`) || !strings.Contains(errOut, "echo_table") {
		t.Fatalf("code=%d err=%s", code, errOut)
	}
	// The DW_ env mirror works like the flag.
	code, out, _ = run(t, []string{"tools"}, "", map[string]string{"DW_READ_ONLY": "true"})
	if code != ExitOK || strings.Contains(out, "record_note") {
		t.Fatalf("DW_READ_ONLY ignored: %s", out)
	}
}

func TestCallPrintsStructuredResult(t *testing.T) {
	code, out, _ := run(t, []string{"call", "echo_table", `{"table":"usage_hourly","limit":3}`}, "", nil)
	if code != ExitOK {
		t.Fatal(code)
	}
	var got echoOut
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Table != "usage_hourly" || got.Limit != 3 {
		t.Fatalf("out=%s err=%v", out, err)
	}
}

func TestCallReadsArgumentsFromStdin(t *testing.T) {
	code, out, _ := run(t, []string{"call", "echo_table", "-"}, `{"table":"t1"}`, nil)
	if code != ExitOK || !strings.Contains(out, `"t1"`) {
		t.Fatalf("code=%d out=%s", code, out)
	}
}

func TestCallExitCodes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"failed verdict", []string{"call", "gate_table", `{"table":"bad"}`}, ExitBlocked, `"failed": true`},
		{"tool error", []string{"call", "record_note", `{"table":"x"}`}, ExitToolError, "backend not configured"},
		{"missing required", []string{"call", "echo_table", `{}`}, ExitUsage, "missing property 'table'"},
		{"unknown argument", []string{"call", "echo_table", `{"table":"x","tabel":"y"}`}, ExitUsage, "'tabel' not allowed"},
		{"wrong type", []string{"call", "echo_table", `{"table":"x","limit":"ten"}`}, ExitUsage, "/limit"},
		{"bad enum", []string{"call", "echo_table", `{"table":"x","mode":"turbo"}`}, ExitUsage, "/mode"},
		{"panic", []string{"call", "explode", `{"table":"x"}`}, ExitToolError, "internal error in explode: kaboom"},
		{"not JSON", []string{"call", "echo_table", `{table}`}, ExitUsage, ""},
		{"unknown tool", []string{"call", "nope"}, ExitUsage, ""},
		{"no tool", []string{"call"}, ExitUsage, ""},
		{"unknown command", []string{"frobnicate"}, ExitUsage, ""},
		{"bad flag", []string{"--nope"}, ExitUsage, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args, "", nil)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stdout=%s stderr=%s", code, c.code, out, errOut)
			}
			if c.want != "" && !strings.Contains(out, c.want) {
				t.Fatalf("stdout %s lacks %q", out, c.want)
			}
		})
	}
}

func TestErrorsAreScrubbedOfSecrets(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "dw.yaml")
	writeFile(t, cfgPath, "store:\n  path: "+filepath.Join(dir, "dw.db")+"\nairflow:\n  url: https://af.example\n  token: secret-pw-1234\n")
	code, out, errOut := run(t, []string{"--config", cfgPath, "call", "record_note", `{"table":"x"}`}, "", nil)
	if code != ExitToolError || strings.Contains(out+errOut, "secret-pw-1234") || !strings.Contains(out, "[redacted]") {
		t.Fatalf("code=%d out=%s err=%s", code, out, errOut)
	}
}

func TestBadConfigIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "dw.yaml")
	writeFile(t, cfgPath, "stroe:\n  path: x\n")
	code, _, errOut := run(t, []string{"--config", cfgPath, "tools"}, "", nil)
	if code != ExitUsage || !strings.Contains(errOut, `unknown key "stroe"`) {
		t.Fatalf("code=%d err=%s", code, errOut)
	}
}

func TestEveryCallIsAudited(t *testing.T) {
	home := t.TempDir()
	env := func(k string) (string, bool) {
		if k == "DW_HOME" {
			return home, true
		}
		return "", false
	}
	for _, args := range [][]string{{"call", "echo_table", `{"table":"a"}`}, {"call", "record_note", `{"table":"a"}`}} {
		Run(context.Background(), testAgent(), args, IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, env)
	}
	st, err := store.Open(context.Background(), filepath.Join(home, "dw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ok, failed int
	st.DB.QueryRow(`SELECT count(*) FROM tool_calls WHERE agent='dw-test' AND outcome='ok' AND tool='echo_table'`).Scan(&ok)
	st.DB.QueryRow(`SELECT count(*) FROM tool_calls WHERE agent='dw-test' AND outcome='tool_error' AND tool='record_note' AND error LIKE '%not configured%'`).Scan(&failed)
	if ok != 1 || failed != 1 {
		t.Fatalf("audit rows ok=%d failed=%d", ok, failed)
	}
}

func TestServeAnswersOnStdioAndExitsOnEOF(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_table","arguments":{"table":"x"}}}
`
	code, out, _ := run(t, nil, in, nil)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("non-JSON line on stdout: %q", l)
		}
	}
	if !strings.Contains(out, `"protocolVersion":"2025-06-18"`) || !strings.Contains(out, `"id":2,"result"`) {
		t.Errorf("initialize or the in-flight call's answer missing after stdin closed: %s", out)
	}
}

type anyOut struct {
	Value any     `json:"value"`
	Rows  [][]any `json:"rows"`
}

func TestAnyFieldsGetObjectSchemasNotBareTrue(t *testing.T) {
	tool := Read("any_tool", "Returns free-form values; used to test schema normalisation.", func(context.Context, struct {
		Payload map[string]any `json:"payload"`
		Extra   any            `json:"extra,omitempty"`
	}) (anyOut, error) {
		return anyOut{}, nil
	})
	raw, _ := json.Marshal(tool.Def())
	for _, bad := range []string{`"value":true`, `"items":true`, `"extra":true`} {
		if strings.Contains(string(raw), bad) {
			t.Errorf("schema still has %s: %s", bad, raw)
		}
	}
	if !strings.Contains(string(raw), `"additionalProperties":true`) {
		t.Errorf("a free-form map must stay open: %s", raw)
	}
}
