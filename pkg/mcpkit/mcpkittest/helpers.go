package mcpkittest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/pkg/mcpkit"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func timeNow() time.Time { return time.Now() }

// Call runs one tool's handler as the server would and returns the structured result decoded into
// out, or the isError text.
func Call(t testing.TB, tool mcpkit.Tool, args map[string]any, out any) (errText string) {
	t.Helper()
	res, err := tool.Handler(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool.Name, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: protocol error %v (tools must return isError results)", tool.Name, err)
	}
	if res.IsError {
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				errText += tc.Text
			}
		}
		return errText
	}
	if out != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: decode structured result: %v", tool.Name, err)
		}
	}
	return ""
}
