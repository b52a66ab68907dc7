package main

import (
	"github.com/dataworkers/dw/agents/internal/sharedtools"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/connections/lakeprobe"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

const instructions = "Quality checks pushed down into the warehouse (null rate, volume, uniqueness, freshness and load lag, custom SQL; column metrics, dimensions, reconciliation and schema changes when asked), each compared with a baseline from its own history. " +
	"run_quality_check checks one table now; run_monitors runs the configured monitors that are due; get_check_history shows what earlier runs measured. Start with check_connections when a backend fails."

func tools(env *mcpkit.Env) []mcpkit.Tool {
	d := newDeps(env)
	return []mcpkit.Tool{
		sharedtools.CheckConnections(env, []connections.Probe{lakeprobe.Probe}, connections.Warehouse, connections.Lake),
		runQualityCheck(d),
		profileTable(d),
		runMonitors(d),
		getCheckHistory(d),
		listMonitors(d),
	}
}
