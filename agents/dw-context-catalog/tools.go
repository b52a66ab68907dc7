package main

import (
	"github.com/dataworkers/dw/agents/internal/sharedtools"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

const instructions = "The context graph of assets across Kafka, Schema Registry, Flink, Tableflow, the warehouse, dbt, BI and orchestrators, with column-level lineage. Start with check_connections to see which sources can be synced."

func tools(env *mcpkit.Env) []mcpkit.Tool {
	return []mcpkit.Tool{
		sharedtools.CheckConnections(env, connections.Kafka, connections.SchemaRegistry, connections.Connect, connections.Flink, connections.Tableflow, connections.Warehouse, connections.DBTManifest, connections.CatalogFiles),
	}
}
