package startgc

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// The test binary imports the package like a main package does, so its initialiser has run.
func TestTheCollectorIsOffUntilRestoreThenAsBefore(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		if active {
			t.Fatal("changed the collector although GOGC or GOMEMLIMIT is set")
		}
		t.Skip("GOGC or GOMEMLIMIT set: the package leaves the collector alone")
	}
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent %d during start-up, want off", p)
	}
	if l := debug.SetMemoryLimit(-1); l != startLimit {
		t.Fatalf("memory limit %d during start-up, want %d", l, startLimit)
	}
	Restore()
	Restore()
	if p := gcPercent(); p != 100 {
		t.Errorf("GC percent %d after Restore, want the default 100", p)
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("memory limit %d after Restore, want none", l)
	}
}
