package openlineage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A walk is bounded in entries, files, bytes and time, never enters a kernel file system, and a
// directory with no event files is an error that says what was looked for.
func TestDirectoryWalksAreBoundedAndHonest(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err == nil {
		if _, err := Files("/proc"); err == nil || !strings.Contains(err.Error(), "procfs") {
			t.Errorf("/proc: %v", err)
		}
	}
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Files(empty)
	if err == nil || !strings.Contains(err.Error(), "no event files (*.json, *.ndjson or *.jsonl)") || strings.Contains(err.Error(), "root:x") {
		t.Errorf("a directory without events: %v", err)
	}

	dir := t.TempDir()
	for i := 0; i < 30; i++ {
		sub := filepath.Join(dir, "d", string(rune('a'+i%26)))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, strings.Repeat("e", i+1)+".json"), []byte(strings.Repeat(" ", 100)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]struct {
		lim  WalkLimits
		want string
	}{
		"files":   {WalkLimits{Files: 10, Entries: 1000, Bytes: 1 << 20, Time: time.Minute}, "more than 10 event files"},
		"entries": {WalkLimits{Files: 1000, Entries: 20, Bytes: 1 << 20, Time: time.Minute}, "more than 20 entries"},
		"bytes":   {WalkLimits{Files: 1000, Entries: 1000, Bytes: 1000, Time: time.Minute}, "hold more than"},
	} {
		if _, err := FilesWithin(dir, c.lim); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
	files, err := FilesWithin(dir, DefaultWalkLimits())
	if err != nil || len(files) != 30 {
		t.Errorf("within the limits: %d files, %v", len(files), err)
	}
}

// A walk of / stops at a limit or the clock long before it could read the whole machine, and
// never reaches /proc (another file system).
func TestAWalkOfTheRootEndsQuickly(t *testing.T) {
	start := time.Now()
	files, err := FilesWithin("/", WalkLimits{Files: 10000, Entries: 20000, Bytes: 1 << 30, Time: 3 * time.Second})
	if time.Since(start) > 15*time.Second {
		t.Fatalf("walk of / took %v", time.Since(start))
	}
	for _, f := range files {
		if strings.HasPrefix(f, "/proc/") || strings.HasPrefix(f, "/sys/") {
			t.Fatalf("walked into %s", f)
		}
	}
	_ = err // either a limit or what / holds; the bound is the point
}
