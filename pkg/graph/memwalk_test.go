package graph

import "testing"

// readEvidence takes any bytes without panicking: it fills only hops it was given, each once.
func FuzzReadEvidence(f *testing.F) {
	f.Add([]byte(`[[0,"dbt:manifest/x","a + b","2026-08-14T12:00:00Z"],[1,"s","",""]]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[[0,"s","t","x"],[0,"s","t","x"]]`))
	f.Add([]byte(`[[5,"s","t","x"]`))
	f.Add([]byte(`[[0,"","",""],[0,"","",""],[0,"","",""]]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		hops := make([]mhop, 2)
		evidence := make([]Evidence, len(hops))
		n, err := readEvidence(raw, hops, evidence)
		if err != nil {
			return
		}
		filled := 0
		for _, e := range evidence {
			if e.Source != "" {
				filled++
			}
		}
		if n > len(hops) || filled > n {
			t.Fatalf("read %d rows, %d filled, for %d hops", n, filled, len(hops))
		}
	})
}
