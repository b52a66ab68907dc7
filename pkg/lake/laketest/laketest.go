// Package laketest writes real Iceberg tables with iceberg-go for tests (through lakewrite): a SQL
// catalog on SQLite over a local warehouse directory, and a table that grows over several
// snapshots, changes schema and mixes data files with and without column metrics.
package laketest

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/lake/lakewrite"
)

// Config is a sql catalog (SQLite) over a warehouse directory in dir, with namespace ns.
func Config(dir, ns string) *config.Lake { return lakewrite.Config(dir, ns) }

// The field makers of lakewrite, for tests.
var (
	Long   = lakewrite.Long
	Double = lakewrite.Double
	String = lakewrite.String
)

// Open opens the lake of cfg and closes it with the test.
func Open(t testing.TB, cfg *config.Lake) *lake.Lake {
	t.Helper()
	if cfg.Catalog == "sql" {
		Writer(t, cfg) // creates the catalog database the lake reads
	}
	l, err := lake.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Writer opens, with iceberg-go, the sql catalog the lake reads, to write tables into it (the
// lake itself only reads). It is closed with the test.
func Writer(t testing.TB, cfg *config.Lake) catalog.Catalog {
	t.Helper()
	cat, err := lakewrite.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lakewrite.Close(cat) })
	return cat
}

// Table is a table being written by a test; each step fails the test on error.
type Table struct {
	t testing.TB
	w *lakewrite.Table
}

// Create makes namespace ns (if new) and table name with the given fields (all optional).
func Create(t testing.TB, l *lake.Lake, ns, name string, fields ...iceberg.NestedField) *Table {
	t.Helper()
	return CreateIn(t, Writer(t, l.Config()), ns, name, fields...)
}

// CreateIn is Create in any iceberg-go catalog (a hadoop warehouse, say).
func CreateIn(t testing.TB, cat catalog.Catalog, ns, name string, fields ...iceberg.NestedField) *Table {
	t.Helper()
	w, err := lakewrite.Create(context.Background(), cat, ns, name, fields...)
	if err != nil {
		t.Fatal(err)
	}
	return &Table{t: t, w: w}
}

// Append commits one snapshot holding rows given as a JSON array of objects in the current schema.
func (w *Table) Append(rowsJSON string) {
	w.t.Helper()
	if err := w.w.AppendJSON(context.Background(), rowsJSON); err != nil {
		w.t.Fatal(err)
	}
}

// DropColumn removes a field from the schema (the next snapshot is written without it).
func (w *Table) DropColumn(name string) {
	w.t.Helper()
	if err := w.w.DropColumn(context.Background(), name); err != nil {
		w.t.Fatal(err)
	}
}

// ColumnMetrics turns manifest column metrics on ("counts", "full") or off ("none") for the data
// files written next.
func (w *Table) ColumnMetrics(mode string) {
	w.t.Helper()
	if err := w.w.ColumnMetrics(context.Background(), mode); err != nil {
		w.t.Fatal(err)
	}
}
