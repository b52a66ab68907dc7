package main

import (
	"testing"

	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

func TestToolSnapshots(t *testing.T) {
	mcpkittest.CheckSnapshots(t, tools(mcpkittest.Env(t, "dw-incidents")))
}

func TestToolSurfaceInvariants(t *testing.T) {
	mcpkittest.CheckInvariants(t, "dw-incidents", tools(mcpkittest.Env(t, "dw-incidents")))
}
