package mcpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/pkg/auth"
	"github.com/dataworkers/dw/pkg/auth/oidctest"
	"github.com/dataworkers/dw/pkg/store"
)

type whoOut struct {
	Caller string `json:"caller"`
}

type slowIn struct {
	Steps int `json:"steps" jsonschema:"Progress steps to report"`
}

// httpAgent's tools show the caller each request runs as, report progress and wait to be released
// (or cancelled), so draining and cancellation can be observed.
func httpAgent(release <-chan struct{}, started chan<- struct{}, cancelled chan<- error) Agent {
	return Agent{
		Name: "dw-http-test",
		Tools: func(*Env) []Tool {
			return []Tool{
				Read("whoami", "Return the caller this request runs as.", func(ctx context.Context, _ struct{}) (whoOut, error) {
					return whoOut{Caller: auth.CallerName(ctx)}, nil
				}),
				Read("slow_step", "Report progress, then wait to be released.", func(ctx context.Context, in slowIn) (whoOut, error) {
					for i := 1; i <= in.Steps; i++ {
						ReportProgress(ctx, float64(i), float64(in.Steps), fmt.Sprintf("step %d", i))
					}
					started <- struct{}{}
					select {
					case <-release:
						return whoOut{Caller: auth.CallerName(ctx)}, nil
					case <-ctx.Done():
						cancelled <- ctx.Err()
						return whoOut{}, ctx.Err()
					}
				}),
				Write("record_note", "A write tool, hidden by --read-only.", func(ctx context.Context, _ struct{}) (whoOut, error) {
					return whoOut{Caller: auth.CallerName(ctx)}, nil
				}),
			}
		},
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type httpRun struct {
	url, dbPath string
	cancel      func()
	done        chan int
	stderr      *syncBuffer
}

// startHTTP runs the agent's `serve --transport http` as a process would, until stop.
func startHTTP(t *testing.T, a Agent, httpSection string, extraArgs ...string) *httpRun {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	db := filepath.Join(dir, "dw.db")
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, fmt.Sprintf("store:\n  path: %s\nhttp:\n%s", db, httpSection))
	env := func(k string) (string, bool) {
		if k == "DW_HOME" {
			return dir, true
		}
		return "", false
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &httpRun{url: "http://" + addr + MCPPath, dbPath: db, cancel: cancel, done: make(chan int, 1), stderr: &syncBuffer{}}
	args := append([]string{"--config", cfg, "--transport", "http", "--listen", addr}, extraArgs...)
	go func() {
		r.done <- Run(ctx, a, append(args, "serve"), IO{In: strings.NewReader(""), Out: io.Discard, Err: r.stderr}, env)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + HealthPath)
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case code := <-r.done:
			t.Fatalf("serve exited %d: %s", code, r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up: %s", r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *httpRun) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code
		return code
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not stop")
		return -1
	}
}

func connect(t *testing.T, url, token string) (*client.Client, error) {
	t.Helper()
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "http-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c, nil
}

func callWho(t *testing.T, c *client.Client, tool string) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("%s: err=%v res=%+v", tool, err, res)
	}
	var out whoOut
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Caller
}

func tokenSection(iss *oidctest.Issuer, aud string) string {
	s := fmt.Sprintf("  tokens:\n    - name: ci-bot\n      sha256: %s\n    - name: dana\n      sha256: %s\n", auth.HashToken("ci-secret-1"), auth.HashToken("dana-secret-2"))
	if iss != nil {
		s += fmt.Sprintf("  oidc:\n    issuer: %s\n    audience: %s\n    caller_claim: email\n", iss.URL, aud)
	}
	return s
}

