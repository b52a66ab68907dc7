package quality

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzColumnSpecs feeds the parsers of what a request or monitor names (column metrics,
// thresholds) and of the schema snapshot kept in the graph: bad input is an error, never a panic,
// and a snapshot compared with itself never changes.
func FuzzColumnSpecs(f *testing.F) {
	f.Add("zero_rate,mean", "zero_rate", 0.0, 1.0, `[{"name":"a","type":"INT","nullable":true}]`)
	f.Add("MEAN , distinct,", "null_rate", 2.0, 1.0, `[{"name":"a"},{"name":"a","type":"x"}]`)
	f.Add("median", "", -1.0, -2.0, `{"name":1}`)
	f.Fuzz(func(t *testing.T, metrics, metric string, lo, hi float64, snapshot string) {
		if ms, err := ParseColumnMetrics(strings.Split(metrics, ",")); err == nil {
			for _, m := range ms {
				if _, ok := needs[m]; !ok && m != Distinct {
					t.Fatalf("accepted %q with no aggregates", m)
				}
			}
		}
		_ = ValidateThresholds([]Threshold{{Metric: metric, Min: &lo, Max: &hi}, {Metric: metric}})
		var snap []snapColumn
		if json.Unmarshal([]byte(snapshot), &snap) == nil {
			if ch := diffColumns(snap, snap); len(ch) != 0 && !hasDuplicateNames(snap) {
				t.Fatalf("a snapshot differs from itself: %+v", ch)
			}
			_ = diffColumns(snap, nil)
			_ = diffColumns(nil, snap)
		}
	})
}

func hasDuplicateNames(cols []snapColumn) bool {
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c.Name] {
			return true
		}
		seen[c.Name] = true
	}
	return false
}
