package warehouse_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/sftest"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// The bulk read must say exactly what a per-table Resolve says about columns and primary keys.
func TestDescribeColumnsMatchesResolvePerTable(t *testing.T) {
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			rw, w := open(t)
			extra := []string{
				`CREATE TABLE pk2 (a INTEGER, b INTEGER NOT NULL, c TEXT, PRIMARY KEY (b, a))`,
				`CREATE VIEW v_usage AS SELECT usage_id, egress_bytes FROM usage_hourly`,
			}
			if name == "postgres" {
				extra = append(extra, `CREATE SCHEMA other`, `CREATE TABLE other.pk2 (z TEXT PRIMARY KEY)`,
					`ALTER TABLE usage_hourly DROP COLUMN account_id`)
			}
			for _, q := range extra {
				if _, err := rw.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			tables, err := w.ListTables(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			bulk, err := w.DescribeColumns(ctx, tables)
			if err != nil {
				t.Fatal(err)
			}
			if len(bulk) != len(tables) {
				t.Fatalf("%d results for %d tables", len(bulk), len(tables))
			}
			pks := map[string]string{}
			for i, tb := range tables {
				one, err := w.Resolve(ctx, quoted(tb.Ref()))
				if err != nil {
					t.Fatal(err)
				}
				if bulk[i].Ref() != tb.Ref() || len(bulk[i].Columns) == 0 || !reflect.DeepEqual(bulk[i].Columns, one.Columns) {
					t.Errorf("%s: bulk columns %+v, per table %+v", tb.Ref(), bulk[i].Columns, one.Columns)
				}
				if strings.Join(bulk[i].PrimaryKey, ",") != strings.Join(one.PrimaryKey, ",") {
					t.Errorf("%s: bulk primary key %v, per table %v", tb.Ref(), bulk[i].PrimaryKey, one.PrimaryKey)
				}
				pks[tb.Schema+"."+tb.Name] = strings.Join(bulk[i].PrimaryKey, ",")
			}
			schema := map[string]string{"sqlite": "main", "postgres": "public"}[name]
			if pks[schema+".pk2"] != "b,a" || pks[schema+`.Odd "Name".`] != `we"ird col` {
				t.Errorf("primary keys = %v", pks)
			}
			if name == "postgres" && pks["other.pk2"] != "z" {
				t.Errorf("same-named table in another schema: %v", pks)
			}
			// A subset reads only what it names.
			sub, err := w.DescribeColumns(ctx, tables[len(tables)-1:])
			if err != nil || len(sub) != 1 || !reflect.DeepEqual(sub[0].Columns, bulk[len(bulk)-1].Columns) {
				t.Errorf("subset = %+v, %v", sub, err)
			}
			// Hostile names are values or validated, never SQL.
			if _, err := w.DescribeColumns(ctx, []warehouse.Table{{Schema: schema, Name: "x\x00y"}}); err == nil {
				t.Error("a control character in a name was accepted")
			}
			got, err := w.DescribeColumns(ctx, []warehouse.Table{{Database: tables[0].Database, Schema: schema, Name: `usage_hourly') OR 1=1 --`}})
			if err != nil || len(got) != 1 || len(got[0].Columns) != 0 {
				t.Errorf("injection-shaped name: %+v, %v", got, err)
			}
		})
	}
}

func quoted(r warehouse.TableRef) string {
	var parts []string
	for _, p := range []string{r.Database, r.Schema, r.Name} {
		if p != "" {
			parts = append(parts, `"`+strings.ReplaceAll(p, `"`, `""`)+`"`)
		}
	}
	return strings.Join(parts, ".")
}

