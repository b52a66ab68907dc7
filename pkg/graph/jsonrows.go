package graph

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// jsonRows builds the JSON array of row arrays that one batch upsert reads with json_each. Values
// are appended as they come: json.Marshal of [][]any boxes every value and reflects on each, which
// cost a large import's write transaction about as much as SQLite's JSON parsing.
type jsonRows struct {
	buf  []byte
	n    int // rows begun
	cols int // values in the current row
}

// row begins a row.
func (r *jsonRows) row() *jsonRows {
	if r.n == 0 {
		r.buf = append(r.buf[:0], '[')
	} else {
		r.buf = append(r.buf, ']', ',')
	}
	r.buf = append(r.buf, '[')
	r.n++
	r.cols = 0
	return r
}

func (r *jsonRows) sep() {
	if r.cols > 0 {
		r.buf = append(r.buf, ',')
	}
	r.cols++
}

func (r *jsonRows) int(v int64) *jsonRows {
	r.sep()
	r.buf = strconv.AppendInt(r.buf, v, 10)
	return r
}

// str appends s quoted; invalid UTF-8 becomes U+FFFD, as json.Marshal makes it.
func (r *jsonRows) str(s string) *jsonRows {
	r.sep()
	r.buf, _ = jsontext.AppendQuote(r.buf, s)
	return r
}

func (r *jsonRows) bool(v bool) *jsonRows {
	r.sep()
	r.buf = strconv.AppendBool(r.buf, v)
	return r
}

// take returns the rows as JSON ("[]" when none) and starts over.
func (r *jsonRows) take() string {
	var s string
	if r.n == 0 {
		s = "[]"
	} else {
		s = string(append(r.buf, ']', ']'))
	}
	r.buf, r.n, r.cols = r.buf[:0], 0, 0
	return s
}
