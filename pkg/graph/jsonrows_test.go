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
