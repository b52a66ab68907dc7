// Package hostile drives every tool of every server, built and started as a client starts them,
// with inputs generated from each tool's input schema — wrong types, huge and control-character
// strings, hostile paths and identifiers, huge arrays — against a config whose backends echo our
// credentials back. Every answer must be an error (or a protocol error) with a short message or an
// honest result; none may carry a secret or a file's content; read tools leave the warehouse and
// the store as they were.
package hostile

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	_ "github.com/mattn/go-sqlite3"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/agents/internal/agentbin"
)

var agents = agentbin.Agents

func startAgent() string { return agentbin.StartAgent() }

func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	if err := agentbin.BuildAll(func(c *exec.Cmd) { c.Stderr = os.Stderr }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// The configured secrets. Each is sent to an echoing backend, in some encoding, by some tool.
const (
	connectUser    = "hostile-connect-user"
	connectPass    = "hostile-connect-pw-5150"
	registryPass   = "hostile-registry-pw-6060"
	airflowToken   = "hostile-airflow-token-8080"
	dbtToken       = "hostile-dbt-token-9090"
	confluentKey   = "HOSTILECCKEY"
	confluentSec   = "hostile+cc/secret=7070"
	plantedOutside = "PLANTED-OUTSIDE-0xDEADBEEF"
	plantedInside  = "PLANTED-INSIDE-0xFEEDFACE"
)

// estate is one agent's world: a config directory (a root), a warehouse and a store in it, files
// planted inside and outside the roots, and the echoing backend.
type estate struct {
	dir, config, warehouse, store string
	outsideFile, insideFile       string
	leaks                         []string
}

func newEstate(t *testing.T, echo *httptest.Server) *estate {
	t.Helper()
	dir, outside := t.TempDir(), t.TempDir()
	e := &estate{dir: dir, config: filepath.Join(dir, "dw.yaml"), warehouse: filepath.Join(dir, "warehouse.db"), store: filepath.Join(dir, "dw.db")}
	db, err := sql.Open("sqlite3", e.warehouse)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE usage_hourly (usage_id TEXT, hour TIMESTAMP, egress_bytes BIGINT); INSERT INTO usage_hourly VALUES ('u1', '2026-12-01 00:00:00', 5)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	e.outsideFile = filepath.Join(outside, "planted.yaml")
	e.insideFile = filepath.Join(dir, "inside.avsc")
	write(t, e.outsideFile, plantedOutside+": root:*:20228:0:99999:7:::\n")
	write(t, e.insideFile, plantedInside+"=hunter2\n-----BEGIN OPENSSH PRIVATE KEY-----\n")
	if err := os.Symlink(e.outsideFile, filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	write(t, e.config, fmt.Sprintf(`store:
  path: %[1]s
warehouse:
  engine: sqlite
  dsn: %[2]s
connect:
  url: %[3]s
  username: %[4]s
  password: %[5]s
  timeout: 2s
schema_registry:
  url: %[3]s
  username: registry-user
  password: %[6]s
  timeout: 2s
airflow:
  url: %[3]s
  api_version: v2
  token: %[7]s
  timeout: 2s
dbt:
  cloud:
    url: %[3]s
    account_id: 42
    token: %[8]s
    timeout: 2s
confluent_cloud:
  api_url: %[3]s
  api_key: %[9]s
  api_secret: %[10]q
  flink_url: %[3]s
  organization_id: org-1
  environment_id: env-1
  kafka_cluster_id: lkc-1
  compute_pool_id: lfcp-1
  timeout: 2s
`, e.store, e.warehouse, echo.URL, connectUser, connectPass, registryPass, airflowToken, dbtToken, confluentKey, confluentSec))
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	e.leaks = []string{connectPass, registryPass, airflowToken, dbtToken, confluentSec, url.QueryEscape(confluentSec),
		b64(connectUser + ":" + connectPass), b64("registry-user:" + registryPass), b64(confluentKey + ":" + confluentSec),
		plantedOutside, plantedInside, "DEADBEEF", "FEEDFACE", "root:x:0:0", "20228:0:99999", "OPENSSH PRIVATE"}
	return e
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// echoServer is a backend (or a proxy before it) that refuses everything and echoes the request's
// credentials in every form in its error body.
func echoServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		_, cred, _ := strings.Cut(h, " ")
		dec, _ := base64.StdEncoding.DecodeString(cred)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		msg := fmt.Sprintf("denied: authorization=%s cred=%s decoded=%s escaped=%s", h, cred, dec, url.QueryEscape(string(dec)))
		_ = json.NewEncoder(w).Encode(map[string]any{"message": msg, "error_code": 401})
	}))
}

