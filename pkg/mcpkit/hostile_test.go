package mcpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func callHandler(t *testing.T, tool Tool, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = tool.Name
	req.Params.Arguments = args
	res, err := tool.Handler(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A client that sends an object or array id gets an invalid-request error with a null id, and the
// server never sees the line; a tools/call before initialize is refused; pipelining initialize
// and a call without waiting still works.
func TestProtocolRefusesBadIDsAndCallsBeforeInitialize(t *testing.T) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo_table","arguments":{"table":"x"}}}`
	}
	discover := `{"jsonrpc":"2.0","id":"d","method":"server/discover"}` // the stateless protocol has no initialize
	_, out, _ := run(t, nil, strings.Join([]string{discover, call("7"), `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, init, call(`{"a":1}`), call(`[1]`), call("true"), call(`"s-9"`)}, "\n")+"\n", nil)
	answers := map[string]map[string]any{}
	var nullIDs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("non-JSON line %q", line)
		}
		if m["id"] == nil {
			nullIDs = append(nullIDs, m)
			continue
		}
		answers[fmt.Sprint(m["id"])] = m
	}
	for _, id := range []string{"7", "8"} {
		e, _ := answers[id]["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32600) || !strings.Contains(fmt.Sprint(e["message"]), "before initialize") {
			t.Errorf("request %s before initialize: %v", id, answers[id])
		}
	}
	if len(nullIDs) != 3 {
		t.Fatalf("want 3 invalid-id refusals with a null id, got %d: %s", len(nullIDs), out)
	}
	for _, m := range nullIDs {
		if e, _ := m["error"].(map[string]any); e == nil || e["code"] != float64(-32600) {
			t.Errorf("invalid id answer: %v", m)
		}
	}
	if e, _ := answers["d"]["error"].(map[string]any); e != nil && strings.Contains(fmt.Sprint(e["message"]), "before initialize") {
		t.Errorf("server/discover must not wait for initialize: %v", answers["d"])
	}
	if answers["1"]["result"] == nil || answers["s-9"]["result"] == nil {
		t.Errorf("initialize and the call after it must be answered: %s", out)
	}
}

// Validation errors list a few problems and count the rest; a huge key or value is never
// echoed back whole.
func TestValidationErrorsAreShort(t *testing.T) {
	tool := Read("list_things", "Takes a list of integers; used to test validation.", func(_ context.Context, in struct {
		IDs []int `json:"ids"`
	}) (echoOut, error) {
		return echoOut{}, nil
	})
	ids := make([]any, 100000)
	for i := range ids {
		ids[i] = "not-a-number"
	}
	huge := strings.Repeat("k", 1<<20)
	for name, args := range map[string]map[string]any{
		"100,000 wrong items": {"ids": ids},
		"a megabyte key":      {"ids": []any{}, huge: 1},
		"a megabyte value":    {"ids": huge + "\u202e\x00"},
	} {
		res := callHandler(t, tool, args)
		if !res.IsError {
			t.Fatalf("%s: want an error", name)
		}
		text := resultText(res)
		if len(text) > 1200 || strings.Contains(text, strings.Repeat("k", 200)) || strings.ContainsAny(text, "\u202e\x00") {
			t.Errorf("%s: %d bytes: %.300q", name, len(text), text)
		}
		if name == "100,000 wrong items" && !strings.Contains(text, "and 99995 more problems (100000 in all)") {
			t.Errorf("%s: the count is missing: %.400s", name, text)
		}
	}
}

// An error result is bounded and cleaned whatever the tool put in it.
func TestErrorResultsAreBounded(t *testing.T) {
	res := mcp.NewToolResultError("unknown asset " + strings.Repeat("x", 1<<20) + "\u202e\x1b[31m")
	boundError(res)
	text := resultText(res)
	if len(text) > 200 || !strings.Contains(text, "…[1048576 characters]") || strings.ContainsAny(text, "\u202e\x1b") {
		t.Errorf("a megabyte word not cut: %d bytes: %.100q", len(text), text)
	}
	res = mcp.NewToolResultError(strings.Repeat("many words ", 1<<16))
	boundError(res)
	if text := resultText(res); len(text) > maxErrorResult+100 || !strings.Contains(text, "more characters not shown") {
		t.Errorf("error result not bounded: %d bytes", len(text))
	}
}

// The `call` subcommand, run by a person or a CI job in their checkout, reads files under the
// working directory even when the config lives elsewhere; served over MCP, the same file outside
// the config's directory is refused.
func TestCallReadsFilesUnderTheWorkingDirectory(t *testing.T) {
	work, confDir := t.TempDir(), t.TempDir()
	t.Chdir(work)
	writeFile(t, filepath.Join(work, "schema.avsc"), `"string"`)
	cfg := filepath.Join(confDir, "dw.yaml")
	writeFile(t, cfg, "store:\n  path: "+filepath.Join(confDir, "dw.db")+"\n")
	agent := Agent{Name: "dw-test", Tools: func(e *Env) []Tool {
		return []Tool{Read("read_file", "Reads a file through the guarded reader; used to test roots.", func(_ context.Context, in struct {
			Path string `json:"path"`
		}) (echoOut, error) {
			b, err := e.ReadFile(in.Path, 1<<10)
			return echoOut{Table: string(b)}, err
		})}
	}}
	noEnv := func(string) (string, bool) { return "", false }
	var out, errb bytes.Buffer
	code := Run(context.Background(), agent, []string{"--config", cfg, "call", "read_file", `{"path":"schema.avsc"}`}, IO{In: strings.NewReader(""), Out: &out, Err: &errb}, noEnv)
	if code != ExitOK || !strings.Contains(out.String(), `\"string\"`) {
		t.Errorf("call: exit %d, %s %s", code, out.String(), errb.String())
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"schema.avsc"}}}`
	out.Reset()
	Run(context.Background(), agent, []string{"--config", cfg}, IO{In: strings.NewReader(init + "\n" + req + "\n"), Out: &out, Err: &errb}, noEnv)
	if !strings.Contains(out.String(), "outside the directories tools may read") {
		t.Errorf("served over MCP, a file outside the config's directory should be refused: %s", out.String())
	}
}
