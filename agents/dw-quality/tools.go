package main

import (
	"github.com/dataworkers/dw/agents/internal/sharedtools"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

const instructions = "Quality checks pushed down into the warehouse (null rate, volume, uniqueness, freshness, custom SQL), each compared with a baseline from its own history. Start with check_connections."

func tools(env *mcpkit.Env) []mcpkit.Tool {
	return []mcpkit.Tool{
		sharedtools.CheckConnections(env, connections.Warehouse),
	}
}
