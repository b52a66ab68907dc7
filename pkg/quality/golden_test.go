package quality

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// goldenTable is usage_hourly as each engine's catalog describes it. On Snowflake the declared
// UNIQUE is informational, so the plan must still count duplicates.
func goldenTable(e warehouse.Engine) *warehouse.TableInfo {
	name := func(s string) string {
		if e == warehouse.Snowflake {
			b := []byte(s)
			for i, c := range b {
				if c >= 'a' && c <= 'z' {
					b[i] = c - 32
				}
			}
			return string(b)
		}
		return s
	}
	ti := &warehouse.TableInfo{Table: warehouse.Table{Schema: name("usage"), Name: name("usage_hourly"), Kind: "table"}}
	switch e {
	case warehouse.Snowflake:
		ti.Database = "ANALYTICS"
	case warehouse.Postgres:
		ti.Database = "dw"
	case warehouse.SQLite:
		ti.Schema = "main"
	}
	typ := map[warehouse.Engine][5]string{
		warehouse.SQLite:    {"TEXT", "INTEGER", "TIMESTAMP", "BIGINT", "BOOLEAN"},
		warehouse.Postgres:  {"text", "integer", "timestamp without time zone", "bigint", "boolean"},
		warehouse.Snowflake: {"TEXT", "NUMBER", "TIMESTAMP_NTZ", "NUMBER", "BOOLEAN"},
	}[e]
	ti.Columns = []warehouse.Column{
		{Name: name("usage_id"), Type: typ[0], Position: 1},
		{Name: name("account_id"), Type: typ[1], Nullable: true, Position: 2},
		{Name: name("hour"), Type: typ[2], Position: 3},
		{Name: name("egress_bytes"), Type: typ[3], Nullable: true, Position: 4},
		{Name: name("billable"), Type: typ[4], Nullable: true, Position: 5},
		{Name: name("loaded_at"), Type: typ[2], Position: 6},
	}
	if e != warehouse.Snowflake {
		ti.UniqueKeys = [][]string{{"usage_id"}}
		ti.IndexedColumns = []string{"usage_id"}
	}
	return ti
}

// TestPlanSQLGolden pins the SQL each dialect sends for the scenario's check: one pass for volume,
// hourly volume, null rates and the newest timestamp; a duplicate count only where no enforced
// constraint answers it; freshness from the pass where that saves a scan; and the custom rule
// wrapped as a bounded subquery; every column metric rides in the pass, and distinct counts (which
// do not add up across hour buckets) take one query, approximate on Snowflake. UPDATE_GOLDEN=true rewrites testdata/golden/.
func TestPlanSQLGolden(t *testing.T) {
	now := time.Date(2025, 12, 15, 15, 5, 0, 0, time.UTC)
	w, err := ParseWindow(WindowSpec{Window: "today", TimeZone: "UTC"}, now)
	if err != nil {
		t.Fatal(err)
	}
	// sqlite_hour_index: the same table with an index leading on hour, so the hourly counts come
	// from range counts over it and the newest hour from one seek.
	for _, name := range []string{"sqlite", "postgres", "snowflake", "sqlite_hour_index"} {
		e, indexed := warehouse.Engine(name), false
		if name == "sqlite_hour_index" {
			e, indexed = warehouse.SQLite, true
		}
		t.Run(name, func(t *testing.T) {
			d := warehouse.Dialect{Engine: e}
			ti := goldenTable(e)
			if indexed {
				ti.IndexedColumns = append(ti.IndexedColumns, "hour")
			}
			req := Request{
				Table: "usage_hourly", TimestampColumn: "hour", Window: w,
				KeyColumns: []string{"usage_id"},
				ColumnMetrics: func() []ColumnMetric {
					ms, _ := ParseColumnMetrics(AllColumnMetrics())
					return ms
				}(),
				Dimension:           &DimensionSpec{Column: "account_id", Measure: "egress_bytes"},
				Reconcile:           &ReconcileSpec{Upstream: "usage_raw", Column: "egress_bytes"},
				LoadTimestampColumn: "loaded_at",
				Assertions:          []Assertion{{Name: "egress_not_negative", SQL: "SELECT * FROM usage_hourly WHERE egress_bytes < 0 AND hour >= {{window_start}} AND hour < {{window_end}};"}},
			}
			tf := func(*warehouse.TableInfo, warehouse.Column, *freshUpTo) (storedTime, error) {
				return storedTime{format: warehouse.TimeTextSpace}, nil
			}
			p, err := buildPlan(d, ti, req, AllChecks, now, 20, tf)
			if err != nil {
				t.Fatal(err)
			}
			up := goldenTable(e)
			up.Name = strings.Replace(up.Name, "HOURLY", "RAW", 1)
			up.Name = strings.Replace(up.Name, "hourly", "raw", 1)
			if err := p.buildReconcile(up, tf); err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			emit := func(label string, q *query) {
				if q == nil {
					return
				}
				fmt.Fprintf(&b, "-- %s\n%s;\n", label, q.sql)
				for i, a := range q.args {
					fmt.Fprintf(&b, "--   arg %d: %v\n", i+1, a)
				}
			}
			fmt.Fprintf(&b, "-- hours: %s\n", p.hoursWhy)
			emit("profile", p.profile)
			emit("hourly counts", p.hourly)
			emit("distinct counts", p.distinct)
			emit("dimension", p.dim.grouped)
			emit("load lag", p.loadQ)
			emit("reconciliation upstream", p.recon.query)
			if !p.freshFromProfile {
				emit("freshness", p.fresh)
			} else {
				fmt.Fprintf(&b, "-- freshness: max(%s) of the profile\n", p.tsName)
			}
			if p.dup.inferred != "" {
				fmt.Fprintf(&b, "-- uniqueness: %s\n", p.dup.inferred)
			} else {
				emit("uniqueness", p.dup.count)
				emit("uniqueness sample", p.dup.sample)
			}
			for _, c := range p.custom {
				emit("custom "+c.name, c.count)
				emit("custom sample "+c.name, c.sample)
			}
			for _, col := range p.nullCols {
				if col.notNull {
					fmt.Fprintf(&b, "-- null_rate %s: declared NOT NULL\n", col.name)
				}
			}
			path := filepath.Join("testdata", "golden", "plan_"+name+".sql")
			if os.Getenv("UPDATE_GOLDEN") == "true" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (UPDATE_GOLDEN=true go test ./pkg/quality -run Golden creates it)", err)
			}
			if !bytes.Equal(want, b.Bytes()) {
				t.Errorf("%s SQL changed; if intended, rerun with UPDATE_GOLDEN=true\n--- got ---\n%s", e, b.String())
			}
		})
	}
}
