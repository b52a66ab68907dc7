package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A cluster that started but never became ready must not outlive start: the server is stopped
// and its directory removed, and the error says why.
func TestStartStopsClusterThatNeverGetsReady(t *testing.T) {
	var seen *Cluster
	var dir string
	_, err := start(func(c *Cluster) error {
		seen, dir = c, c.dir
		return errors.New("cluster did not answer")
	})
	if seen == nil {
		skipOrFail(t, err)
	}
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("err = %v, want the readiness failure", err)
	}
	if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
		t.Errorf("cluster directory %s still exists (%v)", dir, statErr)
	}
	if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", seen.Port)); err == nil {
		conn.Close()
		t.Errorf("the server still listens on port %d", seen.Port)
	}
}

// A test binary that panics never runs t.Cleanup or TestMain's StopShared; the reaper must still
// stop the cluster and remove its files once the binary is gone.
func TestClusterIsReapedWhenTheBinaryPanics(t *testing.T) {
	if os.Getenv("PGTEST_PANIC_CHILD") == "1" {
		c := Shared(t)
		fmt.Printf("DIR=%s\n", c.dir)
		panic("deliberate panic with a running shared cluster")
	}
	if _, err := findBinDir(); err != nil {
		skipOrFail(t, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterIsReapedWhenTheBinaryPanics$")
	cmd.Env = append(os.Environ(), "PGTEST_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("child did not panic:\n%s", out)
	}
	var dir string
	for _, line := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(line, "DIR="); ok {
			dir = d
		}
	}
	if dir == "" {
		t.Fatalf("child started no cluster:\n%s", out)
	}
	// The reaper polls once a second and pg_ctl stop waits for shutdown; this bound only guards
	// against a hang.
	for i := 0; ; i++ {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
		if i == 1200 {
			t.Fatalf("cluster directory %s was not removed after the child panicked", dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
