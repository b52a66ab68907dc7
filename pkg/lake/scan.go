package lake

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	iceio "github.com/apache/iceberg-go/io"
)

// scanLacking reads, file by file, only the columns a file has no metrics for, and counts them.
// Columns are matched by Iceberg field id (written into the Parquet schema), else by name; a
// column the file does not have (added after it was written) is null in each of its rows.
func scanLacking(ctx context.Context, t *Table, fields []Field, stats []ColumnStats, values []bool, lacking map[string][]int) error {
	fs, err := t.FS(ctx)
	if err != nil {
		return fmt.Errorf("lake: open the file IO of %s: %w", t.name(), err)
	}
	for path, idx := range lacking {
		if err := scanFile(ctx, fs, path, fields, stats, values, idx); err != nil {
			return fmt.Errorf("lake: read %s: %w", path, err)
		}
	}
	return nil
}

func scanFile(ctx context.Context, fs iceio.IO, path string, fields []Field, stats []ColumnStats, values []bool, idx []int) error {
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return err
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	rows := pr.NumRows()
	groups := make([]int, pr.NumRowGroups())
	for g := range groups {
		groups[g] = g
	}
	root := pr.MetaData().Schema.Root()
	for _, i := range idx {
		col := -1
		for j := 0; j < root.NumFields(); j++ {
			n := root.Field(j)
			if (n.FieldID() >= 0 && int(n.FieldID()) == fields[i].ID) || (n.FieldID() < 0 && n.Name() == fields[i].Name) {
				col = j
				break
			}
		}
		stats[i].Scanned++
		if col < 0 {
			stats[i].Values += rows
			stats[i].Nulls += rows
			continue
		}
		cr, err := fr.GetColumn(ctx, col)
		if err != nil {
			return fmt.Errorf("column %s: %w", fields[i].Name, err)
		}
		chunked, err := fr.ReadColumn(groups, cr)
		if err != nil {
			return fmt.Errorf("column %s: %w", fields[i].Name, err)
		}
		for _, c := range chunked.Chunks() {
			stats[i].Values += int64(c.Len())
			stats[i].Nulls += int64(c.NullN())
			if values[i] {
				addNumbers(&stats[i], c)
			}
		}
		chunked.Release()
	}
	return nil
}

// addNumbers adds a numeric array's non-null values to min, max, zeros and negatives.
func addNumbers(st *ColumnStats, a arrow.Array) {
	var at func(int) float64
	switch x := a.(type) {
	case *array.Int32:
		at = func(j int) float64 { return float64(x.Value(j)) }
	case *array.Int64:
		at = func(j int) float64 { return float64(x.Value(j)) }
	case *array.Float32:
		at = func(j int) float64 { return float64(x.Value(j)) }
	case *array.Float64:
		at = x.Value
	case *array.Decimal128:
		scale := x.DataType().(*arrow.Decimal128Type).Scale
		at = func(j int) float64 { return x.Value(j).ToFloat64(scale) }
	default:
		return
	}
	for j := 0; j < a.Len(); j++ {
		if a.IsNull(j) {
			continue
		}
		v := at(j)
		if math.IsNaN(v) {
			continue
		}
		st.addValue(v)
		switch {
		case v == 0:
			*st.Zeros++
		case v < 0:
			*st.Negatives++
		}
	}
}
