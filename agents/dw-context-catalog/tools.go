package main

import (
	"github.com/dataworkers/dw/agents/internal/sharedtools"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/connections/lakeprobe"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

const instructions = "The context graph of assets across Kafka, Schema Registry, Flink, Tableflow, the warehouse, dbt, BI and orchestrators, with column-level lineage. " +
	"Load it with import_dbt_manifest, import_flink_statement, import_openlineage_events and register_assets; find assets with search_catalog; " +
	"answer 'what reads this field and what does it feed?' with trace_cross_platform_lineage and blast_radius_analysis. " +
	"Start with check_connections to see which sources can be synced."

func tools(env *mcpkit.Env) []mcpkit.Tool {
	d := &deps{env: env}
	return []mcpkit.Tool{
		sharedtools.CheckConnections(env, []connections.Probe{lakeprobe.Probe}, connections.Kafka, connections.SchemaRegistry, connections.Connect, connections.Flink, connections.Tableflow, connections.Warehouse, connections.DBTManifest, connections.CatalogFiles, connections.Lake),
		searchCatalog(d),
		getAsset(d),
		traceLineage(d),
		blastRadius(d),
		importDBTManifest(d),
		importOpenLineage(d),
		importFlinkStatement(d),
		registerAssets(d),
		syncCatalog(env), // sync.go, owned by the connectors engineer
	}
}
