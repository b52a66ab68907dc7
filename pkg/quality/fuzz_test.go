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

// The specs rebuilt from a recorded subject name what the subject says and never panic.
func FuzzRecordedSubjects(f *testing.F) {
	for _, s := range []string{"carrier", "weight by carrier", "main.raw.amount", ".", "a.", " by ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		d := DimensionSpecOf(subject)
		if d.Measure == "" && d.Column != subject {
			t.Fatalf("dimension of %q: %+v", subject, d)
		}
		specs := ReconcileSpecsOf(subject)
		if len(specs) == 0 || specs[0].Upstream != subject {
			t.Fatalf("reconcile of %q: %+v", subject, specs)
		}
		for _, sp := range specs[1:] {
			if sp.Upstream+"."+sp.Column != subject || sp.Column == "" || sp.Upstream == "" {
				t.Fatalf("reconcile of %q: %+v", subject, sp)
			}
		}
	})
}
