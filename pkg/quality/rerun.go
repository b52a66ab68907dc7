package quality

import "strings"

// DimensionSpecOf rebuilds the dimension spec a recorded keys_moved point came from: its subject
// is the key column, or "<measure> by <key>" when a measure's sum was tracked per key.
func DimensionSpecOf(subject string) DimensionSpec {
	if measure, key, ok := strings.Cut(subject, " by "); ok {
		return DimensionSpec{Column: key, Measure: measure}
	}
	return DimensionSpec{Column: subject}
}

// ReconcileSpecsOf are the specs a recorded reconcile_ratio point may have come from, the likelier
// first: its subject is the upstream table (rows compared), or "<upstream>.<column>" (sums
// compared), and a dotted table name reads the same as a table and a column, so the caller tries
// each until the warehouse resolves one.
func ReconcileSpecsOf(subject string) []ReconcileSpec {
	out := []ReconcileSpec{{Upstream: subject}}
	if i := strings.LastIndex(subject, "."); i > 0 && i < len(subject)-1 {
		out = append(out, ReconcileSpec{Upstream: subject[:i], Column: subject[i+1:], UpstreamColumn: subject[i+1:]})
	}
	return out
}