// ---- inputs from the schema ----

type input struct {
	what string
	args map[string]any
}

const hugeLen = 1 << 20

var (
	huge    = strings.Repeat("A", hugeLen)
	control = "x\x00\x1b[2J\u202e\u200bgnp.exe\r\n"
)

func hostilePaths(e *estate) []string {
	return []string{"/etc/passwd", "../../../../../../etc/shadow", e.outsideFile, filepath.Join(e.dir, "link.yaml"),
		e.insideFile, e.store, "/proc/self/environ", "/dev/zero", "/"}
}

var identifiers = []string{"../../../../etc/passwd", `x"; DROP TABLE usage_hourly; --`, "kafka:topic/\u202eevil", "warehouse:sqlite/main.usage_hourly' OR '1'='1"}

// filler is a plausible value for a required property, so the hostile one reaches the tool.
func filler(schema map[string]any) any {
	switch typeOf(schema) {
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	return "x"
}

func typeOf(schema map[string]any) string {
	switch t := schema["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if s, _ := x.(string); s != "" && s != "null" {
				return s
			}
		}
	}
	return ""
}

// Input sizes: the megabyte string and the 100,000-item array are costly to send and to validate,
// so each server gets them once per argument type (heavy); every other tool gets sizes still far
// above any cap a tool sets, which reach the same checks.
const (
	largeLen       = 64 << 10
	hugeItems      = 100000
	largeItems     = 5000
	hugeStrings    = 20000
	largeStrings   = 2000
	heavyString    = "string"
	heavyArray     = "array"
	heavyStringArr = "string array"
	heavyObject    = "object"
)

// sized is the megabyte string when heavy, else its first largeLen bytes.
func sized(heavy bool) string {
	if heavy {
		return huge
	}
	return huge[:largeLen]
}

// inputs generates a tool's hostile cases; heavy(kind) says whether this tool carries the costly
// size of that kind of argument (true once per server and kind).
func inputs(tool mcp.Tool, e *estate, heavy func(kind string) bool) []input {
	props := tool.InputSchema.Properties
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	base := func() map[string]any {
		m := map[string]any{}
		for _, r := range tool.InputSchema.Required {
			if s, ok := props[r].(map[string]any); ok {
				m[r] = filler(s)
			}
		}
		return m
	}
	with := func(name string, v any) map[string]any {
		m := base()
		m[name] = v
		return m
	}
	out := []input{
		{"no arguments", map[string]any{}},
		{"an unknown megabyte key", func() map[string]any { m := base(); m[huge[:1<<16]+"\x00"] = 1; return m }()},
	}
	allHuge := base()
	hasString := false
	bigArrays := 0 // the big arrays are costly to send: one property of a tool gets them
	for _, n := range names {
		s, _ := props[n].(map[string]any)
		typ := typeOf(s)
		switch typ {
		case "string":
			hasString = true
			allHuge[n] = huge
			out = append(out, input{n + " wrong type", with(n, map[string]any{"a": []any{1}})}, input{n + " control characters", with(n, control)})
			pathLike := strings.Contains(n, "path") || strings.Contains(n, "file") || strings.Contains(n, "dir")
			if pathLike {
				for _, p := range hostilePaths(e) {
					out = append(out, input{n + " path " + p, with(n, p)})
				}
			} else {
				for _, id := range identifiers {
					out = append(out, input{n + " identifier " + id, with(n, id)})
				}
			}
		case "integer", "number":
			out = append(out, input{n + " wrong type", with(n, "12; DROP")}, input{n + " huge number", with(n, 1e300)}, input{n + " negative", with(n, -9e15)})
		case "boolean":
			out = append(out, input{n + " wrong type", with(n, "yes")})
		case "array":
			out = append(out, input{n + " not an array", with(n, "x")})
			if bigArrays++; bigArrays == 1 {
				size := largeItems
				if heavy(heavyArray) {
					size = hugeItems
				}
				wrong := make([]any, size)
				for i := range wrong {
					wrong[i] = map[string]any{"x": i}
				}
				out = append(out, input{fmt.Sprintf("%s %d wrong items", n, size), with(n, wrong)})
			}
			if items, _ := s["items"].(map[string]any); typeOf(items) == "string" {
				if bigArrays == 1 {
					size := largeStrings
					if heavy(heavyStringArr) {
						size = hugeStrings
					}
					many := make([]any, size)
					for i := range many {
						many[i] = identifiers[i%len(identifiers)]
					}
					out = append(out, input{fmt.Sprintf("%s %d hostile strings", n, size), with(n, many)})
				}
				paths := []any{}
				for _, p := range hostilePaths(e) {
					paths = append(paths, p)
				}
				out = append(out, input{n + " hostile paths", with(n, paths)})
			}
		case "object":
			out = append(out, input{n + " wrong type", with(n, []any{1, 2})}, input{n + " huge value", with(n, map[string]any{"k": sized(heavy(heavyObject))})})
		}
	}
	if hasString {
		big := heavy(heavyString)
		what := "every string a megabyte"
		if !big {
			what = "every string 64 KiB"
		}
		for n, v := range allHuge {
			if v == huge {
				allHuge[n] = sized(big)
			}
		}
		out = append(out, input{what, allHuge})
	}
	return out
}

