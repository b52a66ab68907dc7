package hostile

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

type rootsList []string

func (r rootsList) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	res := &mcp.ListRootsResult{}
	for _, dir := range r {
		res.Roots = append(res.Roots, mcp.Root{URI: "file://" + filepath.ToSlash(dir), Name: filepath.Base(dir)})
	}
	return res, nil
}

// A client that declares MCP roots widens where file arguments may lie to those roots; a file
// outside them and outside the config's directories is refused with a message naming the settings.
func TestFileArgumentsFollowTheClientsRoots(t *testing.T) {
	confDir, clientRoot, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := filepath.Join(confDir, "dw.yaml")
	write(t, cfg, "store:\n  path: "+filepath.Join(confDir, "dw.db")+"\n")
	schema := `{"type":"record","name":"r","fields":[{"name":"a","type":"string"}]}`
	write(t, filepath.Join(clientRoot, "v1.avsc"), schema)
	write(t, filepath.Join(elsewhere, "v1.avsc"), schema)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := transport.NewStdio(startAgent(), append(os.Environ(), "DW_CONFIG="+cfg, "DW_LOG_LEVEL=warn"), "dw-schema")
	c := client.NewClient(tr, client.WithRootsHandler(rootsList{clientRoot}))
	if err := c.Start(ctx); err != nil { // starts the process and answers its roots/list requests
		t.Fatal(err)
	}
	defer c.Close()
	var init mcp.InitializeRequest
	// Roots are asked for with a server-initiated roots/list, which the session protocols carry
	// (the stateless 2026-07-28 protocol would need multi-round-trip input requests instead).
	init.Params.ProtocolVersion = mcp.ProtocolVersion20250618
	init.Params.ClientInfo = mcp.Implementation{Name: "roots", Version: "1"}
	init.Params.Capabilities.Roots = &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{ListChanged: true}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	diff := func(file string) *mcp.CallToolResult {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "diff_schema_versions",
			Arguments: map[string]any{"old_schema": schema, "schema_file": file}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := diff(filepath.Join(clientRoot, "v1.avsc")); res.IsError {
		stderr, _ := client.GetStderr(c)
		logs, _ := io.ReadAll(stderr)
		t.Errorf("a file under the client's root was refused: %s\n%s", contentText(res), logs)
	}
	res := diff(filepath.Join(elsewhere, "v1.avsc"))
	if msg := contentText(res); !res.IsError || !strings.Contains(msg, "outside the directories tools may read") || !strings.Contains(msg, "MCP root") {
		t.Errorf("a file outside every root: %s", msg)
	}
}
