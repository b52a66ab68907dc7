package warehouse_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/sftest"
	"github.com/dataworkers/dw/pkg/warehouse"
)

func TestSnowflakeCatalogThroughGosnowflake(t *testing.T) {
	sf := sftest.Start(t, func(q sftest.Query) sftest.Result {
		switch {
		case strings.Contains(q.SQL, `"ANALYTICS".INFORMATION_SCHEMA.TABLES`) || strings.Contains(q.SQL, "FROM INFORMATION_SCHEMA.TABLES"):
			res := sftest.Result{Columns: []sftest.Column{{Name: "TABLE_CATALOG", Type: "text"}, {Name: "TABLE_SCHEMA", Type: "text"},
				{Name: "TABLE_NAME", Type: "text"}, {Name: "TABLE_TYPE", Type: "text"}, {Name: "ROW_COUNT", Type: "fixed"}}}
			for _, r := range [][]any{{"ANALYTICS", "USAGE", "USAGE_HOURLY", "BASE TABLE", 24000}, {"ANALYTICS", "USAGE", "V_USAGE", "VIEW", nil}} {
				if name, ok := q.Bindings["2"]; !ok || strings.EqualFold(name.Value.(string), r[2].(string)) {
					res.Rows = append(res.Rows, r)
				}
			}
			return res
		case strings.Contains(q.SQL, `"ANALYTICS".INFORMATION_SCHEMA.COLUMNS`):
			return sftest.Result{Columns: []sftest.Column{{Name: "COLUMN_NAME", Type: "text"}, {Name: "DATA_TYPE", Type: "text"},
				{Name: "IS_NULLABLE", Type: "text"}, {Name: "ORDINAL_POSITION", Type: "fixed"}},
				Rows: [][]any{{"USAGE_ID", "TEXT", "NO", 1}, {"EGRESS_BYTES", "NUMBER", "YES", 2}}}
		}
		return sftest.Result{ErrCode: "001003", ErrMsg: "unexpected: " + q.SQL}
	})
	w, err := warehouse.Connect(&config.Warehouse{Engine: "snowflake", DSN: sf.DSN(), StatementTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tables, err := w.ListTables(context.Background(), "usage")
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 2 || tables[0].Kind != "table" || *tables[0].RowCount != 24000 || !tables[0].RowCountExact || tables[1].RowCount != nil {
		t.Fatalf("tables = %+v", tables)
	}
	ti, err := w.DescribeTable(context.Background(), "analytics.usage.usage_hourly")
	if err != nil {
		t.Fatal(err)
	}
	if ti.Database != "ANALYTICS" || len(ti.Columns) != 2 || ti.Columns[0].Nullable || !ti.Columns[1].Nullable || *ti.RowCount != 24000 || len(ti.UniqueKeys) != 0 {
		t.Errorf("describe = %+v", ti)
	}
	got := sf.Received()
	if b := got[0].Bindings["1"]; b.Value != "usage" {
		t.Errorf("schema not bound: %+v", got[0])
	}
	if !strings.Contains(got[1].SQL, `FROM "ANALYTICS".INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA <> 'INFORMATION_SCHEMA' AND UPPER(TABLE_SCHEMA) = UPPER(?) AND UPPER(TABLE_NAME) = UPPER(?)`) {
		t.Errorf("resolve SQL = %s", got[1].SQL)
	}
}
