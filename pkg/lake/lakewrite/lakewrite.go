// Package lakewrite writes Iceberg tables with iceberg-go into a SQL catalog (SQLite) over a
// local warehouse: the demo's lake and the tests' tables. It is apart from pkg/lake, which only
// reads, because iceberg-go's table package it needs links the Substrait initialiser the agents
// keep off their start path; only the demo command and tests import it.
package lakewrite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/sql" // registers "sql"
	"github.com/apache/iceberg-go/table"
	_ "github.com/mattn/go-sqlite3" // the sql catalog's SQLite driver

	"github.com/dataworkers/dw/pkg/config"
)

// Config is a sql catalog (SQLite file catalog.db) over the warehouse directory dir/warehouse,
// Tableflow's tables in namespace ns.
func Config(dir, ns string) *config.Lake {
	return &config.Lake{Catalog: "sql", URI: filepath.Join(dir, "catalog.db"), Warehouse: "file://" + filepath.Join(dir, "warehouse"), Namespace: ns}
}

// Open opens the sql catalog of cfg for writing, creating its database when new.
func Open(ctx context.Context, cfg *config.Lake) (catalog.Catalog, error) {
	if cfg == nil || cfg.Catalog != "sql" {
		return nil, fmt.Errorf("lakewrite: only a sql catalog is written")
	}
	if err := os.MkdirAll(filepath.Dir(cfg.URI), 0o700); err != nil {
		return nil, fmt.Errorf("lakewrite: %w", err)
	}
	cat, err := catalog.Load(ctx, "dw", iceberg.Properties{"type": "sql", "uri": cfg.URI,
		"sql.driver": "sqlite3", "sql.dialect": "sqlite", "warehouse": cfg.Warehouse})
	if err != nil {
		return nil, fmt.Errorf("lakewrite: open the sql catalog %s: %w", cfg.URI, err)
	}
	return cat, nil
}

// Close closes a catalog Open returned.
func Close(cat catalog.Catalog) error {
	if c, ok := cat.(catalog.Closer); ok {
		return c.Close()
	}
	return nil
}

// Table is a table being written.
type Table struct {
	tbl *table.Table
}

// Create makes namespace ns (if new) and table name with the given fields.
func Create(ctx context.Context, cat catalog.Catalog, ns, name string, fields ...iceberg.NestedField) (*Table, error) {
	if ok, _ := cat.CheckNamespaceExists(ctx, table.Identifier{ns}); !ok {
		if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
			return nil, fmt.Errorf("lakewrite: create namespace %s: %w", ns, err)
		}
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, iceberg.NewSchema(0, fields...))
	if err != nil {
		return nil, fmt.Errorf("lakewrite: create %s.%s: %w", ns, name, err)
	}
	return &Table{tbl: tbl}, nil
}

// AppendJSON commits one snapshot holding rows given as a JSON array of objects in the current
// schema (timestamps as RFC 3339 strings).
func (w *Table) AppendJSON(ctx context.Context, rowsJSON string) error {
	sc, err := table.SchemaToArrowSchema(w.tbl.Schema(), nil, false, false)
	if err != nil {
		return err
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rowsJSON))
	if err != nil {
		return fmt.Errorf("lakewrite: rows: %w", err)
	}
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	tbl, err := w.tbl.AppendTable(ctx, at, 1024, nil)
	if err != nil {
		return fmt.Errorf("lakewrite: append to %s: %w", strings.Join(w.tbl.Identifier(), "."), err)
	}
	w.tbl = tbl
	return nil
}

// DropColumn removes a field from the schema (the next snapshot is written without it).
func (w *Table) DropColumn(ctx context.Context, name string) error {
	tx := w.tbl.NewTransaction()
	if err := tx.UpdateSchema(true, true).DeleteColumn([]string{name}).Commit(); err != nil {
		return err
	}
	return w.commit(ctx, tx)
}

// ColumnMetrics turns manifest column metrics on (mode "counts" or "full") or off ("none") for
// the data files written next.
func (w *Table) ColumnMetrics(ctx context.Context, mode string) error {
	tx := w.tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.DefaultWriteMetricsModeKey: mode}); err != nil {
		return err
	}
	return w.commit(ctx, tx)
}

func (w *Table) commit(ctx context.Context, tx *table.Transaction) error {
	tbl, err := tx.Commit(ctx)
	if err != nil {
		return fmt.Errorf("lakewrite: commit to %s: %w", strings.Join(w.tbl.Identifier(), "."), err)
	}
	w.tbl = tbl
	return nil
}

// Long is an optional long field.
func Long(id int, name string) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: iceberg.PrimitiveTypes.Int64}
}

// Double is an optional double field.
func Double(id int, name string) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: iceberg.PrimitiveTypes.Float64}
}

// String is an optional string field.
func String(id int, name string) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: iceberg.PrimitiveTypes.String}
}

// Timestamp is an optional timestamp (with time zone) field.
func Timestamp(id int, name string) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: iceberg.PrimitiveTypes.TimestampTz}
}
