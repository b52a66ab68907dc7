// Package pgtest starts a throwaway PostgreSQL cluster on loopback for tests: initdb and pg_ctl from
// the Debian packages (/usr/lib/postgresql/*/bin), run as user postgres when the test runs as root
// (PostgreSQL refuses root), fsync off, a socket directory of its own, a free port on 127.0.0.1.
// When the binaries are missing the test is skipped, except under CI=true, where CI installs
// postgresql and a skip would hide a broken peer.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
)

// Cluster is a running throwaway cluster.
type Cluster struct {
	// DSN connects as the superuser postgres to database postgres.
	DSN     string
	Port    int
	dir     string
	binDir  string
	asUser  bool
	logFile string
}

// Start starts a cluster for one test and stops it in t.Cleanup.
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := start((*Cluster).waitReady)
	if err != nil {
		skipOrFail(t, err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
)

// Shared returns one cluster for the whole test binary, started on first use. Call StopShared
// from TestMain after m.Run so the cluster does not outlive the tests.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = start((*Cluster).waitReady) })
	if sharedErr != nil {
		skipOrFail(t, sharedErr)
	}
	return shared
}

// StopShared stops the shared cluster if one was started.
func StopShared() {
	if shared != nil {
		shared.Stop()
	}
}

// NewDatabase creates a fresh database on the cluster and returns its DSN, so tests sharing a
// cluster do not see each other's tables.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	db, err := sql.Open("pgx", c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("t_%d_%d", time.Now().UnixNano(), os.Getpid())
	if _, err := db.Exec(`CREATE DATABASE "` + name + `"`); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return c.dsnFor(name)
}

func (c *Cluster) dsnFor(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("pgtest: %v (CI installs postgresql: apt-get install -y postgresql)", err)
	}
	t.Skipf("pgtest: %v (apt-get install -y postgresql to run this test)", err)
}

// errNoBinaries marks a machine without PostgreSQL.
var errNoBinaries = errors.New("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin")

func findBinDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", errNoBinaries
	}
	// Highest major version first.
	sort.Slice(matches, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[j]))))
		return vi > vj
	})
	return filepath.Dir(matches[0]), nil
}

// start starts a cluster and waits for ready to accept it (a parameter so the failure path, which
// must not leak a running server, can be tested).
func start(ready func(*Cluster) error) (*Cluster, error) {
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{binDir: bin, asUser: os.Geteuid() == 0}
	// Under root the data directory must belong to postgres, and every parent must be traversable;
	// the default temp dir is, t.TempDir() may not be once it is cleaned.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c.dir = dir
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	c.logFile = filepath.Join(dir, "pg.log")
	if err := os.MkdirAll(sock, 0o700); err != nil {
		return nil, err
	}
	if c.asUser {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, p := range []string{dir, sock} {
			if err := os.Chown(p, uid, gid); err != nil {
				os.RemoveAll(dir)
				return nil, err
			}
		}
	}
	if out, err := c.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	// A free port can be taken between Listen and pg_ctl start; retry a few times.
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off", port, sock)
		out, err := c.run("pg_ctl", "-D", data, "-o", opts, "-l", c.logFile, "-w", "-t", "60", "start")
		if err == nil {
			c.reapOnExit()
			c.Port = port
			c.DSN = c.dsnFor("postgres")
			if err := ready(c); err != nil {
				// The server runs but never answered: stop it and remove its files, or it would
				// outlive the test binary with nobody holding its address.
				log, _ := os.ReadFile(c.logFile)
				c.Stop()
				return nil, fmt.Errorf("%w\n%s", err, log)
			}
			return c, nil
		}
		if attempt == 4 {
			log, _ := os.ReadFile(c.logFile)
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
		}
	}
	return nil, errors.New("unreachable")
}

// reapOnExit starts a small shell that stops the cluster and removes its files once this test
// binary has exited, by whatever path: a panicking test or -timeout ends the binary without
// running t.Cleanup or TestMain's StopShared, and the postmaster would otherwise live on. After a
// normal Stop the directory is gone and the shell only exits. It runs in its own session (so ^C
// on go test does not end it before the binary) with no inherited output (so go test does not wait
// for it).
func (c *Cluster) reapOnExit() {
	stop := `"$3" -D "$2/data" -m fast -w stop`
	if c.asUser {
		stop = "runuser -u postgres -- " + stop
	}
	script := `while kill -0 "$1" 2>/dev/null; do sleep 1; done; if [ -d "$2/data" ]; then ` + stop + ` >/dev/null 2>&1; fi; rm -rf "$2"`
	cmd := exec.Command("/bin/sh", "-c", script, "pgtest-reaper", strconv.Itoa(os.Getpid()), c.dir, filepath.Join(c.binDir, "pg_ctl"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err == nil {
		go func() { _ = cmd.Wait() }()
	}
}

func (c *Cluster) waitReady() error {
	db, err := sql.Open("pgx", c.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if err := db.PingContext(ctx); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return fmt.Errorf("cluster did not answer: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) run(tool string, args ...string) ([]byte, error) {
	path := filepath.Join(c.binDir, tool)
	var cmd *exec.Cmd
	if c.asUser {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// Stop stops the cluster (fast mode) and removes its files.
func (c *Cluster) Stop() {
	if c == nil || c.dir == "" {
		return
	}
	_, _ = c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop")
	_ = os.RemoveAll(c.dir)
	c.dir = ""
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
