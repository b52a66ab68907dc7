package warehouse_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/internal/sftest"
	"github.com/dataworkers/dw/pkg/warehouse"
)

const viewsDDL = `CREATE TABLE orders (order_id TEXT, status TEXT, amount_cents BIGINT);
CREATE VIEW completed_revenue AS SELECT status, SUM(COALESCE(amount_cents, 0)) AS revenue FROM orders WHERE status = 'COMPLETED' GROUP BY status`

// viewDefs lists the warehouse and reads its view definitions.
func viewDefs(t *testing.T, w *warehouse.DB) (map[warehouse.TableRef]string, []warehouse.Table) {
	t.Helper()
	ctx := context.Background()
	tables, err := w.ListTables(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defs, hidden, err := w.ViewDefinitions(ctx, tables)
	if err != nil || len(hidden) != 0 {
		t.Fatalf("view definitions: %v (hidden %v)", err, hidden)
	}
	return defs, tables
}

// SQLite and PostgreSQL give each view's SQL as one CREATE VIEW statement; tables have none.
func TestViewDefinitionsOnSQLiteAndPostgres(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			var dsn, driver string
			if engine == "sqlite" {
				dsn, driver = filepath.Join(t.TempDir(), "wh.db"), "sqlite3"
			} else {
				dsn, driver = pgtest.Shared(t).NewDatabase(t), "pgx"
			}
			rw, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer rw.Close()
			for _, stmt := range strings.Split(viewsDDL, ";") {
				if _, err := rw.Exec(stmt); err != nil {
					t.Fatal(err)
				}
			}
			w, err := warehouse.Connect(&config.Warehouse{Engine: engine, DSN: dsn, StatementTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			defs, tables := viewDefs(t, w)
			if len(defs) != 1 {
				t.Fatalf("definitions %v of %+v", defs, tables)
			}
			for ref, def := range defs {
				low := strings.ToLower(def)
				if ref.Name != "completed_revenue" || !strings.HasPrefix(low, "create view") || !strings.Contains(low, "coalesce(") || !strings.Contains(low, "'completed'") {
					t.Errorf("%s: %s", ref, def)
				}
			}
		})
	}
}

// Snowflake's INFORMATION_SCHEMA.VIEWS gives the CREATE VIEW as written; a secure view the role
// does not own has no definition and is named as hidden. No query runs when no view is listed.
func TestViewDefinitionsOnSnowflake(t *testing.T) {
	sf := sftest.Start(t, func(q sftest.Query) sftest.Result {
		if strings.Contains(q.SQL, `"ANALYTICS".INFORMATION_SCHEMA.VIEWS`) {
			return sftest.Result{Columns: []sftest.Column{{Name: "TABLE_CATALOG", Type: "text"}, {Name: "TABLE_SCHEMA", Type: "text"},
				{Name: "TABLE_NAME", Type: "text"}, {Name: "VIEW_DEFINITION", Type: "text"}},
				Rows: [][]any{{"ANALYTICS", "MART", "COMPLETED_REVENUE", "create or replace view COMPLETED_REVENUE as select STATUS, sum(AMOUNT_CENTS) as REVENUE from RAW.ORDERS where STATUS = 'COMPLETED' group by STATUS"},
					{"ANALYTICS", "MART", "PAYOUTS_SECURE", nil}}}
		}
		return sftest.Result{ErrCode: "001003", ErrMsg: "unexpected: " + q.SQL}
	})
	w, err := warehouse.Connect(&config.Warehouse{Engine: "snowflake", DSN: sf.DSN(), StatementTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	tables := []warehouse.Table{{Database: "ANALYTICS", Schema: "RAW", Name: "ORDERS", Kind: "table"},
		{Database: "ANALYTICS", Schema: "MART", Name: "COMPLETED_REVENUE", Kind: "view"},
		{Database: "ANALYTICS", Schema: "MART", Name: "PAYOUTS_SECURE", Kind: "view"}}
	defs, hidden, err := w.ViewDefinitions(ctx, tables)
	if err != nil {
		t.Fatal(err)
	}
	if def := defs[tables[1].Ref()]; len(defs) != 1 || !strings.Contains(def, "where STATUS = 'COMPLETED'") {
		t.Errorf("definitions %v", defs)
	}
	if len(hidden) != 1 || hidden[0] != tables[2].Ref() {
		t.Errorf("hidden %v", hidden)
	}
	n := len(sf.Received())
	if _, _, err := w.ViewDefinitions(ctx, tables[:1]); err != nil || len(sf.Received()) != n {
		t.Errorf("no views listed, yet %d queries (%v)", len(sf.Received())-n, err)
	}
}
