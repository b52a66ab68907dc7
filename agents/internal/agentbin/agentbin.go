// Package agentbin finds and builds the five servers' binaries the way a client starts them, for
// the test layers that drive them over stdio (blackbox, hostile).
package agentbin

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Agents are the five servers.
var Agents = []string{"dw-connectors", "dw-schema", "dw-context-catalog", "dw-quality", "dw-incidents"}

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// StartAgent is the script clients run: start-agent.sh NAME builds bin/NAME when stale and execs it.
func StartAgent() string { return filepath.Join(RepoRoot(), "start-agent.sh") }

// BuildAll builds every agent once, up front, through start-agent.sh (build output on stderr).
func BuildAll(stderr func(cmd *exec.Cmd)) error {
	for _, a := range Agents {
		cmd := exec.Command(StartAgent(), a, "version")
		if stderr != nil {
			stderr(cmd)
		}
		if out, err := cmd.Output(); err != nil || !strings.HasPrefix(string(out), a+" ") {
			return fmt.Errorf("building %s through start-agent.sh failed: %v (%q)", a, err, out)
		}
	}
	return nil
}
