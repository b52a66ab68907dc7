// Command demo replays the acceptance story on this machine (./start-agent.sh demo): loopback
// stand-ins, the scenario, and the five agents driven over stdio. See docs/walkthrough.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/dataworkers/dw/agents/internal/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(demo.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
