package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/dataworkers/dw/pkg/console"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

// consoleCommand serves the approver's web page on loopback until interrupted.
func consoleCommand(ctx context.Context, env *mcpkit.Env, args []string, stdio mcpkit.IO) int {
	const usage = "usage: dw-incidents console [--addr 127.0.0.1:8765]\n\n" +
		"Serve the approver console on a loopback address until Ctrl-C: sign in with your approver name and\n" +
		"token, then decide requests, stop or resume all dispatch, set an incident's severity or status,\n" +
		"settle an interrupted action and read receipts.\n"
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:8765", "loopback address to listen on")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdio.Out, usage)
			return mcpkit.ExitOK
		}
		if err != nil {
			fmt.Fprintf(stdio.Err, "dw-incidents console: %v\n", err)
		}
		fmt.Fprint(stdio.Err, usage)
		return mcpkit.ExitUsage
	}
	if err := console.CheckLoopback(*addr); err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	svc, err := approvalService(ctx, env)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	chain, err := receiptChain(ctx, env)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	st, err := env.Store.Get(ctx)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	srv, err := console.New(console.Sources{Approvals: svc, Receipts: chain, Incidents: incidents.New(st, env.Now),
		Graph: graph.New(st, env.Now), Store: st, Actions: executor(st, env, svc), Config: env.Config}, env.Now)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err = srv.Serve(ctx, *addr, func(url string) {
		fmt.Fprintf(stdio.Out, "Approver console on %s (Ctrl-C to stop)\n", url)
	})
	if err != nil {
		return fail(stdio, mcpkit.ExitToolError, err)
	}
	return mcpkit.ExitOK
}