// Snowflake: one COLUMNS query per schema, the database quoted exactly, schema and names bound.
func TestDescribeColumnsSnowflakeSQL(t *testing.T) {
	sf := sftest.Start(t, func(q sftest.Query) sftest.Result {
		if strings.Contains(q.SQL, ".COLUMNS") {
			res := sftest.Result{Columns: []sftest.Column{{Name: "TABLE_CATALOG", Type: "text"}, {Name: "TABLE_SCHEMA", Type: "text"},
				{Name: "TABLE_NAME", Type: "text"}, {Name: "COLUMN_NAME", Type: "text"}, {Name: "DATA_TYPE", Type: "text"},
				{Name: "IS_NULLABLE", Type: "text"}, {Name: "ORDINAL_POSITION", Type: "fixed"}}}
			if q.Bindings["1"].Value == "USAGE" {
				res.Rows = [][]any{{"ANALYTICS", "USAGE", "USAGE_HOURLY", "USAGE_ID", "TEXT", "NO", 1},
					{"ANALYTICS", "USAGE", "USAGE_HOURLY", "EGRESS_BYTES", "NUMBER", "YES", 2},
					{"ANALYTICS", "USAGE", "V_USAGE", "USAGE_ID", "TEXT", "YES", 1}}
			} else {
				res.Rows = [][]any{{"ANALYTICS", "RAW", "Api Usage", "payload", "VARIANT", "YES", 1}}
			}
			return res
		}
		return sftest.Result{ErrCode: "001003", ErrMsg: "unexpected: " + q.SQL}
	})
	w, err := warehouse.Connect(&config.Warehouse{Engine: "snowflake", DSN: sf.DSN(), StatementTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tables := []warehouse.Table{{Database: "ANALYTICS", Schema: "USAGE", Name: "USAGE_HOURLY"}, {Database: "ANALYTICS", Schema: "USAGE", Name: "V_USAGE"},
		{Database: "ANALYTICS", Schema: "RAW", Name: "Api Usage"}}
	got, err := w.DescribeColumns(context.Background(), tables)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[0].Columns) != 2 || got[0].Columns[0].Nullable || !got[0].Columns[1].Nullable || got[0].Columns[1].Type != "NUMBER" ||
		len(got[1].Columns) != 1 || len(got[2].Columns) != 1 || got[2].Columns[0].Name != "payload" || len(got[0].PrimaryKey) != 0 {
		t.Fatalf("describe = %+v", got)
	}
	q := sf.Received()
	if len(q) != 2 {
		t.Fatalf("%d queries, want one per schema: %+v", len(q), q)
	}
	const golden = `SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, IS_NULLABLE, ORDINAL_POSITION FROM "ANALYTICS".INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (?, ?) ORDER BY TABLE_NAME, ORDINAL_POSITION`
	if q[0].SQL != golden {
		t.Errorf("SQL =\n%s\nwant\n%s", q[0].SQL, golden)
	}
	if q[0].Bindings["1"].Value != "USAGE" || q[0].Bindings["2"].Value != "USAGE_HOURLY" || q[0].Bindings["3"].Value != "V_USAGE" {
		t.Errorf("bindings = %+v", q[0].Bindings)
	}
	if !strings.Contains(q[1].SQL, "TABLE_NAME IN (?) ") || q[1].Bindings["2"].Value != "Api Usage" {
		t.Errorf("second schema = %+v", q[1])
	}
	if _, err := w.DescribeColumns(context.Background(), []warehouse.Table{{Database: "A\x01", Schema: "S", Name: "T"}}); err == nil {
		t.Error("a control character in a database name was accepted")
	}
}

// BenchmarkDescribeColumns compares the bulk read with one Resolve per table on SQLite
// (DW_BENCH_TABLES tables of 12 columns, default 300).
func BenchmarkDescribeColumns(b *testing.B) {
	n := 300
	if s := os.Getenv("DW_BENCH_TABLES"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			n = v
		}
	}
	path := filepath.Join(b.TempDir(), "wh.db")
	rw, err := sql.Open("sqlite3", path)
	if err != nil {
		b.Fatal(err)
	}
	var ddl strings.Builder
	for i := range n {
		fmt.Fprintf(&ddl, "CREATE TABLE t%04d (id INTEGER PRIMARY KEY", i)
		for c := range 11 {
			fmt.Fprintf(&ddl, ", c%02d TEXT", c)
		}
		ddl.WriteString(");\n")
	}
	if _, err := rw.Exec(ddl.String()); err != nil {
		b.Fatal(err)
	}
	rw.Close()
	w, err := warehouse.Connect(&config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	tables, err := w.ListTables(ctx, "")
	if err != nil || len(tables) != n {
		b.Fatalf("%d tables, %v", len(tables), err)
	}
	b.Run(fmt.Sprintf("bulk/tables=%d", n), func(b *testing.B) {
		for b.Loop() {
			if _, err := w.DescribeColumns(ctx, tables); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("per_table/tables=%d", n), func(b *testing.B) {
		for b.Loop() {
			for _, t := range tables {
				if _, err := w.Resolve(ctx, quoted(t.Ref())); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
