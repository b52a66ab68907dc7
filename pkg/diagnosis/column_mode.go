package diagnosis

import (
	"strings"

	"github.com/dataworkers/dw/pkg/quality"
)

// ModeColumn is the failure mode of the column check (zeros, negatives, sum, mean, min, max,
// spread, distinct, empty strings, lengths, true share of one column). Such a failure is about the
// values of one column exactly as a null spike is: a field removed upstream reads as zeros under
// proto3 rather than nulls, and a retyped or rescaled field moves the mean and the sum. So it is
// explained, traced and scoped the same way.
const ModeColumn = string(quality.Column)

// nullLike reports whether a failure mode is read like a null spike: one column's values.
func nullLike(mode string) bool { return mode == ModeNullRate || mode == ModeColumn }

// failingMetricFilter is the SQL condition (and its values) selecting the failing metric points of
// a mode: its one metric, any of the column check's metrics, or any metric when the mode has none.
func failingMetricFilter(mode, want string) (string, []any) {
	if mode == ModeColumn {
		metrics := quality.AllColumnMetrics()
		args := make([]any, len(metrics))
		for i, m := range metrics {
			args[i] = m
		}
		return "metric IN (?" + strings.Repeat(", ?", len(metrics)-1) + ")", args
	}
	if want == "" {
		return "1 = 1", nil
	}
	// Each case is its own condition, never `(? = '' OR metric = ?)`: SQLite cannot seek an index on
	// a term joined by OR to a bound value, and the read then scanned every point of the asset.
	return "metric = ?", []any{want}
}
