// Package laketest writes real Iceberg tables with iceberg-go for tests: a SQL catalog on SQLite
// over a local warehouse directory, and a table that grows over several snapshots, changes schema
// and mixes data files with and without column metrics.
package laketest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/sql" // registers "sql"
	"github.com/apache/iceberg-go/table"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/lake"
)

// Config is a sql catalog (SQLite) over a warehouse directory in dir, with namespace ns.
func Config(dir, ns string) *config.Lake {
	return &config.Lake{Catalog: "sql", URI: filepath.Join(dir, "catalog.db"), Warehouse: "file://" + filepath.Join(dir, "warehouse"), Namespace: ns}
}

// Open opens the lake of cfg and closes it with the test.
func Open(t testing.TB, cfg *config.Lake) *lake.Lake {
	t.Helper()
	Writer(t, cfg) // creates the catalog database the lake reads
	l, err := lake.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Table is a table being written by a test.
type Table struct {
	t   testing.TB
	tbl *table.Table
}

// Writer opens, with iceberg-go, the sql catalog the lake reads, to write tables into it (the
// lake itself only reads). It is closed with the test.
func Writer(t testing.TB, cfg *config.Lake) catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load(context.Background(), "dw", iceberg.Properties{"type": "sql", "uri": cfg.URI,
		"sql.driver": "sqlite3", "sql.dialect": "sqlite", "warehouse": cfg.Warehouse})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cat.(catalog.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	return cat
}

// Create makes namespace ns (if new) and table name with the given fields (all optional).
func Create(t testing.TB, l *lake.Lake, ns, name string, fields ...iceberg.NestedField) *Table {
	t.Helper()
	return CreateIn(t, Writer(t, l.Config()), ns, name, fields...)
}

// CreateIn is Create in any iceberg-go catalog (a hadoop warehouse, say).
func CreateIn(t testing.TB, cat catalog.Catalog, ns, name string, fields ...iceberg.NestedField) *Table {
	t.Helper()
	ctx := context.Background()
	if ok, _ := cat.CheckNamespaceExists(ctx, table.Identifier{ns}); !ok {
		if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, iceberg.NewSchema(0, fields...))
	if err != nil {
		t.Fatal(err)
	}
	return &Table{t: t, tbl: tbl}
}

// Append commits one snapshot holding rows given as a JSON array of objects in the current schema.
func (w *Table) Append(rowsJSON string) {
	w.t.Helper()
	sc, err := table.SchemaToArrowSchema(w.tbl.Schema(), nil, false, false)
	if err != nil {
		w.t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rowsJSON))
	if err != nil {
		w.t.Fatal(err)
	}
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	tbl, err := w.tbl.AppendTable(context.Background(), at, 1024, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.tbl = tbl
}

// DropColumn removes a field from the schema (the next snapshot is written without it).
func (w *Table) DropColumn(name string) {
	w.t.Helper()
	tx := w.tbl.NewTransaction()
	if err := tx.UpdateSchema(true, true).DeleteColumn([]string{name}).Commit(); err != nil {
		w.t.Fatal(err)
	}
	w.commit(tx)
}

// ColumnMetrics turns manifest column metrics on (mode "counts" or "full") or off ("none") for
// the data files written next.
func (w *Table) ColumnMetrics(mode string) {
	w.t.Helper()
	tx := w.tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.DefaultWriteMetricsModeKey: mode}); err != nil {
		w.t.Fatal(err)
	}
	w.commit(tx)
}

func (w *Table) commit(tx *table.Transaction) {
	w.t.Helper()
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	w.tbl = tbl
}

// Long is an optional long field for Create.
func Long(id int, name string) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: iceberg.PrimitiveTypes.Int64}
}

// String is an optional string field.
func String(id int, name string) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: iceberg.PrimitiveTypes.String}
}

// Double is an optional double field.
func Double(id int, name string) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: iceberg.PrimitiveTypes.Float64}
}
