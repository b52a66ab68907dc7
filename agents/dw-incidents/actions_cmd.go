package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/dataworkers/dw/pkg/lifecycle"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

const actionsUsage = `usage:
  dw-incidents actions interrupted
  dw-incidents actions settle ID succeeded|failed --as NAME --reason TEXT [--token-file FILE]
An action stays "running" when the process that dispatched it stopped before recording the outcome;
it blocks its approval or plan step until an approver checks the target system and settles it.
Settling as failed lets the approved action run again on the next remediate; nothing runs now.
The approver's token comes from DW_APPROVER_TOKEN or --token-file; its SHA-256 must match the config.
`

// actionsCommand lists and settles interrupted actions: a person's word on what the target system
// shows, never an MCP tool.
func actionsCommand(ctx context.Context, env *mcpkit.Env, args []string, stdio mcpkit.IO) int {
	if len(args) == 0 {
		fmt.Fprint(stdio.Err, actionsUsage)
		return mcpkit.ExitUsage
	}
	life, err := lifecycleService(ctx, env)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	switch args[0] {
	case "interrupted":
		if len(args) > 1 {
			fmt.Fprint(stdio.Err, actionsUsage)
			return mcpkit.ExitUsage
		}
		list, err := life.Interrupted(ctx)
		if err != nil {
			return fail(stdio, mcpkit.ExitToolError, err)
		}
		if len(list) == 0 {
			fmt.Fprintln(stdio.Out, "no interrupted actions")
			return mcpkit.ExitOK
		}
		tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ACTION\tINCIDENT\tCLASS\tTARGET\tSTARTED\tAUTHORITY")
		for _, a := range list {
			fmt.Fprintf(tw, "#%d\t#%d\t%s\t%s\t%s\t%s\n", a.ID, a.IncidentID, a.Class, a.Target, a.StartedAt.Format(time.RFC3339), a.Authority)
		}
		if err := tw.Flush(); err != nil {
			return mcpkit.ExitToolError
		}
		return mcpkit.ExitOK
	case "settle":
		return settleCommand(ctx, env, life, args[1:], stdio)
	}
	fmt.Fprint(stdio.Err, actionsUsage)
	return mcpkit.ExitUsage
}

func settleCommand(ctx context.Context, env *mcpkit.Env, life *lifecycle.Service, args []string, stdio mcpkit.IO) int {
	d, code := parseDecision(ctx, env, "actions settle", actionsUsage, "what the target system shows (recorded on the action)", true, nil, args, stdio)
	if code != mcpkit.ExitOK {
		return code
	}
	a, err := life.Settle(ctx, d.id, d.value, d.as, d.reason)
	if err != nil {
		return fail(stdio, mcpkit.ExitToolError, err)
	}
	fmt.Fprintf(stdio.Out, "action #%d (%s on %s) settled as %s by %s\n", a.ID, a.Class, a.Target, a.Status, d.as)
	return mcpkit.ExitOK
}