// ---- the run ----

func TestEveryToolWithHostileInputs(t *testing.T) {
	echo := echoServer()
	defer echo.Close()
	deadline := time.Now().Add(150 * time.Second)
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			e := newEstate(t, echo)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			env := append(os.Environ(), "DW_HOME="+e.dir, "DW_CONFIG="+e.config, "DW_LOG_LEVEL=info")
			logs := &lockedBuffer{}
			c, err := client.NewStdioMCPClientWithOptions(startAgent(), env, []string{agent}, transport.WithCommandStderrWriter(logs))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var init mcp.InitializeRequest
			init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
			init.Params.ClientInfo = mcp.Implementation{Name: "hostile", Version: "1"}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatalf("initialize: %v", err)
			}
			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			// The store is created by the first call that needs it; the states compared are after that.
			// So is the receipt chain's (empty) head, the first time a receipt is looked up.
			warmUp := []mcp.CallToolParams{{Name: "check_connections", Arguments: map[string]any{}}}
			if agent == "dw-incidents" {
				warmUp = append(warmUp, mcp.CallToolParams{Name: "get_receipt", Arguments: map[string]any{"seq": 1}})
			}
			for _, p := range warmUp {
				if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: p}); err != nil {
					t.Fatal(err)
				}
			}
			calls := 0
			heavyDone := map[string]bool{}
			heavy := func(kind string) bool {
				first := !heavyDone[kind]
				heavyDone[kind] = true
				return first
			}
			for _, tool := range list.Tools {
				read := tool.Annotations.ReadOnlyHint != nil && *tool.Annotations.ReadOnlyHint
				before := e.state(t)
				// A tool's cases run a few at a time on the one server process: the calls are
				// independent, and the server answers concurrent requests as a client may send them.
				cases := inputs(tool, e, heavy)
				calls += len(cases)
				sem := make(chan struct{}, parallelCalls)
				var wg sync.WaitGroup
				for _, in := range cases {
					wg.Add(1)
					sem <- struct{}{}
					go func() {
						defer func() { <-sem; wg.Done() }()
						callOne(ctx, t, c, e, tool, in)
					}()
				}
				wg.Wait()
				if read {
					if after := e.state(t); after != before {
						t.Errorf("%s is a read tool, but the warehouse or the store changed under hostile calls: %s", tool.Name, diffState(before, after))
					}
				}
			}
			// The server's own log lines (stderr) are held to the same rule as its answers.
			for _, leak := range e.leaks {
				if strings.Contains(logs.String(), leak) {
					t.Errorf("the server's log carries %q", leak)
				}
			}
			t.Logf("%s: %d tools, %d hostile calls", agent, len(list.Tools), calls)
		})
	}
}

