package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// AgentNames are the five MCP servers the demo drives.
var AgentNames = []string{"dw-connectors", "dw-schema", "dw-context-catalog", "dw-quality", "dw-incidents"}

// agents spawns the built binaries and speaks MCP to them over stdio, as any MCP client does.
// Each server starts on first use and stays up until Close.
type agents struct {
	bin  string   // directory holding the binaries
	env  []string // DW_CONFIG, DW_HOME … added to the inherited environment minus its DW_* (see baseEnv)
	logs string   // each server's stderr goes to logs/<agent>.log
	// onProgress, when set, sees each progress notification a server sends during a call.
	onProgress func(agent, message string)

	mu      sync.Mutex
	clients map[string]*client.Client
	files   []*os.File
	pids    []int
}

func newAgents(bin string, env []string, logs string) *agents {
	return &agents{bin: bin, env: env, logs: logs, clients: map[string]*client.Client{}}
}

// toolError is an isError tool result: the agent refused or failed, and says why.
type toolError struct {
	Agent, Tool, Text string
}

func (e *toolError) Error() string { return fmt.Sprintf("%s %s: %s", e.Agent, e.Tool, e.Text) }

func (a *agents) client(ctx context.Context, name string) (*client.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.clients[name]; c != nil {
		return c, nil
	}
	logf, err := os.OpenFile(filepath.Join(a.logs, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	a.files = append(a.files, logf)
	var cmd *exec.Cmd
	spawn := func(_ context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
		cmd = exec.Command(command, args...)
		cmd.Env = baseEnv(env)
		return cmd, nil
	}
	t := transport.NewStdioWithOptions(filepath.Join(a.bin, name), a.env, nil,
		transport.WithCommandFunc(spawn), transport.WithCommandStderrWriter(logf))
	if err := t.Start(ctx); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := client.NewClient(t)
	// Start (the transport is already running) wires the client's notification handlers.
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("start %s client: %w", name, err)
	}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) && a.onProgress != nil {
			msg, _ := n.Params.AdditionalFields["message"].(string)
			a.onProgress(name, msg)
		}
	})
	if cmd != nil && cmd.Process != nil {
		a.pids = append(a.pids, cmd.Process.Pid)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "dw-demo", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("initialize %s: %w", name, err)
	}
	a.clients[name] = c
	return c, nil
}

// call invokes one tool and decodes its structured result into out (when not nil). A tool error
// comes back as *toolError with the agent's own text.
func (a *agents) call(ctx context.Context, agent, tool string, args any, out any) error {
	c, err := a.client(ctx, agent)
	if err != nil {
		return err
	}
	var m map[string]any
	if args != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
	}
	// A progress token asks long tools (sync_catalog, monitors) for progress notifications.
	params := mcp.CallToolParams{Name: tool, Arguments: m, Meta: &mcp.Meta{ProgressToken: tool}}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: params})
	if err != nil {
		return fmt.Errorf("%s %s: %w", agent, tool, err)
	}
	if res.IsError {
		var text []string
		for _, ct := range res.Content {
			if tc, ok := ct.(mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return &toolError{Agent: agent, Tool: tool, Text: strings.Join(text, " ")}
	}
	if out == nil {
		return nil
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode result: %w", agent, tool, err)
	}
	return nil
}

// tools lists an agent's tool names.
func (a *agents) tools(ctx context.Context, agent string) ([]string, error) {
	c, err := a.client(ctx, agent)
	if err != nil {
		return nil, err
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range res.Tools {
		out = append(out, t.Name)
	}
	return out, nil
}

// run executes a binary's command line (the human CLI, `call` for CI) to completion and returns
// its stdout and exit code; extra is added to the environment.
func (a *agents) run(ctx context.Context, agent string, extra []string, args ...string) (stdout string, code int, err error) {
	cmd := exec.CommandContext(ctx, filepath.Join(a.bin, agent), args...)
	cmd.Env = append(baseEnv(a.env), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if cmd.Process != nil {
		a.mu.Lock()
		a.pids = append(a.pids, cmd.Process.Pid)
		a.mu.Unlock()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode(), fmt.Errorf("%s %s: exit %d: %s", agent, strings.Join(args, " "), ee.ExitCode(), strings.TrimSpace(errb.String()))
	}
	if err != nil {
		return out.String(), -1, err
	}
	return out.String(), 0, nil
}

// baseEnv is the user's environment without any DW_* setting (DW_READ_ONLY, DW_TOOLS,
// DW_EXCLUDE_TOOLS, DW_APPROVER_TOKEN … would change what the story's agents may do), plus the
// demo's own settings. The approver token is added only to the human CLI call that approves.
func baseEnv(own []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DW_") {
			out = append(out, kv)
		}
	}
	return append(out, own...)
}

// Close ends every server (stdin closed, then terminated if it lingers) and closes the logs.
func (a *agents) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, c := range a.clients {
		_ = c.Close()
		delete(a.clients, name)
	}
	for _, f := range a.files {
		_ = f.Close()
	}
	a.files = nil
}

// PIDs are the processes started so far (all ended once Close returns).
func (a *agents) PIDs() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.pids...)
}
