package main

import (
	"context"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/mcpkit"
)

// TestConsoleHelpPrintsOneUsage: `console --help` is a request, not an error: one usage on stdout,
// exit 0; a bad flag prints the usage once on stderr and exits 2.
func TestConsoleHelpPrintsOneUsage(t *testing.T) {
	agent := mcpkit.Agent{Name: "dw-incidents", Tools: tools, Commands: humanCommands()}
	lookup := func(k string) (string, bool) {
		if k == "DW_HOME" {
			return t.TempDir(), true
		}
		return "", false
	}
	for _, c := range []struct {
		args []string
		code int
	}{{[]string{"console", "--help"}, mcpkit.ExitOK}, {[]string{"console", "-h"}, mcpkit.ExitOK}, {[]string{"console", "--port", "1"}, mcpkit.ExitUsage}} {
		var out, errb strings.Builder
		code := mcpkit.Run(context.Background(), agent, c.args, mcpkit.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, lookup)
		usage := out.String()
		if c.code != mcpkit.ExitOK {
			usage = errb.String()
		}
		if code != c.code || strings.Count(usage, "usage: dw-incidents console") != 1 || strings.Count(out.String()+errb.String(), "usage") != 1 {
			t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", c.args, code, out.String(), errb.String())
		}
	}
}
