// Package blackbox drives the built binaries through start-agent.sh over stdio, exactly as an MCP
// client (Claude Code, the Inspector, a CI script) does.
package blackbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/agents/internal/agentbin"
)

var agents = agentbin.Agents

func repoRoot() string { return agentbin.RepoRoot() }

func startAgent() string { return agentbin.StartAgent() }

func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	// Build each binary once, up front, through the same script clients use.
	if err := agentbin.BuildAll(func(c *exec.Cmd) { c.Stderr = os.Stderr }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func childEnv(t testing.TB) []string {
	home := t.TempDir()
	return append(os.Environ(), "DW_HOME="+home, "DW_CONFIG=", "DW_LOG_LEVEL=info")
}

type connectionsReport struct {
	Agent string `json:"agent"`
	Store struct {
		OK            bool `json:"ok"`
		SchemaVersion int  `json:"schema_version"`
	} `json:"store"`
	Backends []struct {
		Backend    string `json:"backend"`
		ConfigKey  string `json:"config_key"`
		Configured bool   `json:"configured"`
	} `json:"backends"`
}

func TestEveryAgentServesMCPOverStdio(t *testing.T) {
	for _, agent := range agents {
		for _, version := range []string{mcp.ProtocolVersion20250618, mcp.LATEST_PROTOCOL_VERSION} {
			t.Run(agent+"/"+version, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				c, err := client.NewStdioMCPClient(startAgent(), childEnv(t), agent)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				var init mcp.InitializeRequest
				init.Params.ProtocolVersion = version
				init.Params.ClientInfo = mcp.Implementation{Name: "blackbox-test", Version: "1"}
				res, err := c.Initialize(ctx, init)
				if err != nil {
					t.Fatalf("initialize: %v", err)
				}
				if res.ServerInfo.Name != agent || res.ProtocolVersion != version {
					t.Fatalf("server %q speaks %q, want %q/%q", res.ServerInfo.Name, res.ProtocolVersion, agent, version)
				}
				tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, tl := range tools.Tools {
					found = found || tl.Name == "check_connections"
				}
				if !found {
					t.Fatalf("%s lists no check_connections", agent)
				}
				call, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "check_connections", Arguments: map[string]any{}}})
				if err != nil {
					t.Fatal(err)
				}
				if call.IsError {
					t.Fatalf("check_connections failed: %+v", call.Content)
				}
				var rep connectionsReport
				raw, _ := json.Marshal(call.StructuredContent)
				if err := json.Unmarshal(raw, &rep); err != nil {
					t.Fatal(err)
				}
				if rep.Agent != agent || !rep.Store.OK || rep.Store.SchemaVersion == 0 || len(rep.Backends) == 0 {
					t.Fatalf("report = %+v", rep)
				}
				for _, b := range rep.Backends {
					if !b.Configured && b.ConfigKey == "" {
						t.Errorf("unconfigured backend %s names no config key", b.Backend)
					}
				}
			})
		}
	}
}

// TestStdoutCarriesOnlyJSONRPC speaks raw newline-delimited JSON-RPC to each binary, including a bad
// call and a malformed line, and checks every stdout line is a JSON-RPC message while logs go to stderr.
func TestStdoutCarriesOnlyJSONRPC(t *testing.T) {
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"check_connections","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"check_connections","arguments":{"bogus":1}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`this is not json`,
		`{"jsonrpc":"2.0","id":6,"method":"ping"}`,
	}, "\n") + "\n"
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			cmd := exec.Command(startAgent(), agent)
			cmd.Env = childEnv(t)
			cmd.Stdin = strings.NewReader(input)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("exit: %v; stderr: %s", err, stderr.String())
			}
			ids := map[float64]bool{}
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			sc.Buffer(make([]byte, 1<<20), 1<<24)
			for sc.Scan() {
				var msg struct {
					JSONRPC string   `json:"jsonrpc"`
					ID      *float64 `json:"id"`
					Result  json.RawMessage
					Error   json.RawMessage
				}
				if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" {
					t.Fatalf("stdout line is not JSON-RPC: %q", sc.Text())
				}
				if msg.ID != nil {
					ids[*msg.ID] = true
				}
			}
			for _, id := range []float64{1, 2, 3, 4, 5, 6} {
				if !ids[id] {
					t.Errorf("no answer to request %v; stdout:\n%s", id, out)
				}
			}
			if !strings.Contains(stderr.String(), `"msg":"mcp.tool"`) {
				t.Errorf("expected JSON logs on stderr, got: %s", stderr.String())
			}
		})
	}
}

func TestSIGTERMStopsTheServer(t *testing.T) {
	cmd := exec.Command(startAgent(), "dw-quality")
	cmd.Env = childEnv(t)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("no ping answer: %q %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after signal: %v", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("server did not stop on SIGTERM")
	}
}
