package mcpkit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

type stepsOut struct {
	Done []string `json:"done"`
}

// A handler that did some work before failing returns what it did and what failed, not isError;
// one that changed nothing stays isError. The audit records the partial call as an error with both.
func TestAPartialResultKeepsWhatWasDone(t *testing.T) {
	ctx := context.Background()
	tool := Destructive("run_steps", "Runs steps until one fails.", func(_ context.Context, in echoIn) (stepsOut, error) {
		if in.Table == "none" {
			return stepsOut{}, errors.New("backend not configured")
		}
		return stepsOut{Done: []string{"step 1", "step 2"}}, Partial(errors.New("step 3: backend answered 503"))
	})
	var recorded []string
	h := auditMiddleware(ServerOptions{Record: func(_ context.Context, _ string, _ []byte, outcome string, _ time.Duration, errText string) {
		recorded = append(recorded, outcome+": "+errText)
	}}, &rootsCache{})(tool.Handler)
	call := func(table string) *mcp.CallToolResult {
		t.Helper()
		res, err := h(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "run_steps", Arguments: map[string]any{"table": table}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call("t")
	if res.IsError || !IsPartial(res) {
		t.Fatalf("partial result: isError=%v partial=%v", res.IsError, IsPartial(res))
	}
	out, ok := res.StructuredContent.(stepsOut)
	if !ok || len(out.Done) != 2 {
		t.Fatalf("structured content %#v", res.StructuredContent)
	}
	if text := resultText(res); !strings.Contains(text, `"step 2"`) || !strings.Contains(text, "stopped part-way: step 3: backend answered 503") {
		t.Fatalf("text %q", text)
	}
	if res = call("none"); !res.IsError || IsPartial(res) || resultText(res) != "backend not configured" {
		t.Fatalf("a call that changed nothing: %+v", res)
	}
	if len(recorded) != 2 || !strings.HasPrefix(recorded[0], "tool_error: partial: ") || !strings.Contains(recorded[0], "step 3") || recorded[1] != "tool_error: backend not configured" {
		t.Fatalf("audit %q", recorded)
	}
	if Partial(nil) != nil {
		t.Fatal("Partial(nil) is an error")
	}
}
