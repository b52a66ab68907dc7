package main

import (
	"github.com/dataworkers/dw/agents/internal/sharedtools"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

const instructions = "Schema Registry subjects and the downstream effect of a schema change: compatibility as the registry judges it, plus which readers a compatible change still breaks. Start with check_connections. " +
	"To review a change: diff_schema_versions, check_compatibility, then assess_impact; in CI use check_schema_change (fails when it blocks); to repair a breaking version use propose_schema_fix."

func tools(env *mcpkit.Env) []mcpkit.Tool {
	d := &deps{env: env}
	return []mcpkit.Tool{
		sharedtools.CheckConnections(env, nil, connections.SchemaRegistry, connections.Kafka),
		listSubjects(d),
		getSubject(d),
		diffSchemaVersions(d),
		checkCompatibility(d),
		assessImpact(d),
		checkSchemaChange(d),
		proposeSchemaFix(d),
		registerStreamSchema(d),
	}
}
