package mcpkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Selection narrows an agent's tools: --read-only, --tools, --exclude-tools.
type Selection struct {
	ReadOnly bool
	Tools    []string
	Exclude  []string
}

// Select applies a selection. An unknown name is an error listing the valid ones, so a typo in a
// client config fails at start instead of silently hiding a tool. Read-only wins over --tools.
func Select(all []Tool, sel Selection) ([]Tool, error) {
	names := make([]string, len(all))
	for i, t := range all {
		names[i] = t.Name
	}
	for _, list := range [][]string{sel.Tools, sel.Exclude} {
		for _, n := range list {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("unknown tool %q; valid tools: %s", n, strings.Join(names, ", "))
			}
		}
	}
	var out []Tool
	for _, t := range all {
		if sel.ReadOnly && t.Kind != KindRead {
			continue
		}
		if len(sel.Tools) > 0 && !slices.Contains(sel.Tools, t.Name) {
			continue
		}
		if slices.Contains(sel.Exclude, t.Name) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// CallRecorder receives one record per tool call (the audit log).
type CallRecorder func(ctx context.Context, tool string, args []byte, outcome string, d time.Duration, errText string)

// ServerOptions configure NewServer.
type ServerOptions struct {
	Name, Version, Instructions string
	Logger                      *slog.Logger
	// Redact scrubs secrets from every result, error and log line before it leaves the process.
	Redact func(string) string
	// Record, when set, is told about every call.
	Record CallRecorder
	// Prompts and Resources are the agent's MCP prompts and resource kinds (may be empty).
	Prompts   []Prompt
	Resources []ResourceKind
	// ClientRoots, when set, is given the directories of the MCP roots a client declares (asked
	// for before a tool call, again after notifications/roots/list_changed).
	ClientRoots func(dirs []string)
}

// NewServer builds the MCP server every agent serves: recovery, input and output schema validation,
// request logs on the given (stderr) logger, secret scrubbing and the audit hook.
func NewServer(tools []Tool, o ServerOptions) *server.MCPServer {
	s, _ := newServer(tools, o)
	return s
}

// newServer is NewServer plus the resource list, which serve keeps up to date.
func newServer(tools []Tool, o ServerOptions) (*server.MCPServer, *resourceSet) {
	o.Logger = RedactingLogger(o.Logger, o.Redact)
	var rs *resourceSet // set below; the hooks run only after the server is built
	roots := &rootsCache{set: o.ClientRoots, logger: o.Logger}
	roots.stale.Store(true)
	opts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		// Input is validated by each tool's handler (validate.go), with clearer messages than the
		// server's own validator and the same path for `call`.
		server.WithOutputSchemaValidation(),
		server.WithToolHandlerMiddleware(auditMiddleware(o, roots)),
		server.WithToolHandlerMiddleware(zeroTimeMiddleware(tools)),
	}
	if o.Logger != nil {
		opts = append(opts, server.WithLogger(o.Logger))
	}
	if o.Instructions != "" {
		opts = append(opts, server.WithInstructions(o.Instructions))
	}
	if len(o.Prompts) > 0 {
		opts = append(opts, server.WithPromptCapabilities(false))
	}
	registry := &toolRegistry{tools: tools}
	hooks := &server.Hooks{}
	hooks.AddOnRequestInitialization(registry.beforeRequest)
	if len(o.Resources) > 0 {
		// The list follows the store: list it when asked, after a call that may change it.
		kinds := make(map[string]Kind, len(tools))
		for _, t := range tools {
			kinds[t.Name] = t.Kind
		}
		hooks.AddBeforeListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest) { rs.refresh(ctx) })
		hooks.AddAfterCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest, _ any) {
			if kinds[req.Params.Name] != KindRead {
				rs.refresh(context.WithoutCancel(ctx))
			}
		})
		opts = append(opts, server.WithResourceCapabilities(false, true))
	}
	opts = append(opts, server.WithHooks(hooks))
	s := server.NewMCPServer(o.Name, o.Version, opts...)
	registry.srv = s
	s.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, func(context.Context, mcp.JSONRPCNotification) {
		roots.stale.Store(true)
	})
	addPrompts(s, o.Prompts, o.Redact)
	rs = addResources(s, o.Resources, o.Logger, o.Redact)
	return s, rs
}

// toolRegistry hands the tools' definitions to the server on the first request that can read
// them, so that building them (see Tool) does not delay the answer to initialize. The server
// declares the tools capability from the start and never announces list changes, so a client
// cannot tell the difference.
type toolRegistry struct {
	tools []Tool
	srv   *server.MCPServer
	once  sync.Once
	done  atomic.Bool
}

// beforeRequest registers the tools before any request but initialize and ping is handled.
func (r *toolRegistry) beforeRequest(_ context.Context, _ any, message any) error {
	if r.done.Load() {
		return nil
	}
	if raw, ok := message.(json.RawMessage); ok {
		var m struct {
			Method mcp.MCPMethod `json:"method"`
		}
		if json.Unmarshal(raw, &m) == nil && (m.Method == mcp.MethodInitialize || m.Method == mcp.MethodPing) {
			return nil
		}
	}
	r.once.Do(func() {
		st := make([]server.ServerTool, len(r.tools))
		for i, t := range r.tools {
			st[i] = server.ServerTool{Tool: t.Def(), Handler: t.Handler}
		}
		r.srv.AddTools(st...)
		r.done.Store(true)
	})
	return nil
}

