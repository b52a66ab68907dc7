package main

import (
	"context"
	"time"

	"github.com/dataworkers/dw/pkg/catalogsync"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

type syncCatalogParams struct {
	Systems []string `json:"systems,omitempty" jsonschema:"Only these: warehouse, kafka, schema_registry, connect, flink, tableflow, lake, catalog_files (default every configured one; lake only when lake is configured)"`
}

// syncCatalog harvests the live systems into the context graph (pkg/catalogsync).
func syncCatalog(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Write("sync_catalog",
		"Harvest the running systems into the context graph: Kafka topics, Schema Registry subjects and fields, Connect "+
			"connectors and the tables they write, Flink statements (column lineage from their SQL, pinned to the schema "+
			"versions they read), Tableflow tables (and their Iceberg tables from the lake catalog), warehouse tables and columns and views (their SQL, with column lineage from it), and the catalog files. Re-running updates "+
			"in place and reports what was added, changed and marked stale; a backend that fails keeps its earlier assets.",
		func(ctx context.Context, p syncCatalogParams) (catalogsync.Report, error) {
			st, err := env.Store.Get(ctx)
			if err != nil {
				return catalogsync.Report{}, err
			}
			now := env.Now
			if now == nil {
				now = time.Now
			}
			s := &catalogsync.Syncer{Config: env.Config, Store: st, Graph: graph.New(st, now), Now: now}
			return s.Run(ctx, catalogsync.Options{Systems: p.Systems, Progress: func(done, total int, system string) {
				mcpkit.ReportProgress(ctx, float64(done), float64(total), "syncing "+system)
			}})
		})
}
