package blackbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"

// startOnce runs argv, sends initialize and waits for its answer: process start to first response.
// The process is then closed and waited for outside the measured span.
func startOnce(env []string, argv ...string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	io.WriteString(stdin, initializeLine)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	d := time.Since(start)
	stdin.Close()
	cmd.Wait()
	if err != nil || !strings.Contains(line, `"id":1`) {
		return 0, fmt.Errorf("%v: no initialize answer: %q %v", argv, line, err)
	}
	return d, nil
}

func coldStart(b *testing.B, env []string, argv ...string) {
	b.Helper()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		d, err := startOnce(env, argv...)
		if err != nil {
			b.Fatal(err)
		}
		total += d
	}
	b.ReportMetric(0, "ns/op") // the span, not the loop (which includes each exit), is the figure
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
}

// BenchmarkColdStart measures process start → initialize response for each binary (run directly and
// through start-agent.sh, which first checks whether a rebuild is needed), beside a bare mcp-go
// server as the baseline:
//
//	go test ./agents/internal/blackbox -run '^$' -bench ColdStart -benchtime 20x
//
// "interleaved" starts the baseline and each binary in turn, b.N rounds, and reports each one's
// median and its ratio to the baseline's median: on a shared machine a load that comes and goes
// then weighs on every binary alike.
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
	b.Run("interleaved", func(b *testing.B) {
		names := append([]string{"baseline"}, agents...)
		times := make(map[string][]time.Duration, len(names))
		for i := 0; i < b.N; i++ {
			for _, n := range names {
				path := baseline
				if n != "baseline" {
					path = filepath.Join(repoRoot(), "bin", n)
				}
				d, err := startOnce(env, path)
				if err != nil {
					b.Fatal(err)
				}
				times[n] = append(times[n], d)
			}
		}
		base := median(times["baseline"])
		b.ReportMetric(0, "ns/op")
		for _, n := range names {
			m := median(times[n])
			b.ReportMetric(float64(m.Microseconds())/1000, n+"-ms")
			if n != "baseline" {
				b.ReportMetric(float64(m)/float64(base), n+"-x")
			}
		}
	})
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