// zeroTimeMiddleware drops unset times from every tool's result (see omitZeroTimes).
func zeroTimeMiddleware(tools []Tool) server.ToolHandlerMiddleware {
	schemas := make(map[string]func() map[string]any, len(tools))
	for _, t := range tools {
		schemas[t.Name] = sync.OnceValue(func() map[string]any { return outputSchemaMap(t.Def()) })
	}
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := next(ctx, req)
			var schema map[string]any
			if s := schemas[req.Params.Name]; s != nil {
				schema = s()
			}
			omitZeroTimes(res, schema)
			return res, err
		}
	}
}

// rootsTimeout bounds how long a tool call waits for the client to list its roots.
const rootsTimeout = 5 * time.Second

// rootsCache asks a client that declares the roots capability for its roots before a tool call,
// and again only after the client says they changed.
type rootsCache struct {
	set    func([]string)
	logger *slog.Logger
	mu     sync.Mutex
	stale  atomic.Bool
}

func (r *rootsCache) refresh(ctx context.Context) {
	if r.set == nil || !r.stale.Load() {
		return
	}
	session, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	srv := server.ServerFromContext(ctx)
	if !ok || srv == nil || session.GetClientCapabilities().Roots == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stale.Load() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	res, err := srv.RequestRoots(rctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(mcp.MethodListRoots)}})
	if err != nil {
		if r.logger != nil {
			r.logger.Warn("client declared roots but did not list them; files are read under the configured directories only", "error", err)
		}
		return
	}
	uris := make([]string, len(res.Roots))
	for i, root := range res.Roots {
		uris[i] = root.URI
	}
	r.set(FileURIPaths(uris))
	r.stale.Store(false)
}

// auditMiddleware scrubs secrets from every result (error or not) and records every call. It hands
// the server's logger to the handler, so a panic is logged through the same scrubbing.
func auditMiddleware(o ServerOptions, roots *rootsCache) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start := time.Now()
			roots.refresh(ctx)
			if o.Logger != nil {
				ctx = context.WithValue(ctx, loggerKey{}, o.Logger)
			}
			res, err := next(ctx, req)
			redactResult(res, o.Redact)
			boundError(res) // after scrubbing: a cut must not leave part of a secret behind
			if err != nil && o.Redact != nil {
				if msg := o.Redact(err.Error()); msg != err.Error() {
					err = errors.New(msg)
				}
			}
			if o.Record != nil {
				args, _ := json.Marshal(req.GetRawArguments())
				outcome, errText := "ok", ""
				if err != nil {
					outcome, errText = "tool_error", err.Error()
				} else if res != nil && res.IsError {
					outcome, errText = "tool_error", resultText(res)
				} else if IsPartial(res) {
					// It changed something and then failed: recorded as an error, with what it did.
					outcome, errText = "tool_error", "partial: "+resultText(res)
				}
				if o.Redact != nil {
					errText = o.Redact(errText)
				}
				o.Record(ctx, req.Params.Name, args, outcome, time.Since(start), errText)
			}
			return res, err
		}
	}
}

// maxErrorResult bounds an error result's text: an error that echoes a caller's megabyte
// argument (or a backend's page) would flood the caller's context.
const maxErrorResult = 2000

// boundError cuts each text of an error result to maxErrorResult runes, saying how much was cut,
// and replaces control and bidi-override characters, which a caller's input may carry.
func boundError(res *mcp.CallToolResult) {
	if res == nil || !res.IsError {
		return
	}
	for i, c := range res.Content {
		tc, ok := c.(mcp.TextContent)
		if !ok {
			continue
		}
		text := strings.Map(func(r rune) rune {
			if (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r) {
				return ' '
			}
			return r
		}, strings.ToValidUTF8(tc.Text, "\uFFFD"))
		text = cutLongRuns(text)
		if r := []rune(text); len(r) > maxErrorResult {
			text = fmt.Sprintf("%s… (%d more characters not shown)", string(r[:maxErrorResult]), len(r)-maxErrorResult)
		}
		tc.Text = text
		res.Content[i] = tc
	}
}

// maxRun is the longest run without white space an error keeps whole: longer is an echoed value
// (a megabyte identifier, a blob), of which the start says enough.
const maxRun = 200

// cutLongRuns shortens each run of more than maxRun characters without white space to its start
// and a count.
func cutLongRuns(text string) string {
	fields := strings.FieldsFunc(text, unicode.IsSpace)
	long := false
	for _, f := range fields {
		if utf8.RuneCountInString(f) > maxRun {
			long = true
			break
		}
	}
	if !long {
		return text
	}
	var b strings.Builder
	start := -1
	flush := func(end int) {
		w := text[start:end]
		if n := utf8.RuneCountInString(w); n > maxRun {
			w = fmt.Sprintf("%s…[%d characters]", string([]rune(w)[:48]), n)
		}
		b.WriteString(w)
		start = -1
	}
	for i, r := range text {
		if unicode.IsSpace(r) {
			if start >= 0 {
				flush(i)
			}
			b.WriteRune(r)
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		flush(len(text))
	}
	return b.String()
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// ArgsDigest is the SHA-256 of a call's arguments as recorded in the audit log.
func ArgsDigest(args []byte) string {
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}
