package main

import (
	"github.com/dataworkers/dw/agents/internal/sharedtools"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

const instructions = "Schema Registry subjects and the downstream effect of a schema change: compatibility as the registry judges it, plus which readers a compatible change still breaks. Start with check_connections."

func tools(env *mcpkit.Env) []mcpkit.Tool {
	return []mcpkit.Tool{
		sharedtools.CheckConnections(env, connections.SchemaRegistry, connections.Kafka),
	}
}
