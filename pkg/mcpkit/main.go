package mcpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/dataworkers/dw/configs"
	"github.com/dataworkers/dw/pkg/auth"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/version"
)

// Env is what an agent's tools are built from. Building tools must be cheap: nothing here connects
// to anything until a tool runs (the store opens on first use), so start-up stays in milliseconds.
type Env struct {
	Agent  string
	Config *config.Config
	Logger *slog.Logger
	Store  *store.Lazy
	Now    func() time.Time
	Redact func(string) string
	// Secrets is the redactor behind Redact; AddSecret adds secrets known only at run time.
	Secrets *config.Redactor
	// Lookup reads the process environment (for human subcommands such as DW_APPROVER_TOKEN).
	Lookup config.LookupEnv
	// Roots widens the directories caller-given files may be read from (MCP roots; files.go).
	Roots FileRoots
}

// AddSecret makes s a secret Redact scrubs from now on (e.g. the receipts key, once loaded).
func (e *Env) AddSecret(s string) {
	if e.Secrets != nil {
		e.Secrets.Add(s)
	}
}

// Getenv returns an environment variable, or "".
func (e *Env) Getenv(key string) string {
	if e.Lookup == nil {
		return ""
	}
	v, _ := e.Lookup(key)
	return v
}

// Agent describes one binary.
type Agent struct {
	Name         string
	Instructions string
	Tools        func(*Env) []Tool
	// Commands are extra subcommands for people (e.g. dw-incidents approvals); never MCP tools.
	Commands map[string]Command
	// Prompts and Resources, when set, are the agent's MCP prompts and resource kinds.
	Prompts   func(*Env) []Prompt
	Resources func(*Env) []ResourceKind
	// AfterStart, when set, runs once start-up is over: after the first answer on stdio, before
	// an HTTP server listens or a subcommand runs. The binaries pass startgc.Restore.
	AfterStart func()
}

// Command is a human-only subcommand. It returns the process exit code.
type Command func(ctx context.Context, env *Env, args []string, io IO) int

// IO is the process's standard streams.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// Exit codes of every binary. A CI step tells the four apart without reading the output.
const (
	// ExitOK: the call succeeded and its verdict (if any) passes.
	ExitOK = 0
	// ExitToolError: the tool failed, or a configured backend does not answer ("healthy": false).
	ExitToolError = 1
	// ExitUsage: bad arguments, flags or config.
	ExitUsage = 2
	// ExitBlocked: the call succeeded and its verdict fails ("failed": true): a blocking schema
	// gate, a failing monitor. 100, as `buf breaking` uses, so it never collides with a shell's codes.
	ExitBlocked = 100
)

// Main runs the agent with the process's arguments, environment and streams, then exits.
func Main(a Agent) {
	os.Exit(Run(context.Background(), a, os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.LookupEnv))
}

type flags struct {
	config, tools, exclude, logLevel string
	transport, listen                string
	readOnly, version                bool
}

