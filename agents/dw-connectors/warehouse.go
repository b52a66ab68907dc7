package main

import (
	"context"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/warehouse"
)

type listTablesParams struct {
	Schema string `json:"schema,omitempty" jsonschema:"Only this schema, e.g. SALES (default every schema the user can see)"`
}

type listTablesResult struct {
	Engine string            `json:"engine"`
	Tables []warehouse.Table `json:"tables"`
	Count  int               `json:"count"`
}

func listTables(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("list_tables",
		"List warehouse tables and views (schema, name, kind, and the engine's row count when it keeps one). "+
			"Use describe_table for one table's columns and keys.",
		func(ctx context.Context, p listTablesParams) (listTablesResult, error) {
			db, err := warehouse.Connect(env.Config.Warehouse)
			if err != nil {
				return listTablesResult{}, err
			}
			defer db.Close()
			ts, err := db.ListTables(ctx, p.Schema)
			if err != nil {
				return listTablesResult{}, err
			}
			if ts == nil {
				ts = []warehouse.Table{}
			}
			return listTablesResult{Engine: string(db.Dialect.Engine), Tables: ts, Count: len(ts)}, nil
		})
}

type describeTableParams struct {
	Table string `json:"table" jsonschema:"name, schema.name or database.schema.name, e.g. ANALYTICS.SALES.ORDERS; quote a part to keep its case"`
}

type describeTableResult struct {
	Engine string `json:"engine"`
	warehouse.TableInfo
}

func describeTable(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("describe_table",
		"Describe one warehouse table: exact names, columns (type, nullable, position), enforced primary and unique keys, "+
			"indexed columns and row count. Ambiguous names return the candidates.",
		func(ctx context.Context, p describeTableParams) (describeTableResult, error) {
			db, err := warehouse.Connect(env.Config.Warehouse)
			if err != nil {
				return describeTableResult{}, err
			}
			defer db.Close()
			ti, err := db.DescribeTable(ctx, p.Table)
			if err != nil {
				return describeTableResult{}, err
			}
			return describeTableResult{Engine: string(db.Dialect.Engine), TableInfo: *ti}, nil
		})
}