func TestHTTPServesManyClientsEachAsItsCaller(t *testing.T) {
	iss := oidctest.Start(t)
	aud := "https://dw.example.com/mcp"
	r := startHTTP(t, httpAgent(nil, nil, nil), tokenSection(iss, aud))
	alice := iss.Token(t, oidctest.Claims{Subject: "u-7", Email: "alice@example.com", Audience: aud})

	ci, err := connect(t, r.url, "ci-secret-1")
	if err != nil {
		t.Fatal(err)
	}
	dana, err := connect(t, r.url, "dana-secret-2")
	if err != nil {
		t.Fatal(err)
	}
	al, err := connect(t, r.url, alice)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(3)
		go func() { defer wg.Done(); checkCaller(t, ci, "ci-bot") }()
		go func() { defer wg.Done(); checkCaller(t, dana, "dana") }()
		go func() { defer wg.Done(); checkCaller(t, al, "alice@example.com") }()
	}
	wg.Wait()
	if got := callWho(t, dana, "record_note"); got != "dana" {
		t.Fatalf("record_note ran as %q", got)
	}
	if code := r.stop(t); code != ExitOK {
		t.Fatalf("stop exit %d: %s", code, r.stderr.String())
	}

	// The audit log names every caller.
	st, err := store.Open(context.Background(), r.dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.DB.Query(`SELECT caller, count(*) FROM tool_calls GROUP BY caller ORDER BY caller`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var c string
		var n int
		if err := rows.Scan(&c, &n); err != nil {
			t.Fatal(err)
		}
		got[c] = n
	}
	if want := map[string]int{"alice@example.com": 10, "ci-bot": 10, "dana": 11}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit callers = %v, want %v", got, want)
	}
}

func checkCaller(t *testing.T, c *client.Client, want string) {
	if got := callWho(t, c, "whoami"); got != want {
		t.Errorf("whoami = %q, want %q", got, want)
	}
}

