package compat

import (
	"cmp"
	"slices"
)

// unionKeys returns the keys of a and b, sorted, so differences come out in a stable order.
func unionKeys[K cmp.Ordered, A, B any](a map[K]A, b map[K]B) []K {
	seen := map[K]bool{}
	var out []K
	for k := range a {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for k := range b {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
