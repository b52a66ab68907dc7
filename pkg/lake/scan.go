package lake

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
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
	rows := pr.NumRows()
	sch := pr.MetaData().Schema
	root := sch.Root()
	for _, i := range idx {
		if err := ctx.Err(); err != nil {
			return err
		}
		node, names, nullBelow := findParquetNode(root, fields[i])
		stats[i].Scanned++
		if node == nil {
			stats[i].Values += rows
			stats[i].Nulls += rows
			continue
		}
		// A row's value is null when the definition level of the column's first leaf does not
		// reach the field's own (the optional or repeated nodes from the root down to the field,
		// itself included: a nested field is null when it or any struct above it is). A repeated
		// leaf (inside a list or map) has several entries a row: only those at repetition level 0
		// start one.
		leaf := -1
		for c := 0; c < sch.NumColumns(); c++ {
			if p := sch.Column(c).ColumnPath(); len(p) >= len(names) && slices.Equal(p[:len(names)], names) {
				leaf = c
				break
			}
		}
		if leaf < 0 {
			return fmt.Errorf("column %s has no leaf column", fields[i].Name)
		}
		repeated := sch.Column(leaf).MaxRepetitionLevel() > 0
		count := func(def, rep []int16, n int) {
			for k := 0; k < n; k++ {
				if repeated && rep[k] != 0 {
					continue
				}
				stats[i].Values++
				if def[k] < nullBelow {
					stats[i].Nulls++
				}
			}
		}
		var add func(v float64)
		if values[i] {
			st := &stats[i]
			add = func(v float64) { addNumber(st, v) }
		}
		for g := 0; g < pr.NumRowGroups(); g++ {
			cr, err := pr.RowGroup(g).Column(leaf)
			if err != nil {
				return fmt.Errorf("column %s: %w", fields[i].Name, err)
			}
			if err := readColumn(cr, fields[i].Type, count, add); err != nil {
				return fmt.Errorf("column %s: %w", fields[i].Name, err)
			}
		}
	}
	return nil
}

// scanBatch is how many levels and values a column is read in at a time.
const scanBatch = 64 << 10

// batchReader is the ReadBatch every typed column chunk reader of arrow-go's parquet/file has.
type batchReader[T any] interface {
	HasNext() bool
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (total int64, valuesRead int, err error)
}

// readBatches reads a column chunk to its end, giving count each batch's levels and each each
// non-null value.
func readBatches[T any](r batchReader[T], count func(def, rep []int16, n int), each func(T)) error {
	vals := make([]T, scanBatch)
	def, rep := make([]int16, scanBatch), make([]int16, scanBatch)
	for r.HasNext() {
		total, n, err := r.ReadBatch(scanBatch, vals, def, rep)
		if err != nil {
			return err
		}
		if total == 0 {
			break
		}
		count(def, rep, int(total))
		if each != nil {
			for _, v := range vals[:n] {
				each(v)
			}
		}
	}
	return nil
}

// readColumn reads one column chunk's levels and, when add is set, hands it each non-null value of
// a numeric Iceberg type as a float64: ints, longs (an int column promoted to long keeps its int32
// files), floats and doubles as stored, decimals from their unscaled value (int32, int64, or
// big-endian two's complement bytes) and the Iceberg type's scale.
func readColumn(cr file.ColumnChunkReader, t Type, count func(def, rep []int16, n int), add func(float64)) error {
	var unscaled func(*big.Int)
	if add != nil && t.Name == "decimal" {
		unscaled = func(u *big.Int) { add(decimalFloat(u, t.Scale)) }
	}
	switch r := cr.(type) {
	case *file.Int32ColumnChunkReader:
		var each func(int32)
		switch {
		case unscaled != nil:
			each = func(v int32) { unscaled(big.NewInt(int64(v))) }
		case add != nil:
			each = func(v int32) { add(float64(v)) }
		}
		return readBatches(r, count, each)
	case *file.Int64ColumnChunkReader:
		var each func(int64)
		switch {
		case unscaled != nil:
			each = func(v int64) { unscaled(big.NewInt(v)) }
		case add != nil:
			each = func(v int64) { add(float64(v)) }
		}
		return readBatches(r, count, each)
	case *file.Float32ColumnChunkReader:
		var each func(float32)
		if add != nil {
			each = func(v float32) { add(float64(v)) }
		}
		return readBatches(r, count, each)
	case *file.Float64ColumnChunkReader:
		return readBatches(r, count, add)
	case *file.FixedLenByteArrayColumnChunkReader:
		var each func(parquet.FixedLenByteArray)
		if unscaled != nil {
			each = func(v parquet.FixedLenByteArray) { unscaled(twosComplement(v)) }
		}
		return readBatches(r, count, each)
	case *file.ByteArrayColumnChunkReader:
		var each func(parquet.ByteArray)
		if unscaled != nil {
			each = func(v parquet.ByteArray) { unscaled(twosComplement(v)) }
		}
		return readBatches(r, count, each)
	case *file.BooleanColumnChunkReader:
		return readBatches[bool](r, count, nil)
	case *file.Int96ColumnChunkReader:
		return readBatches[parquet.Int96](r, count, nil)
	}
	return fmt.Errorf("parquet column of physical type %s is not read", cr.Type())
}

// addNumber adds one non-null value to min, max, zeros and negatives (a NaN to none of them).
func addNumber(st *ColumnStats, v float64) {
	if math.IsNaN(v) {
		return
	}
	st.addValue(v)
	switch {
	case v == 0:
		*st.Zeros++
	case v < 0:
		*st.Negatives++
	}
}

// findParquetNode finds f in a Parquet file's schema: by field id anywhere in the tree (Iceberg
// writes every field's id, nested ones included), or, in a file written without ids, a top-level
// column by name. It returns the node, the names from the root to it and its definition level
// (the optional or repeated nodes on that path).
func findParquetNode(root *pqschema.GroupNode, f Field) (pqschema.Node, []string, int16) {
	var walk func(g *pqschema.GroupNode, names []string, def int16) (pqschema.Node, []string, int16)
	walk = func(g *pqschema.GroupNode, names []string, def int16) (pqschema.Node, []string, int16) {
		for j := 0; j < g.NumFields(); j++ {
			n := g.Field(j)
			d := def
			if n.RepetitionType() != parquet.Repetitions.Required {
				d++
			}
			path := append(slices.Clip(names), n.Name())
			if n.FieldID() >= 0 && int(n.FieldID()) == f.ID {
				return n, path, d
			}
			if sub, ok := n.(*pqschema.GroupNode); ok {
				if found, p, fd := walk(sub, path, d); found != nil {
					return found, p, fd
				}
			}
		}
		return nil, nil, 0
	}
	if n, p, d := walk(root, nil, 0); n != nil {
		return n, p, d
	}
	for j := 0; j < root.NumFields(); j++ {
		if n := root.Field(j); n.FieldID() < 0 && n.Name() == f.Name {
			var d int16
			if n.RepetitionType() != parquet.Repetitions.Required {
				d = 1
			}
			return n, []string{n.Name()}, d
		}
	}
	return nil, nil, 0
}
