package blackbox

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"

// coldStart runs argv, sends initialize and waits for its answer: process start to first response.
func coldStart(b *testing.B, env []string, argv ...string) {
	b.Helper()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		io.WriteString(stdin, initializeLine)
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || !strings.Contains(line, `"id":1`) {
			b.Fatalf("%v: no initialize answer: %q %v", argv, line, err)
		}
		b.StopTimer()
		stdin.Close()
		cmd.Wait()
		b.StartTimer()
	}
}

// BenchmarkColdStart measures process start → initialize response for each binary (run directly and
// through start-agent.sh, which first checks whether a rebuild is needed), beside a bare mcp-go
// server as the baseline:
//
//	go test ./agents/internal/blackbox -run '^$' -bench ColdStart -benchtime 20x
func BenchmarkColdStart(b *testing.B) {
	env := append(os.Environ(), "DW_HOME="+b.TempDir())
	baseline := filepath.Join(b.TempDir(), "minimal")
	build := exec.Command("go", "build", "-o", baseline, "./testdata/minimal")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
	b.Run("baseline-minimal-mcp-go", func(b *testing.B) { coldStart(b, env, baseline) })
	for _, a := range agents {
		b.Run(a+"/binary", func(b *testing.B) { coldStart(b, env, filepath.Join(repoRoot(), "bin", a)) })
		b.Run(a+"/start-agent.sh", func(b *testing.B) { coldStart(b, env, startAgent(), a) })
	}
}
