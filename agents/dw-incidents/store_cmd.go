package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"text/tabwriter"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/store"
)

const storeUsage = `usage:
  dw-incidents store copy [--from FILE] [--to postgres://…] [--replace]
Copies the local SQLite store (default: store.path) into an empty team store on PostgreSQL (default:
DW_STORE_URL or store.url; prefer DW_STORE_URL to keep the password off the command line), in one
transaction, then verifies the receipt chain there with this machine's receipts key. A target that
already holds data is refused unless --replace, which overwrites it.
`

// storeCommand moves a store between engines. It is a person's command, never an MCP tool.
func storeCommand(ctx context.Context, env *mcpkit.Env, args []string, stdio mcpkit.IO) int {
	if len(args) == 0 || args[0] != "copy" {
		fmt.Fprint(stdio.Err, storeUsage)
		return mcpkit.ExitUsage
	}
	fs := flag.NewFlagSet("store copy", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	from := fs.String("from", env.Config.Store.Path, "the SQLite store file to copy")
	to := fs.String("to", env.Config.Store.URL, "the PostgreSQL store URL to copy into")
	replace := fs.Bool("replace", false, "overwrite a target that already holds data")
	if fs.Parse(args[1:]) != nil || fs.NArg() > 0 {
		fmt.Fprint(stdio.Err, storeUsage)
		return mcpkit.ExitUsage
	}
	if *to == "" || !store.IsPostgresURL(*to) {
		return fail(stdio, mcpkit.ExitUsage, errors.New("store copy: name the team store with --to postgres://… or DW_STORE_URL"))
	}
	env.AddSecret(passwordOf(*to))
	if _, err := os.Stat(*from); err != nil {
		return fail(stdio, mcpkit.ExitUsage, fmt.Errorf("store copy: no local store at %s (set --from or store.path): %w", *from, err))
	}
	src, err := store.Open(ctx, *from, store.Options{BusyTimeout: env.Config.Store.BusyTimeout})
	if err != nil {
		return fail(stdio, mcpkit.ExitToolError, err)
	}
	defer src.Close()
	dst, err := store.Open(ctx, env.Config.Store.Path, store.Options{BusyTimeout: env.Config.Store.BusyTimeout, URL: *to})
	if err != nil {
		return fail(stdio, mcpkit.ExitToolError, errors.New(env.Redact(err.Error())))
	}
	defer dst.Close()
	counts, err := store.Copy(ctx, src, dst, store.CopyOptions{Replace: *replace})
	if err != nil {
		code := mcpkit.ExitToolError
		if errors.Is(err, store.ErrTargetNotEmpty) {
			code = mcpkit.ExitUsage
		}
		return fail(stdio, code, errors.New(env.Redact(err.Error())))
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "copied %s into %s\nTABLE\tROWS\n", src.Where(), dst.Where())
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d\n", c.Table, c.Rows)
	}
	tw.Flush()
	return verifyCopiedChain(ctx, env, src, dst, stdio)
}

// verifyCopiedChain walks the copied receipt chain with the key beside the local store: the team
// store is only as trustworthy as that check, and every machine needs the same key.
func verifyCopiedChain(ctx context.Context, env *mcpkit.Env, src, dst *store.Store, stdio mcpkit.IO) int {
	keyPath := receipts.KeyPath(src.Path())
	if _, err := os.Stat(keyPath); err != nil {
		fmt.Fprintf(stdio.Out, "receipts: no key at %s, so nothing was signed on this machine; the team store makes its own on first use\n", keyPath)
		return mcpkit.ExitOK
	}
	key, err := receipts.LoadOrCreateKey(keyPath)
	if err != nil {
		return fail(stdio, mcpkit.ExitToolError, err)
	}
	chain, err := receipts.Open(ctx, dst, key, env.Now)
	if err != nil {
		return fail(stdio, mcpkit.ExitToolError, err)
	}
	v, err := chain.Verify(ctx)
	if err != nil {
		return fail(stdio, mcpkit.ExitToolError, err)
	}
	if !v.OK {
		fmt.Fprintf(stdio.Out, "receipts: the copied chain does NOT verify: %+v\n", v.Problems)
		return mcpkit.ExitToolError
	}
	fmt.Fprintf(stdio.Out, "receipts: %d verified in the team store; give every machine's agents this same key (%s, mode 0600, in their DW_HOME)\n", v.Receipts, keyPath)
	return mcpkit.ExitOK
}

// passwordOf is the password in a store URL ("" when none), so it can be scrubbed from output.
func passwordOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	pw, _ := p.User.Password()
	if pw == "" {
		pw = p.Query().Get("password")
	}
	return pw
}
