// Command minimal is the cold-start baseline: a bare mcp-go stdio server with one tool and none of
// Data Workers' wiring. BenchmarkColdStart reports every agent as a ratio of this.
package main

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("minimal", "1")
	s.AddTool(mcp.NewTool("ping_tool", mcp.WithDescription("baseline")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	_ = server.ServeStdio(s)
}
