package main

import (
	"github.com/dataworkers/dw/agents/internal/sharedtools"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/connections/lakeprobe"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

const instructions = "Incidents from failed checks: evidence-based diagnosis, blast radius, proposals routed to a named approver, approved remediation and hash-chained receipts. No tool can approve, lift the stop or change autonomy. Start with check_connections."

func tools(env *mcpkit.Env) []mcpkit.Tool {
	return []mcpkit.Tool{
		sharedtools.CheckConnections(env, []connections.Probe{lakeprobe.Probe}, connections.SchemaRegistry, connections.Kafka, connections.Connect, connections.Flink, connections.Tableflow, connections.Airflow, connections.DBTCloud, connections.Slack, connections.Prometheus, connections.ConfluentMetrics, connections.Datadog, connections.Lake),
		openIncident(env),
		diagnoseIncident(env),
		getIncidentHistory(env),
		proposeRemediation(env),
		requestApproval(env),
		getApprovalStatus(env),
		remediate(env),
		getReceipt(env),
		verifyIncident(env),
		verifyReceipts(env),
	}
}
