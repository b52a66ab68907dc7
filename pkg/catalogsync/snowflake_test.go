package catalogsync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/catalogsync"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/connect/connecttest"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/internal/sftest"
)

// snowflakeWarehouse serves a Snowflake account with tables ANALYTICS.RAW.RAW_API_USAGE,
// ANALYTICS.RAW."Orders" and ANALYTICS.USAGE.USAGE_HOURLY.
func snowflakeWarehouse(t *testing.T) *sftest.Server {
	tables := [][]any{{"ANALYTICS", "RAW", "Orders", "BASE TABLE", 5}, {"ANALYTICS", "RAW", "RAW_API_USAGE", "BASE TABLE", 10},
		{"ANALYTICS", "USAGE", "USAGE_HOURLY", "BASE TABLE", 24}}
	return sftest.Start(t, func(q sftest.Query) sftest.Result {
		switch {
		case strings.Contains(q.SQL, "INFORMATION_SCHEMA.TABLES"):
			return sftest.Result{Columns: []sftest.Column{{Name: "TABLE_CATALOG", Type: "text"}, {Name: "TABLE_SCHEMA", Type: "text"},
				{Name: "TABLE_NAME", Type: "text"}, {Name: "TABLE_TYPE", Type: "text"}, {Name: "ROW_COUNT", Type: "fixed"}}, Rows: tables}
		case strings.Contains(q.SQL, "INFORMATION_SCHEMA.COLUMNS"):
			res := sftest.Result{Columns: []sftest.Column{{Name: "TABLE_CATALOG", Type: "text"}, {Name: "TABLE_SCHEMA", Type: "text"},
				{Name: "TABLE_NAME", Type: "text"}, {Name: "COLUMN_NAME", Type: "text"}, {Name: "DATA_TYPE", Type: "text"},
				{Name: "IS_NULLABLE", Type: "text"}, {Name: "ORDINAL_POSITION", Type: "fixed"}}}
			for _, tb := range tables {
				if q.Bindings["1"].Value == tb[1] {
					res.Rows = append(res.Rows, []any{tb[0], tb[1], tb[2], "ID", "TEXT", "NO", 1}, []any{tb[0], tb[1], tb[2], "PAYLOAD", "VARIANT", "YES", 2})
				}
			}
			return res
		}
		return sftest.Result{ErrCode: "001003", ErrMsg: "unexpected: " + q.SQL}
	})
}

// The harvest reads columns in one query per schema, not one describe per table.
func TestWarehouseHarvestReadsColumnsInBulk(t *testing.T) {
	p := setup(t)
	sf := snowflakeWarehouse(t)
	p.cfg.Warehouse = &config.Warehouse{Engine: "snowflake", DSN: sf.DSN(), StatementTimeout: 5 * time.Second}
	rep := p.sync(t, catalogsync.SystemWarehouse)
	w := system(rep, catalogsync.SystemWarehouse)
	if w.Status != "synced" || w.Assets != 3 || w.Fields != 6 || len(w.Warnings) != 0 {
		t.Fatalf("warehouse = %+v", w)
	}
	var sqls []string
	for _, q := range sf.Received() {
		sqls = append(sqls, q.SQL)
	}
	// One list, then one COLUMNS read per schema (RAW, USAGE): 3 queries however many tables.
	if len(sqls) != 3 || strings.Count(strings.Join(sqls, "\n"), "INFORMATION_SCHEMA.COLUMNS") != 2 {
		t.Errorf("%d queries:\n%s", len(sqls), strings.Join(sqls, "\n"))
	}
	a, err := p.g.Get(context.Background(), graph.WarehouseURN("snowflake", "ANALYTICS", "RAW", `"Orders"`))
	if err != nil || len(a.Fields) != 2 {
		t.Errorf("Orders = %+v, %v", a, err)
	}
}

// A Snowflake sink's table is matched to the harvested Snowflake table (Snowflake case folding,
// quoted names kept); an unmatched one keeps the config's name and is warned about.
func TestSnowflakeSinkEdgesMatchHarvestedTables(t *testing.T) {
	p := setup(t)
	sf := snowflakeWarehouse(t)
	p.cfg.Warehouse = &config.Warehouse{Engine: "snowflake", DSN: sf.DSN(), StatementTimeout: 5 * time.Second}
	sink := func(name string, cfg map[string]string) {
		cfg["connector.class"] = "com.snowflake.kafka.connector.SnowflakeSinkConnector"
		p.connect.Set(connecttest.Connector{Name: name, Type: "sink", State: "RUNNING", WorkerID: "w1:8083", Config: cfg,
			Tasks: []connecttest.Task{{State: "RUNNING", WorkerID: "w1:8083"}}})
	}
	p.connect.Delete("raw-usage-snowflake-sink")
	// No database or schema in the config: only the table name, lower case.
	sink("bare", map[string]string{"topics": "api-usage", "snowflake.topic2table.map": "api-usage:raw_api_usage"})
	// A quoted mixed-case name is kept exactly.
	sink("quoted", map[string]string{"topics": "orders", "snowflake.topic2table.map": `orders:"Orders"`,
		"snowflake.database.name": "analytics", "snowflake.schema.name": "raw"})
	// Unquoted Orders folds to ORDERS, which does not exist: not linked to "Orders".
	sink("folded", map[string]string{"topics": "orders", "snowflake.topic2table.map": "orders:Orders",
		"snowflake.database.name": "ANALYTICS", "snowflake.schema.name": "RAW"})
	rep := p.sync(t, catalogsync.SystemWarehouse, catalogsync.SystemConnect)
	c := system(rep, catalogsync.SystemConnect)
	if c.Status != "synced" {
		t.Fatalf("connect = %+v", c)
	}
	writes := func(conn string) []string {
		l, err := p.g.Downstream(context.Background(), []graph.FieldRef{graph.URN("connect:connector/" + conn).Field("")}, 1)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for n := range reached(l) {
			if strings.HasPrefix(n, "warehouse:") && !strings.Contains(n, "#") {
				out = append(out, n)
			}
		}
		return out
	}
	if got := writes("bare"); len(got) != 1 || got[0] != "warehouse:snowflake/ANALYTICS.RAW.RAW_API_USAGE" {
		t.Errorf("bare name → %v", got)
	}
	if got := writes("quoted"); len(got) != 1 || got[0] != "warehouse:snowflake/ANALYTICS.RAW.Orders" {
		t.Errorf("quoted name → %v", got)
	}
	if got := writes("folded"); len(got) != 1 || got[0] != "warehouse:snowflake/ANALYTICS.RAW.ORDERS" {
		t.Errorf("folded name → %v", got)
	}
	warn := strings.Join(c.Warnings, "\n")
	if !strings.Contains(warn, "connector folded writes table ANALYTICS.RAW.Orders, which matches no harvested Snowflake table") ||
		strings.Contains(warn, "connector quoted") || strings.Contains(warn, "connector bare") {
		t.Errorf("warnings = %v", c.Warnings)
	}
	// Without a Snowflake warehouse the config's name stands, with one warning.
	p.cfg.Warehouse = nil
	p.clock = p.clock.Add(time.Hour)
	rep = p.sync(t, catalogsync.SystemConnect)
	if c := system(rep, catalogsync.SystemConnect); !strings.Contains(strings.Join(c.Warnings, "\n"), "Snowflake sink → table edges use the table names in the connector configs, unmatched") {
		t.Errorf("unharvested warnings = %v", c.Warnings)
	}
}
