// Package promtest starts a throwaway Prometheus server on loopback for tests, scraping targets the
// test serves, from the Debian package's binary (/usr/bin/prometheus). When the binary is missing
// the test is skipped, except under CI=true, where CI installs prometheus and a skip would hide a
// broken peer.
package promtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Server is a running Prometheus.
type Server struct {
	// URL is the HTTP API base, e.g. http://127.0.0.1:40123.
	URL string
	log string
}

// Start runs Prometheus scraping each target (host:port of a loopback /metrics endpoint) every
// interval (default 1s), and stops it in t.Cleanup.
func Start(t testing.TB, interval time.Duration, targets ...string) *Server {
	t.Helper()
	if interval <= 0 {
		interval = time.Second
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		skipOrFail(t, fmt.Errorf("no prometheus binary on PATH"))
	}
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nscrape_configs:\n  - job_name: test\n    static_configs:\n      - targets: [%s]\n",
		interval, interval, strings.Join(quoted, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(dir, "prometheus.log")}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		skipOrFail(t, fmt.Errorf("start prometheus: %w", err))
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-ctx.Done():
			b, _ := os.ReadFile(s.log)
			t.Fatalf("promtest: prometheus not ready within 30s; log:\n%s", b)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("promtest: %v (CI installs prometheus: apt-get install -y prometheus)", err)
	}
	t.Skipf("promtest: %v (apt-get install -y prometheus to run this test)", err)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