// Run is Main without the process: testable, and what `call` and the stdio server share.
func Run(ctx context.Context, a Agent, args []string, stdio IO, env config.LookupEnv) int {
	fs := flag.NewFlagSet(a.Name, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	var f flags
	fs.StringVar(&f.config, "config", envOr(env, "DW_CONFIG", ""), "config file (env DW_CONFIG; default: the embedded "+configs.LocalName+")")
	fs.BoolVar(&f.readOnly, "read-only", envBool(env, "DW_READ_ONLY"), "expose read tools only (env DW_READ_ONLY)")
	fs.StringVar(&f.tools, "tools", envOr(env, "DW_TOOLS", ""), "comma-separated tools to expose (env DW_TOOLS; default all)")
	fs.StringVar(&f.exclude, "exclude-tools", envOr(env, "DW_EXCLUDE_TOOLS", ""), "comma-separated tools to hide (env DW_EXCLUDE_TOOLS)")
	fs.StringVar(&f.logLevel, "log-level", envOr(env, "DW_LOG_LEVEL", "info"), "debug, info, warn or error (env DW_LOG_LEVEL); logs go to stderr")
	fs.BoolVar(&f.version, "version", false, "print the version and commit, then exit (also -V)")
	fs.BoolVar(&f.version, "V", false, "same as --version")
	fs.StringVar(&f.transport, "transport", envOr(env, "DW_TRANSPORT", "stdio"), "serve over stdio or http (Streamable HTTP; env DW_TRANSPORT)")
	fs.StringVar(&f.listen, "listen", envOr(env, "DW_LISTEN", "127.0.0.1:8080"), "host:port for --transport http (env DW_LISTEN); a non-loopback address needs http.tokens or http.oidc")
	fs.Usage = func() { fmt.Fprintf(stdio.Err, "run `%s --help` for the commands and flags\n", a.Name) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdio.Out, a, fs)
			return ExitOK
		}
		return ExitUsage
	}
	rest := fs.Args()
	cmd := "serve"
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	if f.version || cmd == "version" {
		fmt.Fprintf(stdio.Out, "%s %s\n", a.Name, versionLine())
		return ExitOK
	}
	if cmd == "help" {
		usage(stdio.Out, a, fs)
		return ExitOK
	}

	logger, err := newLogger(stdio.Err, f.logLevel, a.Name)
	if err != nil {
		fmt.Fprintf(stdio.Err, "%s: %v\n", a.Name, err)
		return ExitUsage
	}
	e, err := newEnv(a.Name, f.config, env, logger)
	if err != nil {
		fmt.Fprintf(stdio.Err, "%s: %v\n", a.Name, err)
		return ExitUsage
	}
	defer func() {
		// Writes queued behind an answer (a check run's record) are written here, at the latest.
		if err := e.Store.Close(); err != nil {
			e.Logger.Error("closing the store", "error", e.Redact(err.Error()))
		}
	}()

	afterStart := sync.OnceFunc(func() {
		if a.AfterStart != nil {
			a.AfterStart()
		}
	})
	if c, ok := a.Commands[cmd]; ok {
		afterStart()
		return c(ctx, e, rest, stdio)
	}
	tools, err := Select(a.Tools(e), Selection{ReadOnly: f.readOnly, Tools: splitList(f.tools), Exclude: splitList(f.exclude)})
	if err != nil {
		fmt.Fprintf(stdio.Err, "%s: %v\n", a.Name, err)
		return ExitUsage
	}
	o := ServerOptions{
		Name: a.Name, Version: version.Version, Instructions: a.Instructions,
		Logger: e.Logger, Redact: e.Redact, Record: e.recordCall, ClientRoots: e.Roots.SetClient,
	}
	if a.Prompts != nil {
		o.Prompts = a.Prompts(e)
	}
	if a.Resources != nil {
		o.Resources = a.Resources(e)
	}
	srv, resources := newServer(tools, o)
	if cmd != "serve" || f.transport != "stdio" {
		afterStart()
	}
	switch cmd {
	case "serve":
		switch f.transport {
		case "stdio":
			return serve(ctx, srv, resources, e, stdio, afterStart)
		case "http":
			return serveHTTP(ctx, srv, resources, e, f.listen, stdio)
		}
		fmt.Fprintf(stdio.Err, "%s: --transport %q: use stdio or http\n", a.Name, f.transport)
		return ExitUsage
	case "tools":
		return listTools(ctx, srv, stdio)
	case "call":
		e.Roots.AllowWorkingDir() // a person's or a CI job's own checkout
		return callTool(ctx, srv, tools, rest, stdio, a.Name, e)
	default:
		fmt.Fprintf(stdio.Err, "%s: unknown command %q\n", a.Name, cmd)
		usage(stdio.Err, a, fs)
		return ExitUsage
	}
}

func newEnv(agent, configPath string, env config.LookupEnv, logger *slog.Logger) (*Env, error) {
	cfg, err := config.Load(configPath, configs.Local, configs.LocalName, env)
	if err != nil {
		return nil, err
	}
	// The raw logger: a word-like secret would otherwise redact the key that names it.
	for _, w := range cfg.SecretWarnings() {
		logger.Warn(w)
	}
	secrets := NewRedactor(cfg)
	return &Env{
		Agent:   agent,
		Config:  cfg,
		Logger:  RedactingLogger(logger, secrets.Redact),
		Store:   store.NewLazy(cfg.Store.Path, store.Options{BusyTimeout: cfg.Store.BusyTimeout, URL: cfg.Store.URL}),
		Now:     time.Now,
		Redact:  secrets.Redact,
		Secrets: secrets,
		Lookup:  env,
	}, nil
}

