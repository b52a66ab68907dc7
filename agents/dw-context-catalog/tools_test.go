package main

import (
	"testing"

	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

func TestToolSnapshots(t *testing.T) {
	mcpkittest.CheckSnapshots(t, tools(mcpkittest.Env(t, "dw-context-catalog")))
}

func TestToolSurfaceInvariants(t *testing.T) {
	mcpkittest.CheckInvariants(t, "dw-context-catalog", tools(mcpkittest.Env(t, "dw-context-catalog")))
}
