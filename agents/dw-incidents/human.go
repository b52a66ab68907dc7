package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

// The human side: subcommands a named approver runs in a terminal. None of this is an MCP tool, so
// no agent can approve, reject, stop, resume, settle an action, or set a person's severity or status.
func humanCommands() map[string]mcpkit.Command {
	return map[string]mcpkit.Command{
		"actions":   actionsCommand,
		"approvals": approvalsCommand,
		"console":   consoleCommand,
		"severity":  severityCommand,
		"status":    statusCommand,
		"store":     storeCommand,
		"stop": func(ctx context.Context, env *mcpkit.Env, args []string, io mcpkit.IO) int {
			return stopCommand(ctx, env, args, io, true)
		},
		"resume": func(ctx context.Context, env *mcpkit.Env, args []string, io mcpkit.IO) int {
			return stopCommand(ctx, env, args, io, false)
		},
	}
}

const approvalsUsage = `usage:
  dw-incidents approvals list [--status pending|approved|rejected|expired|all] [--incident N] [--json]
  dw-incidents approvals show ID [--json]
  dw-incidents approvals approve ID --as NAME --sha256 HASH [--comment TEXT] [--token-file FILE]
  dw-incidents approvals reject ID --as NAME [--comment TEXT] [--token-file FILE]
The approver's token comes from DW_APPROVER_TOKEN or --token-file; its SHA-256 must match the config.
`

func approvalsCommand(ctx context.Context, env *mcpkit.Env, args []string, stdio mcpkit.IO) int {
	if len(args) == 0 {
		fmt.Fprint(stdio.Err, approvalsUsage)
		return mcpkit.ExitUsage
	}
	verb, args := args[0], args[1:]
	fs := flag.NewFlagSet("approvals "+verb, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	status := fs.String("status", "pending", "filter by status (all for every request)")
	incident := fs.Int64("incident", 0, "only requests of this incident")
	asJSON := fs.Bool("json", false, "print JSON")
	as := fs.String("as", "", "your approver name, as in the config")
	sha := fs.String("sha256", "", "the payload SHA-256 you reviewed with `approvals show`")
	comment := fs.String("comment", "", "why")
	tokenFile := fs.String("token-file", "", "file holding your approver token (default: $DW_APPROVER_TOKEN)")
	id, rest, err := leadingID(args)
	if err != nil || fs.Parse(rest) != nil || fs.NArg() > 0 {
		fmt.Fprint(stdio.Err, approvalsUsage)
		return mcpkit.ExitUsage
	}
	svc, err := approvalService(ctx, env)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	switch verb {
	case "list":
		st := *status
		if st == "all" {
			st = ""
		}
		rs, err := svc.List(ctx, st, *incident)
		if err != nil {
			return fail(stdio, mcpkit.ExitToolError, err)
		}
		if *asJSON {
			return printJSON(stdio.Out, rs)
		}
		tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATUS\tCLASS\tTARGET\tAPPROVERS\tEXPIRES\tTITLE")
		for _, r := range rs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, r.Class, r.Target, strings.Join(r.Approvers, ","), r.ExpiresAt.Format(time.RFC3339), r.Title)
		}
		tw.Flush()
		return mcpkit.ExitOK
	case "show":
		if id == 0 {
			fmt.Fprint(stdio.Err, approvalsUsage)
			return mcpkit.ExitUsage
		}
		r, err := svc.Get(ctx, id)
		if err != nil {
			return fail(stdio, mcpkit.ExitToolError, err)
		}
		if *asJSON {
			return printJSON(stdio.Out, r)
		}
		printRequest(stdio.Out, r)
		return mcpkit.ExitOK
	case "approve", "reject":
		if id == 0 || *as == "" || (verb == "approve" && *sha == "") {
			fmt.Fprint(stdio.Err, approvalsUsage)
			return mcpkit.ExitUsage
		}
		token, err := readToken(*tokenFile, env)
		if err != nil {
			return fail(stdio, mcpkit.ExitUsage, err)
		}
		r, err := svc.Decide(ctx, approvals.Decision{RequestID: id, Approver: *as, Token: token, Approve: verb == "approve",
			PayloadSHA256: strings.ToLower(*sha), Comment: *comment})
		if err != nil {
			return fail(stdio, mcpkit.ExitToolError, err)
		}
		fmt.Fprintf(stdio.Out, "request #%d %s by %s at %s\n", r.ID, r.Status, r.DecidedBy, r.DecidedAt.Format(time.RFC3339))
		return mcpkit.ExitOK
	}
	fmt.Fprint(stdio.Err, approvalsUsage)
	return mcpkit.ExitUsage
}