// recordCall writes the audit line behind the answer (store.WriteBehind): the call has answered,
// and a write before the answer would wait for the writer the call's own records use. The store
// writes it before it closes. A store that cannot be opened or written is logged, never fatal: the
// tool already answered, and check_connections reports the store's state.
func (e *Env) recordCall(ctx context.Context, tool string, args []byte, outcome string, d time.Duration, errText string) {
	ctx = context.WithoutCancel(ctx)
	call := store.ToolCall{
		At: e.Now(), Agent: e.Agent, Caller: auth.CallerName(ctx), Tool: tool, Outcome: outcome, Duration: d,
		ArgsSHA256: ArgsDigest(args), Error: errText,
	}
	st, err := e.Store.Get(ctx)
	if err != nil {
		e.Logger.Warn("audit log not written", "tool", tool, "error", e.Redact(err.Error()))
		return
	}
	st.WriteBehind(func(wctx context.Context) error {
		if err := st.RecordToolCall(wctx, call); err != nil {
			// Dropped, as before: a queued audit line must not hold back the writes behind it.
			e.Logger.Warn("audit log not written", "tool", tool, "error", e.Redact(err.Error()))
		}
		return nil
	})
}

// resourceWatchInterval is how often a serving agent re-lists its resources, so changes made by
// the other processes sharing the store reach its clients as list_changed notifications.
const resourceWatchInterval = 10 * time.Second

// serve answers MCP on stdio; answered runs after each answer is written.
func serve(ctx context.Context, srv *server.MCPServer, resources *resourceSet, e *Env, stdio IO, answered func()) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go resources.watch(ctx, resourceWatchInterval)
	ss := server.NewStdioServer(srv)
	ss.SetErrorLogger(log.New(stdio.Err, "", 0))
	e.Logger.Debug("serving on stdio")
	d := newDrain(ctx, stdio.In, stdio.Out, answered)
	err := ss.Listen(ctx, d, d)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		e.Logger.Error("stdio server stopped", "error", err)
		return ExitToolError
	}
	return ExitOK
}

func listTools(ctx context.Context, srv *server.MCPServer, stdio IO) int {
	res, rpcErr := rpc(ctx, srv, "tools/list", map[string]any{})
	if rpcErr != nil {
		fmt.Fprintln(stdio.Err, rpcErr)
		return ExitUsage
	}
	writeJSON(stdio.Out, res)
	return ExitOK
}

// notConfigured is how every backend says its config section is missing ("kafka is not
// configured: add a kafka section …"): a config error, exit 2, not a failing backend.
const notConfigured = " is not configured"

const callUsage = "usage: %s call [--format json|text|markdown|github|junit] TOOL [JSON|-]   (TOOL --help lists its arguments)\n"

// callArgs are `call`'s own arguments; --format and --help may come before or after the tool.
type callArgs struct {
	format, tool, raw string
	help              bool
}

func parseCallArgs(args []string) (callArgs, error) {
	c := callArgs{format: "json", raw: "{}"}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			c.help = true
		case a == "--format" || a == "-format":
			if i+1 >= len(args) {
				return c, errors.New("--format needs a value")
			}
			i++
			c.format = args[i]
		case strings.HasPrefix(a, "--format=") || strings.HasPrefix(a, "-format="):
			c.format = a[strings.Index(a, "=")+1:]
		default:
			pos = append(pos, a)
		}
	}
	if !slices.Contains(Formats, c.format) {
		return c, fmt.Errorf("unknown --format %q: use %s", c.format, strings.Join(Formats, ", "))
	}
	if len(pos) == 0 && c.help {
		return c, nil
	}
	if len(pos) < 1 || len(pos) > 2 {
		return c, errors.New("give one tool and at most one JSON object of arguments")
	}
	c.tool = pos[0]
	if len(pos) == 2 {
		c.raw = pos[1]
	}
	return c, nil
}

