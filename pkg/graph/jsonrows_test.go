package graph

import (
	"encoding/json"
	"reflect"
	"testing"
)

// jsonRows writes what json.Marshal writes for the same rows, quoting included.
func TestJSONRowsMatchMarshal(t *testing.T) {
	var r jsonRows
	if got := r.take(); got != "[]" {
		t.Fatalf("no rows = %s", got)
	}
	rows := [][]any{{int64(7), "a\"b\\c\n\x01 é ☃", true}, {int64(-1), "", false}, {int64(0), "bad \xff utf-8", true}}
	for _, row := range rows {
		r.row().int(row[0].(int64)).str(row[1].(string)).bool(row[2].(bool))
	}
	got := r.take()
	var back, want [][]any
	raw, _ := json.Marshal(rows)
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("jsonRows = %s, json.Marshal = %s", got, raw)
	}
	r.row().int(1)
	if got := r.take(); got != "[[1]]" {
		t.Fatalf("after take, one row = %s", got)
	}
}

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
