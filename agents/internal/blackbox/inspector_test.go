package blackbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// inspector is the MCP Inspector CLI that .ci/run installs from npm (@modelcontextprotocol/inspector 2.12.0).
func inspector(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(repoRoot(), ".ci", "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MCP Inspector CLI missing at %s: .ci/run must install it", bin)
		}
		t.Skipf("MCP Inspector CLI not installed (bash .ci/run installs it at %s)", bin)
	}
	return bin
}

func TestInspectorCLIListsAndCallsEveryAgent(t *testing.T) {
	bin := inspector(t)
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			home := t.TempDir()
			run := func(args ...string) []byte {
				cmd := exec.Command(bin, append([]string{"--cli", startAgent(), agent, "-e", "DW_HOME=" + home}, args...)...)
				cmd.Env = append(os.Environ(), "HOME="+home)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("inspector %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr.String())
				}
				return out
			}
			var list struct {
				Result struct {
					Tools []struct {
						Name string `json:"name"`
					} `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(run("--method", "tools/list", "--strict", "--format", "json"), &list); err != nil || len(list.Result.Tools) == 0 {
				t.Fatalf("tools/list: %v %+v", err, list)
			}
			var call struct {
				Result struct {
					StructuredContent struct {
						Agent string `json:"agent"`
						Store struct {
							Path string `json:"path"`
							OK   bool   `json:"ok"`
						} `json:"store"`
					} `json:"structuredContent"`
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if err := json.Unmarshal(run("--method", "tools/call", "--tool-name", "check_connections", "--format", "json"), &call); err != nil {
				t.Fatal(err)
			}
			sc := call.Result.StructuredContent
			if call.Result.IsError || sc.Agent != agent || !sc.Store.OK || !strings.HasPrefix(sc.Store.Path, home) {
				t.Fatalf("check_connections through the Inspector: %+v", call.Result)
			}
		})
	}
}