func callTool(ctx context.Context, srv *server.MCPServer, tools []Tool, args []string, stdio IO, agent string, e *Env) int {
	c, err := parseCallArgs(args)
	if err != nil {
		fmt.Fprintf(stdio.Err, "%s call: %v\n", agent, err)
		fmt.Fprintf(stdio.Err, callUsage, agent)
		return ExitUsage
	}
	if c.tool == "" {
		fmt.Fprintf(stdio.Out, callUsage, agent)
		return ExitOK
	}
	name := c.tool
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		fmt.Fprintf(stdio.Err, "%s call: unknown or disabled tool %q (run `%s tools` to list them)\n", agent, name, agent)
		return ExitUsage
	}
	if c.help {
		writeToolHelp(stdio.Out, agent, tools[i].Def())
		return ExitOK
	}
	raw := c.raw
	if raw == "-" {
		b, err := io.ReadAll(stdio.In)
		if err != nil {
			fmt.Fprintf(stdio.Err, "%s call: read stdin: %v\n", agent, err)
			return ExitUsage
		}
		raw = string(b)
	}
	var arguments map[string]any
	if err := json.Unmarshal([]byte(raw), &arguments); err != nil {
		fmt.Fprintf(stdio.Err, "%s call %s: arguments must be a JSON object: %v (run `%s call %s --help` for its arguments)\n", agent, name, err, agent, name)
		return ExitUsage
	}
	raw2, rpcErr := rpc(ctx, srv, "tools/call", map[string]any{"name": name, "arguments": arguments})
	if rpcErr != nil {
		fmt.Fprintf(stdio.Err, "%s call %s: %v\n", agent, name, rpcErr)
		return ExitUsage
	}
	var res struct {
		Content           []mcp.TextContent `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if err := json.Unmarshal(raw2, &res); err != nil {
		fmt.Fprintf(stdio.Err, "%s call %s: decode result: %v\n", agent, name, err)
		return ExitUsage
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			text = append(text, c.Text)
		}
		msg := strings.Join(text, "\n")
		writeFormattedError(stdio.Out, c.format, agent, name, msg)
		fmt.Fprintf(stdio.Err, "%s call %s: %s\n", agent, name, msg)
		if strings.HasPrefix(msg, "invalid arguments for ") || strings.Contains(msg, notConfigured) {
			return ExitUsage
		}
		return ExitToolError
	}
	s := summarize(agent, name, arguments, res.StructuredContent)
	if err := writeFormatted(stdio.Out, c.format, s, res.StructuredContent, e.Getenv); err != nil {
		fmt.Fprintf(stdio.Err, "%s call %s: %v\n", agent, name, err)
		return ExitToolError
	}
	switch {
	case s.Failed:
		e.Logger.Warn(s.failureWord(), "tool", name, "verdict", s.Verdict, "exit", ExitBlocked)
		return ExitBlocked
	case s.Unhealthy:
		e.Logger.Warn("unhealthy", "tool", name, "verdict", s.Verdict, "exit", ExitToolError)
		return ExitToolError
	}
	return ExitOK
}

// rpc sends one JSON-RPC request through the server's own message handling, so `call` and `tools`
// exercise exactly what a stdio client gets (validation, middleware, logging).
func rpc(ctx context.Context, srv *server.MCPServer, method string, params any) (json.RawMessage, error) {
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp := srv.HandleMessage(ctx, msg)
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, err
	}
	if env.Error != nil {
		return nil, fmt.Errorf("%s (JSON-RPC %d)", env.Error.Message, env.Error.Code)
	}
	return env.Result, nil
}

func writeJSON(w io.Writer, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if raw, ok := v.(json.RawMessage); ok {
		var tmp any
		if json.Unmarshal(raw, &tmp) == nil {
			v = tmp
		}
	}
	_ = enc.Encode(v)
	_, _ = w.Write(buf.Bytes())
}

func newLogger(w io.Writer, level, agent string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})).With("agent", agent), nil
}

func usage(w io.Writer, a Agent, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s [flags] [command]\n\nCommands:\n", a.Name)
	fmt.Fprintf(w, "  serve              serve MCP on stdio (the default) or, with --transport http, Streamable HTTP\n")
	fmt.Fprintf(w, "  tools              print the enabled tools with their schemas as JSON\n")
	fmt.Fprintf(w, "  call TOOL [JSON|-] call one tool; the result on stdout (--format json, text, markdown, github or junit);\n")
	fmt.Fprintf(w, "                     `call TOOL --help` lists its arguments\n")
	fmt.Fprintf(w, "  version            print the version and commit (also --version, -V)\n")
	for _, name := range slices.Sorted(maps.Keys(a.Commands)) {
		fmt.Fprintf(w, "  %-18s see `%s %s --help`\n", name, a.Name, name)
	}
	fmt.Fprintf(w, "\nExit codes: 0 ok, 1 tool error or unreachable backend, 2 usage or config error, %d the verdict blocks or fails.\n", ExitBlocked)
	fmt.Fprintf(w, "\nFlags (before the command):\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func envOr(env config.LookupEnv, key, def string) string {
	if v, ok := env(key); ok && v != "" {
		return v
	}
	return def
}

func envBool(env config.LookupEnv, key string) bool {
	v, _ := env(key)
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