func TestHTTPRefusesMissingWrongExpiredAndWrongAudienceTokens(t *testing.T) {
	iss := oidctest.Start(t)
	aud := "http://dw.example.com/mcp"
	r := startHTTP(t, httpAgent(nil, nil, nil), "  resource_url: "+aud+"\n"+tokenSection(iss, aud))
	meta := `resource_metadata="http://dw.example.com/.well-known/oauth-protected-resource/mcp"`
	cases := map[string]struct{ token, desc string }{
		"missing":        {"", ""},
		"wrong":          {"not-a-configured-token", "unknown token"},
		"expired":        {iss.Token(t, oidctest.Claims{Subject: "u", Email: "a@x", Audience: aud, Expiry: time.Now().Add(-time.Hour)}), "expired"},
		"wrong audience": {iss.Token(t, oidctest.Claims{Subject: "u", Email: "a@x", Audience: "http://other.example.com/mcp"}), "audience"},
		"forged":         {iss.ForeignToken(t, oidctest.Claims{Subject: "u", Email: "a@x", Audience: aud}), "signature"},
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for name, tc := range cases {
		req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(h, "Bearer "+meta) {
			t.Errorf("%s: %d %q", name, resp.StatusCode, h)
		}
		if tc.desc == "" && strings.Contains(h, "error=") {
			t.Errorf("%s: a request without a token gets no error code: %q", name, h)
		}
		if tc.desc != "" && (!strings.Contains(h, `error="invalid_token"`) || !strings.Contains(h, tc.desc)) {
			t.Errorf("%s: %q lacks invalid_token / %q", name, h, tc.desc)
		}
		// mcp-go's client surfaces the refusal too.
		if _, err := connect(t, r.url, tc.token); err == nil {
			t.Errorf("%s: the client connected", name)
		}
	}
	// An authenticated caller still cannot make the server buffer an unbounded body.
	big, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", maxRequestBody)+`"}}`))
	big.Header.Set("Content-Type", "application/json")
	big.Header.Set("Accept", "application/json, text/event-stream")
	big.Header.Set("Authorization", "Bearer ci-secret-1")
	if resp, err := http.DefaultClient.Do(big); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "request body too large") {
			t.Errorf("oversized body: %d %s", resp.StatusCode, b)
		}
	}
	// The metadata the header points at is served without a token and names the issuer.
	resp, err := http.Get(strings.Replace(r.url, MCPPath, auth.MetadataPath+MCPPath, 1))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if m.Resource != aud || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != iss.URL {
		t.Fatalf("metadata = %+v", m)
	}
	// Health needs no token and says nothing else.
	resp, err = http.Get(strings.Replace(r.url, MCPPath, HealthPath, 1))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %s", resp.StatusCode, b)
	}
}

func TestHTTPKeepsSelectionProgressCancellationAndDrains(t *testing.T) {
	release, started, cancelled := make(chan struct{}), make(chan struct{}, 4), make(chan error, 4)
	r := startHTTP(t, httpAgent(release, started, cancelled), tokenSection(nil, ""), "--read-only")
	c, err := connect(t, r.url, "ci-secret-1")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "record_note" {
			t.Fatal("--read-only did not hide record_note over HTTP")
		}
	}

	// Progress reaches the caller.
	var mu sync.Mutex
	var progress []float64
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields["progress"].(float64))
			mu.Unlock()
		}
	})

	// Cancellation: the client gives up, the tool's context ends.
	ctx, cancel := context.WithCancel(context.Background())
	req := mcp.CallToolRequest{}
	req.Params.Name = "slow_step"
	req.Params.Arguments = map[string]any{"steps": 1}
	errc := make(chan error, 1)
	go func() { _, err := c.CallTool(ctx, req); errc <- err }()
	<-started
	cancel()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool's context was not cancelled when the client gave up")
	}
	<-errc

	// Draining: a call in flight when the server is told to stop still gets its answer.
	req.Params.Arguments = map[string]any{"steps": 3}
	req.Params.Meta = &mcp.Meta{ProgressToken: "p-1"}
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	resc := make(chan result, 1)
	go func() { res, err := c.CallTool(context.Background(), req); resc <- result{res, err} }()
	<-started
	stopped := make(chan int, 1)
	go func() { stopped <- r.stop(t) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case code := <-stopped:
		t.Fatalf("serve stopped (%d) with a request in flight", code)
	default:
	}
	close(release)
	got := <-resc
	if got.err != nil || got.res.IsError {
		t.Fatalf("in-flight call lost on shutdown: %v %+v", got.err, got.res)
	}
	if code := <-stopped; code != ExitOK {
		t.Fatalf("exit %d: %s", code, r.stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != 3 || progress[2] != 3 {
		t.Fatalf("progress = %v, want 1, 2, 3", progress)
	}
	if _, err := http.Get(strings.Replace(r.url, MCPPath, HealthPath, 1)); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

func TestHTTPStartRefusesAnonymousExposure(t *testing.T) {
	dir := t.TempDir()
	env := func(k string) (string, bool) {
		if k == "DW_HOME" {
			return dir, true
		}
		return "", false
	}
	serveWith := func(section, listen string) (int, string) {
		cfg := filepath.Join(dir, "c.yaml")
		writeFile(t, cfg, "store:\n  path: "+filepath.Join(dir, "dw.db")+"\n"+section)
		var errb bytes.Buffer
		code := Run(context.Background(), httpAgent(nil, nil, nil), []string{"--config", cfg, "--transport", "http", "--listen", listen, "serve"},
			IO{In: strings.NewReader(""), Out: io.Discard, Err: &errb}, env)
		return code, errb.String()
	}
	code, msg := serveWith("", "127.0.0.1:0")
	if code != ExitUsage || !strings.Contains(msg, "http.tokens") || !strings.Contains(msg, "http.oidc") {
		t.Fatalf("no auth on loopback: %d %s", code, msg)
	}
	code, msg = serveWith("http:\n  allow_anonymous: true\n", "0.0.0.0:0")
	if code != ExitUsage || !strings.Contains(msg, "loopback") {
		t.Fatalf("anonymous on all interfaces: %d %s", code, msg)
	}
	code, msg = serveWith("http:\n  allow_anonymous: true\n", ":0")
	if code != ExitUsage || !strings.Contains(msg, "loopback") {
		t.Fatalf("anonymous on :0: %d %s", code, msg)
	}
	code, msg = serveWith("http:\n  tokens:\n    - name: a\n      sha256: abc\n", "127.0.0.1:0")
	if code != ExitUsage || !strings.Contains(msg, "http.tokens[0].sha256") {
		t.Fatalf("bad token hash: %d %s", code, msg)
	}
	var errb bytes.Buffer
	code = Run(context.Background(), httpAgent(nil, nil, nil), []string{"--transport", "carrier-pigeon", "serve"}, IO{In: strings.NewReader(""), Out: io.Discard, Err: &errb}, env)
	if code != ExitUsage || !strings.Contains(errb.String(), "use stdio or http") {
		t.Fatalf("unknown transport: %d %s", code, errb.String())
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "localhost": true, "::1": true, "[::1]": true, "127.0.0.2": true, "": false, "0.0.0.0": false, "10.0.0.5": false, "dw.example.com": false} {
		if got := loopbackHost(host); got != want {
			t.Errorf("%q: %v", host, got)
		}
	}
}
