package lake

import (
	"context"
	"fmt"
	"time"
)

// ColumnStats are one column's counts over the data files of a window.
type ColumnStats struct {
	Column  string `json:"column"`
	FieldID int    `json:"field_id"`
	// Values counts every value, nulls included; Nulls the null ones.
	Values int64 `json:"values"`
	Nulls  int64 `json:"nulls"`
	// Min and Max are the smallest and largest non-null value of a numeric column (int, long,
	// float, double, decimal), Zeros and Negatives how many values are 0 and below 0; all nil
	// unless asked for (Want.Values) on a numeric column, Min and Max also when no value was seen.
	Min       *float64 `json:"min,omitempty"`
	Max       *float64 `json:"max,omitempty"`
	Zeros     *int64   `json:"zeros,omitempty"`
	Negatives *int64   `json:"negatives,omitempty"`
	// FromMetadata files answered from manifest metrics (counts, and bounds when values were asked
	// for); Scanned files lacked one and were read.
	FromMetadata int `json:"from_metadata"`
	Scanned      int `json:"scanned"`
}

// NonNull is how many values are not null.
func (c ColumnStats) NonNull() int64 { return c.Values - c.Nulls }

func (c *ColumnStats) addValue(v float64) {
	if c.Min == nil || v < *c.Min {
		c.Min = &v
	}
	if c.Max == nil || v > *c.Max {
		c.Max = &v
	}
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

// Want says what Stats measures.
type Want struct {
	// Columns to measure (default: every top-level primitive column of the current schema).
	Columns []string
	// Values asks, for numeric columns, for min, max, zeros and negatives too.
	Values bool
}

// Stats counts records and, per column, values and nulls (and, when asked, min, max, zeros and
// negatives) over the live data files committed in [since, until). Manifest metrics answer where
// they exist: counts from value and null counts, min and max from the lower and upper bounds,
// zeros and negatives where the bounds settle them (lower = upper = 0: every value is zero;
// lower > 0: none is zero or negative). A file whose metrics do not answer a column is read, that
// column only, and the read answers all of that column's measures for that file.
func Stats(ctx context.Context, t *Table, since, until time.Time, want Want) (WindowStats, error) {
	ws := WindowStats{Since: since, Until: until}
	schema := t.Schema()
	var fields []Field
	if len(want.Columns) == 0 {
		for _, f := range schema.Fields() {
			if !f.Type.Nested() {
				fields = append(fields, f)
			}
		}
	} else {
		for _, c := range want.Columns {
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
	values := make([]bool, len(fields))
	for i, f := range fields {
		stats[i] = ColumnStats{Column: f.Name, FieldID: f.ID}
		if values[i] = want.Values && isNumeric(f.Type); values[i] {
			stats[i].Zeros, stats[i].Negatives = new(int64), new(int64)
		}
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
	lacking := map[string][]int{} // file path → indexes into stats its metrics do not answer
	for _, m := range manifests {
		if m.Content != contentData {
			continue
		}
		entries, err := readManifest(fs, m)
		if err != nil {
			return ws, fmt.Errorf("lake: read manifest %s: %w", m.Path, err)
		}
		for _, e := range entries {
			at, ok := committed[e.Snapshot]
			if !ok || at.Before(since) || !at.Before(until) {
				continue
			}
			df := &e.DataFile
			if df.Content != contentData {
				continue
			}
			ws.Files++
			ws.Records += df.RecordCount
			fm := newFileMetrics(df)
			for i, f := range fields {
				if fromMetadata(fm, f, &stats[i], values[i]) {
					stats[i].FromMetadata++
					continue
				}
				lacking[df.FilePath] = append(lacking[df.FilePath], i)
			}
		}
	}
	if len(lacking) == 0 {
		return ws, nil
	}
	if err := scanLacking(ctx, t, fields, stats, values, lacking); err != nil {
		return ws, err
	}
	ws.ScannedFiles = len(lacking)
	return ws, nil
}

// fromMetadata adds one data file's metrics for field f to st, if they answer every measure
// asked for; otherwise it leaves st alone and reports false.
func fromMetadata(df fileMetrics, f Field, st *ColumnStats, values bool) bool {
	v, hasV := df.values[f.ID]
	n, hasN := df.nulls[f.ID]
	if !hasV || !hasN {
		return false
	}
	var lo, hi float64
	nonNull := v - n
	if f.Type.Name == "float" || f.Type.Name == "double" {
		// NaNs are values but neither zero nor negative (as a scan counts them): what the bounds
		// settle is the rest, so a file that does not say how many NaNs it holds is scanned.
		nan, hasNaN := df.nans[f.ID]
		if values && !hasNaN {
			return false
		}
		nonNull -= nan
	}
	if values && nonNull > 0 {
		var okLo, okHi bool
		lo, okLo = decodeBound(f.Type, df.lower[f.ID])
		hi, okHi = decodeBound(f.Type, df.upper[f.ID])
		if !okLo || !okHi {
			return false
		}
		// The bounds settle zeros and negatives only when every value is 0, or all lie on one
		// side of 0.
		if settled := lo == 0 && hi == 0 || lo > 0 || hi < 0; !settled {
			return false
		}
	}
	st.Values += v
	st.Nulls += n
	if values && nonNull > 0 {
		st.addValue(lo)
		st.addValue(hi)
		if lo == 0 && hi == 0 {
			*st.Zeros += nonNull
		}
		if hi < 0 {
			*st.Negatives += nonNull
		}
	}
	return true
}

// fileMetrics are one data file's column metrics by field id.
type fileMetrics struct {
	values, nulls, nans map[int]int64
	lower, upper        map[int][]byte
}

func newFileMetrics(df *dataFile) fileMetrics {
	return fileMetrics{values: counts(df.ValueCounts), nulls: counts(df.NullValueCounts), nans: counts(df.NaNValueCounts),
		lower: bounds(df.LowerBounds), upper: bounds(df.UpperBounds)}
}
