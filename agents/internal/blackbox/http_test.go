package blackbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/auth"
	"github.com/dataworkers/dw/pkg/auth/oidctest"
	"github.com/dataworkers/dw/pkg/store"
)

// conformanceScenarios are the server scenarios of @modelcontextprotocol/conformance that test a
// server's protocol and transport rather than the reference test server's fixture tools. The rest
// need tools named test_* (tools-call-*, elicitation-*), or prompts, resources, completions or
// logging, which no agent offers.
var conformanceScenarios = []string{"server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"}

// node22 is the Node 22 binary and the packages .ci/run installs into .ci/conformance.
func node22(t *testing.T) (node, modules string) {
	t.Helper()
	dir := filepath.Join(repoRoot(), ".ci", "conformance", "node_modules")
	node = filepath.Join(dir, ".bin", "node")
	for _, p := range []string{node, filepath.Join(dir, "@modelcontextprotocol", "conformance"), filepath.Join(dir, "@modelcontextprotocol", "sdk")} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s missing: .ci/run must install node@22, @modelcontextprotocol/conformance and @modelcontextprotocol/sdk into .ci/conformance", p)
			}
			t.Skipf("%s not installed (bash .ci/run installs it)", p)
		}
	}
	return node, dir
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serveHTTP starts an agent with `serve --transport http` (through the DW_ mirrors) and the given
// http section; it returns the MCP URL, the store path and a stop that sends SIGTERM and waits.
func serveHTTP(t *testing.T, agent, httpSection string) (url, db string, stop func()) {
	t.Helper()
	home := t.TempDir()
	db = filepath.Join(home, "dw.db")
	cfg := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(cfg, []byte("store:\n  path: "+db+"\nhttp:\n"+httpSection), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopback(t)
	cmd := exec.Command(startAgent(), agent)
	cmd.Env = append(os.Environ(), "DW_HOME="+home, "DW_CONFIG="+cfg, "DW_TRANSPORT=http", "DW_LISTEN="+addr, "DW_LOG_LEVEL=warn")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited: %v: %s", agent, err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("%s did not come up on %s: %s", agent, addr, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%s after SIGTERM: %v: %s", agent, err, stderr.String())
			}
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGTERM", agent)
		}
	}
	t.Cleanup(stop)
	return "http://" + addr + "/mcp", db, stop
}

func TestConformanceSuiteOverStreamableHTTP(t *testing.T) {
	node, modules := node22(t)
	suite := filepath.Join(modules, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			// The suite sends no credentials, so the agent serves anonymously, which only loopback allows.
			url, _, _ := serveHTTP(t, agent, "  allow_anonymous: true\n")
			for _, sc := range conformanceScenarios {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				out, err := exec.CommandContext(ctx, node, suite, "server", "--url", url, "--scenario", sc).CombinedOutput()
				cancel()
				if err != nil || !strings.Contains(string(out), "0 failed") {
					t.Errorf("scenario %s: %v\n%s", sc, err, out)
				}
			}
		})
	}
}

type sdkResult struct {
	Connected  bool            `json:"connected"`
	Error      string          `json:"error"`
	Code       int             `json:"code"`
	Tools      []string        `json:"tools"`
	IsError    bool            `json:"isError"`
	Structured json.RawMessage `json:"structured"`
}

func TestOfficialSDKClientOverStreamableHTTP(t *testing.T) {
	node, modules := node22(t)
	iss := oidctest.Start(t)
	aud := "http://dw-quality.test/mcp"
	section := fmt.Sprintf("  tokens:\n    - name: ci-bot\n      sha256: %s\n  oidc:\n    issuer: %s\n    audience: %s\n    caller_claim: email\n",
		auth.HashToken("ci-secret-token"), iss.URL, aud)
	url, db, stop := serveHTTP(t, "dw-quality", section)
	script := filepath.Join(repoRoot(), "agents", "internal", "blackbox", "testdata", "sdk_http_client.cjs")
	sdk := func(token string) sdkResult {
		t.Helper()
		cmd := exec.Command(node, script, url, token, "check_connections")
		cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sdk client: %v: %s", err, out)
		}
		var r sdkResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("sdk client output %q: %v", out, err)
		}
		return r
	}
	for who, token := range map[string]string{
		"static token": "ci-secret-token",
		"oidc token":   iss.Token(t, oidctest.Claims{Subject: "u-3", Email: "erin@example.com", Audience: aud}),
	} {
		r := sdk(token)
		if !r.Connected || r.IsError || len(r.Tools) == 0 || !strings.Contains(string(r.Structured), `"agent":"dw-quality"`) {
			t.Fatalf("%s: %+v", who, r)
		}
	}
	for who, token := range map[string]string{
		"missing":        "",
		"wrong":          "not-the-token",
		"expired":        iss.Token(t, oidctest.Claims{Subject: "u-3", Email: "erin@example.com", Audience: aud, Expiry: time.Now().Add(-time.Minute)}),
		"wrong audience": iss.Token(t, oidctest.Claims{Subject: "u-3", Email: "erin@example.com", Audience: "http://elsewhere/mcp"}),
	} {
		if r := sdk(token); r.Connected || r.Code != http.StatusUnauthorized || !strings.Contains(r.Error, "unauthorized") {
			t.Errorf("%s token: %+v", who, r)
		}
	}
	stop()
	st, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var callers string
	if err := st.DB.QueryRow(`SELECT group_concat(caller, ',') FROM (SELECT caller FROM tool_calls WHERE tool = 'check_connections' ORDER BY caller)`).Scan(&callers); err != nil {
		t.Fatal(err)
	}
	if callers != "ci-bot,erin@example.com" {
		t.Fatalf("audit callers = %q", callers)
	}
}