func stopCommand(ctx context.Context, env *mcpkit.Env, args []string, stdio mcpkit.IO, stop bool) int {
	name := "resume"
	if stop {
		name = "stop"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	as := fs.String("as", "", "your approver name, as in the config")
	reason := fs.String("reason", "", "why (shown to everyone the stop blocks)")
	tokenFile := fs.String("token-file", "", "file holding your approver token (default: $DW_APPROVER_TOKEN)")
	if fs.Parse(args) != nil || *as == "" || (stop && *reason == "") {
		fmt.Fprintf(stdio.Err, "usage: dw-incidents %s --as NAME [--reason TEXT] [--token-file FILE]   (--reason is required to stop)\n", name)
		return mcpkit.ExitUsage
	}
	token, err := readToken(*tokenFile, env)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	svc, err := approvalService(ctx, env)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	st, err := svc.SetStop(ctx, *as, token, stop, *reason)
	if err != nil {
		return fail(stdio, mcpkit.ExitToolError, err)
	}
	state := "lifted: dispatch may resume"
	if st.Stopped {
		state = "ON: nothing is dispatched"
	}
	fmt.Fprintf(stdio.Out, "org-wide stop %s (by %s at %s)\n", state, st.By, st.At.Format(time.RFC3339))
	return mcpkit.ExitOK
}

const severityUsage = `usage: dw-incidents severity ID sev1|sev2|sev3|sev4 --as NAME [--reason TEXT] [--token-file FILE]
Sets the incident's severity as yours: no diagnosis lowers it afterwards.
The approver's token comes from DW_APPROVER_TOKEN or --token-file; its SHA-256 must match the config.
`

// severityCommand sets a person's severity on an incident, proven with the approver token as
// `approvals approve` is.
func severityCommand(ctx context.Context, env *mcpkit.Env, args []string, stdio mcpkit.IO) int {
	valid := func(sev string) error {
		if !incidents.ValidSeverity(sev) {
			return fmt.Errorf("severity %q: use sev1, sev2, sev3 or sev4", sev)
		}
		return nil
	}
	d, code := parseDecision(ctx, env, "severity", severityUsage, "why (recorded on the incident's timeline)", false, valid, args, stdio)
	if code != mcpkit.ExitOK {
		return code
	}
	id, sev := d.id, d.value
	s, err := incidentStore(ctx, env)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	why := d.reason
	if why == "" {
		why = "set from the command line"
	}
	if err := s.SetSeverity(ctx, id, sev, d.as, why); err != nil {
		return fail(stdio, mcpkit.ExitToolError, err)
	}
	fmt.Fprintf(stdio.Out, "incident #%d is %s, set by %s: no diagnosis lowers it\n", id, sev, d.as)
	return mcpkit.ExitOK
}

// leadingID takes an optional numeric request id before the flags.
func leadingID(args []string) (int64, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return 0, args, nil
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(args[0], "#"), 10, 64)
	if err != nil || id <= 0 {
		return 0, nil, fmt.Errorf("request id %q is not a number", args[0])
	}
	return id, args[1:], nil
}

func readToken(file string, env *mcpkit.Env) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if tok := env.Getenv("DW_APPROVER_TOKEN"); tok != "" {
		return tok, nil
	}
	return "", errors.New("no approver token: set DW_APPROVER_TOKEN or pass --token-file")
}

func printRequest(w io.Writer, r approvals.Request) {
	fmt.Fprintf(w, "Request #%d  %s\n", r.ID, strings.ToUpper(r.Status))
	fmt.Fprintf(w, "  %s\n", r.Title)
	fmt.Fprintf(w, "  class      %s (executed by %s)\n", r.Class, r.Executor)
	fmt.Fprintf(w, "  target     %s (domain %s)\n", r.Target, r.Domain)
	if r.IncidentID != 0 {
		fmt.Fprintf(w, "  incident   #%d\n", r.IncidentID)
	}
	fmt.Fprintf(w, "  approvers  %s\n", strings.Join(r.Approvers, ", "))
	if len(r.Copied) > 0 {
		fmt.Fprintf(w, "  copied     %s\n", strings.Join(r.Copied, ", "))
	}
	fmt.Fprintf(w, "  requested  %s by %s; expires %s\n", r.RequestedAt.Format(time.RFC3339), r.RequestedBy, r.ExpiresAt.Format(time.RFC3339))
	if r.DecidedBy != "" {
		fmt.Fprintf(w, "  decided    %s by %s: %s\n", r.DecidedAt.Format(time.RFC3339), r.DecidedBy, r.Comment)
	}
	pretty, _ := json.MarshalIndent(r.Payload, "    ", "  ")
	fmt.Fprintf(w, "  payload (sha256 %s):\n    %s\n", r.PayloadSHA256, pretty)
	fmt.Fprintln(w, "  history:")
	for _, e := range r.Events {
		fmt.Fprintf(w, "    %s  %-13s %-18s %s\n", e.At.Format(time.RFC3339), e.Kind, e.Actor, e.Detail)
	}
	if r.Status == approvals.StatusPending {
		fmt.Fprintf(w, "\nTo approve exactly this payload:\n  dw-incidents approvals approve %d --as NAME --sha256 %s\n", r.ID, r.PayloadSHA256)
	}
}

