// Package startgc keeps the garbage collector out of a binary's start-up. A stdio MCP server's
// package initialisers and tool tables allocate a few megabytes of short-lived data before the
// first answer; with the default GOGC the collector runs three or four times in that window, on a
// machine whose cores the client is also using. Blank-importing this package from a main package
// turns the collector off (under a memory limit, so a start that allocates far more than expected
// still collects) until Restore is called once the first answer is out.
//
// Import it from main packages only: its initialiser changes the whole process's collector, which a
// library or test binary must not do. A GOGC or GOMEMLIMIT set in the environment is respected:
// the package then changes nothing.
package startgc

import (
	"os"
	"runtime/debug"
	"sync"
)

// startLimit bounds the heap while the collector is off: about ten times what an agent allocates
// before its first answer, far below what any host running it has.
const startLimit = 128 << 20

// The collector settings are process-wide, so the state that restores them is too.
var (
	active      bool
	prevPercent int
	prevLimit   int64
	restoreOnce sync.Once
)

func init() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	prevLimit = debug.SetMemoryLimit(startLimit)
	prevPercent = debug.SetGCPercent(-1)
	active = true
}

// Restore puts the collector back as the process started it. It is safe to call more than once,
// and does nothing when the package did not change the collector.
func Restore() {
	restoreOnce.Do(func() {
		if !active {
			return
		}
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
}
