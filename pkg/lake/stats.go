package lake

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
)

// ColumnStats are one column's counts over the data files of a window.
type ColumnStats struct {
	Column  string `json:"column"`
	FieldID int    `json:"field_id"`
	// Values counts every value, nulls included; Nulls the null ones.
	Values int64 `json:"values"`
	Nulls  int64 `json:"nulls"`
	// FromMetadata files answered from manifest metrics; Scanned files had none and were read.
	FromMetadata int `json:"from_metadata"`
	Scanned      int `json:"scanned"`
}

// NullRate is Nulls over Values (0 when there are none).
func (c ColumnStats) NullRate() float64 {
	if c.Values == 0 {
		return 0
	}
	return float64(c.Nulls) / float64(c.Values)
}

// WindowStats are the live data files committed in [Since, Until) and their column counts.
type WindowStats struct {
	Since   time.Time     `json:"since"`
	Until   time.Time     `json:"until"`
	Files   int           `json:"files"`
	Records int64         `json:"records"`
	Columns []ColumnStats `json:"columns"`
	// ScannedFiles were read because their manifest entry lacks a metric asked for.
	ScannedFiles int `json:"scanned_files"`
}

// Stats counts records and, per column (default: every top-level primitive column of the current
// schema), values and nulls over the live data files committed in [since, until). Manifest metrics
// answer where they exist; a file without them for a column is read (only that column).
func Stats(ctx context.Context, t *Table, since, until time.Time, columns []string) (WindowStats, error) {
	ws := WindowStats{Since: since, Until: until}
	schema := t.Schema()
	var fields []iceberg.NestedField
	if len(columns) == 0 {
		for _, f := range schema.Fields() {
			if _, nested := f.Type.(iceberg.NestedType); !nested {
				fields = append(fields, f)
			}
		}
	} else {
		for _, c := range columns {
			f, ok := schema.FindFieldByName(c)
			if !ok {
				return ws, fmt.Errorf("lake: column %q is not in the current schema of %s", c, t.name())
			}
			fields = append(fields, f)
		}
	}
	committed := map[int64]time.Time{}
	for _, l := range LoadHistory(t) {
		committed[l.SnapshotID] = l.CommittedAt
	}
	snap := t.CurrentSnapshot()
	stats := make([]ColumnStats, len(fields))
	for i, f := range fields {
		stats[i] = ColumnStats{Column: f.Name, FieldID: f.ID}
	}
	ws.Columns = stats
	if snap == nil {
		return ws, nil
	}
	fs, err := t.FS(ctx)
	if err != nil {
		return ws, fmt.Errorf("lake: open the file IO of %s: %w", t.name(), err)
	}
	manifests, err := readManifestList(fs, snap)
	if err != nil {
		return ws, fmt.Errorf("lake: read the manifest list of %s: %w", t.name(), err)
	}
	lacking := map[string][]int{} // file path → indexes into stats it has no metrics for
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return ws, fmt.Errorf("lake: read manifest %s: %w", m.FilePath(), err)
		}
		for _, e := range entries {
			at, ok := committed[e.SnapshotID()]
			if !ok || at.Before(since) || !at.Before(until) {
				continue
			}
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentData {
				continue
			}
			ws.Files++
			ws.Records += df.Count()
			vc, nc := df.ValueCounts(), df.NullValueCounts()
			for i, f := range fields {
				v, hasV := vc[f.ID]
				n, hasN := nc[f.ID]
				if hasV && hasN {
					stats[i].Values += v
					stats[i].Nulls += n
					stats[i].FromMetadata++
					continue
				}
				lacking[df.FilePath()] = append(lacking[df.FilePath()], i)
			}
		}
	}
	if len(lacking) == 0 {
		return ws, nil
	}
	if err := scanLacking(ctx, t, fields, stats, lacking); err != nil {
		return ws, err
	}
	ws.ScannedFiles = len(lacking)
	return ws, nil
}