// fail says what went wrong on stderr and returns the exit code.
func fail(stdio mcpkit.IO, code int, err error) int {
	fmt.Fprintln(stdio.Err, "dw-incidents:", err)
	return code
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return mcpkit.ExitToolError
	}
	return mcpkit.ExitOK
}

// authenticate proves the person is the named approver, with the token from --token-file or
// DW_APPROVER_TOKEN checked against its SHA-256 in the config; it returns the approvals service, or
// the exit code after saying what went wrong.
func authenticate(ctx context.Context, env *mcpkit.Env, as, tokenFile string, stdio mcpkit.IO) (*approvals.Service, int) {
	token, err := readToken(tokenFile, env)
	if err != nil {
		fmt.Fprintln(stdio.Err, "dw-incidents:", err)
		return nil, mcpkit.ExitUsage
	}
	svc, err := approvalService(ctx, env)
	if err != nil {
		fmt.Fprintln(stdio.Err, "dw-incidents:", err)
		return nil, mcpkit.ExitUsage
	}
	if err := svc.Authenticate(as, token); err != nil {
		fmt.Fprintf(stdio.Err, "dw-incidents: %v: %v\n", approvals.ErrNotAuthorized, err)
		return nil, mcpkit.ExitToolError
	}
	return svc, mcpkit.ExitOK
}

const statusUsage = `usage: dw-incidents status ID acknowledged|investigating|mitigated|false_positive|expected --as NAME --reason TEXT [--token-file FILE]
Records a person's judgement of an incident. false_positive and expected close it, and its failing
points stop counting in baselines; resolved comes only from verify_incident, when the checks pass.
The approver's token comes from DW_APPROVER_TOKEN or --token-file; its SHA-256 must match the config.
`

// statusCommand sets an incident's status as a person's judgement.
func statusCommand(ctx context.Context, env *mcpkit.Env, args []string, stdio mcpkit.IO) int {
	d, code := parseDecision(ctx, env, "status", statusUsage, "why (recorded on the incident's timeline)", true, incidents.CheckPersonStatus, args, stdio)
	if code != mcpkit.ExitOK {
		return code
	}
	s, err := incidentStore(ctx, env)
	if err != nil {
		return fail(stdio, mcpkit.ExitUsage, err)
	}
	inc, err := s.SetStatus(ctx, d.id, d.value, d.as, d.reason)
	if err != nil {
		return fail(stdio, mcpkit.ExitToolError, err)
	}
	fmt.Fprintf(stdio.Out, "incident #%d is %s, set by %s\n", inc.ID, inc.Status, d.as)
	return mcpkit.ExitOK
}

// decision is a person's command on one record: `NAME ID VALUE --as NAME [--reason TEXT] [--token-file F]`.
type decision struct {
	id     int64
	value  string
	as     string
	reason string
}

// parseDecision reads a decision's arguments and authenticates the person; on failure it has said
// what went wrong (the usage, or why the token was refused) and returns the exit code.
// valid, when set, checks the value before anyone is authenticated.
func parseDecision(ctx context.Context, env *mcpkit.Env, name, usage, reasonHelp string, reasonRequired bool, valid func(string) error, args []string, stdio mcpkit.IO) (decision, int) {
	id, rest, err := leadingID(args)
	if err != nil || id == 0 || len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		fmt.Fprint(stdio.Err, usage)
		return decision{}, mcpkit.ExitUsage
	}
	d := decision{id: id, value: rest[0]}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	as := fs.String("as", "", "your approver name, as in the config")
	reason := fs.String("reason", "", reasonHelp)
	tokenFile := fs.String("token-file", "", "file holding your approver token (default: $DW_APPROVER_TOKEN)")
	if fs.Parse(rest[1:]) != nil || fs.NArg() > 0 || *as == "" || (reasonRequired && strings.TrimSpace(*reason) == "") {
		fmt.Fprint(stdio.Err, usage)
		return decision{}, mcpkit.ExitUsage
	}
	d.as, d.reason = *as, *reason
	if valid != nil {
		if err := valid(d.value); err != nil {
			fmt.Fprintln(stdio.Err, "dw-incidents:", err)
			return decision{}, mcpkit.ExitUsage
		}
	}
	if _, code := authenticate(ctx, env, d.as, *tokenFile, stdio); code != mcpkit.ExitOK {
		return decision{}, code
	}
	return d, mcpkit.ExitOK
}