// parallelCalls is how many of one tool's cases are in flight at once.
const parallelCalls = 4

// callOne sends one hostile case and holds its answer to the rules.
func callOne(ctx context.Context, t *testing.T, c *client.Client, e *estate, tool mcp.Tool, in input) {
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	began := time.Now()
	res, err := c.CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool.Name, Arguments: in.args}})
	if d := time.Since(began); d > 2*time.Second {
		t.Logf("SLOW %s (%s): %v", tool.Name, in.what, d)
	}
	where := tool.Name + " (" + in.what + ")"
	if err != nil {
		if cctx.Err() != nil {
			t.Errorf("%s: no answer within 20s", where)
			return
		}
		e.check(t, where+" protocol error", err.Error(), true)
		return
	}
	text := contentText(res)
	raw, _ := json.Marshal(res.StructuredContent)
	e.check(t, where, text+string(raw), res.IsError)
	if strings.Contains(in.what, "wrong type") || strings.Contains(in.what, "wrong items") || strings.Contains(in.what, "not an array") || strings.Contains(in.what, "unknown megabyte key") {
		if !res.IsError {
			t.Errorf("%s: a wrong-typed argument was accepted", where)
		}
	}
}

// lockedBuffer collects a server's stderr while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func contentText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// check holds every answer to the rules: no secret in any encoding, no planted or system file's
// content, and an error's message short, never an echo of the megabyte it was given.
func (e *estate) check(t *testing.T, where, out string, isError bool) {
	t.Helper()
	for _, leak := range e.leaks {
		if strings.Contains(out, leak) {
			t.Errorf("%s: the answer carries %q: %.300s", where, leak, out)
		}
	}
	if isError {
		if n := utf8.RuneCountInString(out); n > 2200 {
			t.Errorf("%s: an error of %d characters: %.200s", where, n, out)
		}
		if strings.Contains(out, strings.Repeat("A", 1000)) {
			t.Errorf("%s: the error echoes the huge input", where)
		}
		if strings.ContainsAny(out, "\x00\x1b\u202e") {
			t.Errorf("%s: the error carries control or bidi characters: %q", where, out[:min(len(out), 200)])
		}
	}
}

// state is a digest of the warehouse file and of every store table but the audit log (each call
// is audited, by design).
func (e *estate) state(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	var parts []string
	if b, err := os.ReadFile(e.warehouse); err == nil {
		h.Write(b)
	}
	if _, err := os.Stat(e.store); err == nil {
		db, err := sql.Open("sqlite3", "file:"+e.store+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('tool_calls', 'sqlite_sequence') ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		var tables []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			tables = append(tables, n)
		}
		rows.Close()
		for _, tb := range tables {
			rows, err := db.Query(`SELECT * FROM "` + tb + `"`)
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			var lines []string
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				rows.Scan(ptrs...)
				lines = append(lines, fmt.Sprint(vals...))
			}
			rows.Close()
			sort.Strings(lines) // row order is not content
			d := sha256.Sum256([]byte(strings.Join(lines, "\n")))
			parts = append(parts, fmt.Sprintf("%s=%d/%s", tb, len(lines), hex.EncodeToString(d[:4])))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16] + " " + strings.Join(parts, " ")
}

// diffState names the parts of two states that differ.
func diffState(before, after string) string {
	b, a := strings.Fields(before), strings.Fields(after)
	var out []string
	seen := map[string]bool{}
	for _, x := range b {
		seen[x] = true
	}
	for i, x := range a {
		if i == 0 && len(b) > 0 && b[0] != x {
			out = append(out, "warehouse file")
			continue
		}
		if !seen[x] {
			out = append(out, x)
		}
	}
	if len(b) == 1 && len(a) > 1 {
		return "the store was created"
	}
	return strings.Join(out, ", ")
}
