package main

import (
	"github.com/dataworkers/dw/agents/internal/sharedtools"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

const instructions = "Live, read-only views of the systems a Confluent stream runs through: Kafka topics and lag, " +
	"Kafka Connect, Confluent Cloud Flink statements and Tableflow, and warehouse metadata. " +
	"Start with check_connections to see which backends are configured. sample_topic shows which schema " +
	"versions producers are writing and which fields arrive null."

func tools(env *mcpkit.Env) []mcpkit.Tool {
	return []mcpkit.Tool{
		sharedtools.CheckConnections(env, nil, connections.Kafka, connections.SchemaRegistry, connections.Connect,
			connections.Flink, connections.Tableflow, connections.Warehouse, connections.Prometheus, connections.ConfluentMetrics, connections.Datadog),
		listTopics(env),
		describeTopic(env),
		getConsumerLag(env),
		sampleTopic(env),
		listConnectors(env),
		getConnectorStatus(env),
		listFlinkStatements(env),
		getFlinkStatement(env),
		listTableflowTopics(env),
		listTables(env),
		describeTable(env),
	}
}
