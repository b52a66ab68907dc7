package mcpkit

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// countingTool is echo_table with an option that counts how often its definition is built.
func countingTool(built *atomic.Int32) Tool {
	return Read("echo_table", "Echo the table back.", func(_ context.Context, in echoIn) (echoOut, error) {
		return echoOut{Table: in.Table}, nil
	}, func(*mcp.Tool) { built.Add(1) })
}

func handle(t *testing.T, srv interface {
	HandleMessage(context.Context, json.RawMessage) mcp.JSONRPCMessage
}, msg string) string {
	t.Helper()
	b, err := json.Marshal(srv.HandleMessage(context.Background(), json.RawMessage(msg)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestToolDefinitionsAreBuiltOnTheFirstRequestThatReadsThem(t *testing.T) {
	var built atomic.Int32
	srv := NewServer([]Tool{countingTool(&built)}, ServerOptions{Name: "dw-test", Version: "1"})

	init := handle(t, srv, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if !strings.Contains(init, `"tools":{}`) {
		t.Errorf("initialize does not declare the tools capability: %s", init)
	}
	handle(t, srv, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if n := built.Load(); n != 0 {
		t.Fatalf("definition built %d times before any request read it", n)
	}

	list := handle(t, srv, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if !strings.Contains(list, `"name":"echo_table"`) || !strings.Contains(list, `"inputSchema"`) || !strings.Contains(list, `"outputSchema"`) {
		t.Fatalf("tools/list lacks the tool or its schemas: %s", list)
	}
	call := handle(t, srv, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo_table","arguments":{"table":"x"}}}`)
	if !strings.Contains(call, `"structuredContent":{"table":"x"`) {
		t.Errorf("call after list: %s", call)
	}
	bad := handle(t, srv, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo_table","arguments":{"table":"x","nope":1}}}`)
	if !strings.Contains(bad, `invalid arguments for echo_table`) {
		t.Errorf("the lazily built input schema is not enforced: %s", bad)
	}
	handle(t, srv, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	if n := built.Load(); n != 1 {
		t.Errorf("definition built %d times, want once", n)
	}
}

func TestACallBeforeAnyListFindsItsTool(t *testing.T) {
	var built atomic.Int32
	srv := NewServer([]Tool{countingTool(&built)}, ServerOptions{Name: "dw-test", Version: "1"})
	call := handle(t, srv, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo_table","arguments":{"table":"y"}}}`)
	if !strings.Contains(call, `"table":"y"`) {
		t.Errorf("tools/call as the first request: %s", call)
	}
}

func TestAfterStartRunsOnceAfterTheFirstAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  int32
	}{
		{"stdio", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`, 1},
		{"stdio without a request", nil, "", 0},
		{"call", []string{"call", "echo_table", `{"table":"x"}`}, "", 1},
		{"tools", []string{"tools"}, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var started atomic.Int32
			a := testAgent()
			a.AfterStart = func() { started.Add(1) }
			code, out, _ := runWith(t, a, tc.args, tc.stdin, nil)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, out)
			}
			if n := started.Load(); n != tc.want {
				t.Errorf("AfterStart ran %d times, want %d", n, tc.want)
			}
		})
	}
}
