package main

import (
	"testing"

	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

func TestToolSnapshots(t *testing.T) {
	mcpkittest.CheckSnapshots(t, tools(mcpkittest.Env(t, "dw-quality")))
}

func TestToolSurfaceInvariants(t *testing.T) {
	mcpkittest.CheckInvariants(t, "dw-quality", tools(mcpkittest.Env(t, "dw-quality")))
}
