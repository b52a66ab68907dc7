// Package sqlparse is a small recursive-descent parser for the SQL that carries lineage: SELECT
// (with CTEs, joins, subqueries, set operations, window functions), INSERT INTO … SELECT and
// CREATE TABLE … AS SELECT, in the Flink SQL and warehouse (Snowflake, PostgreSQL, ANSI) dialects
// dbt compiles to, including Flink's windowing table-valued functions (TUMBLE, HOP, CUMULATE,
// SESSION). It parses only what lineage needs and refuses the rest with a positioned error; it
// never guesses from text patterns.
package sqlparse

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tQuoted // "ident" or `ident`
	tString
	tNumber
	tOp
	tParam // ? or $1 or :name
)

type token struct {
	kind tokKind
	text string // identifiers unquoted; strings unescaped; operators as written
	pos  int    // byte offset in the input
	end  int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tString:
		return "'" + t.text + "'"
	case tQuoted:
		return `"` + t.text + `"`
	}
	return t.text
}

// SyntaxError is a parse failure at a byte offset.
type SyntaxError struct {
	Pos  int
	Line int
	Col  int
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("SQL syntax error at line %d column %d: %s", e.Line, e.Col, e.Msg)
}

func newSyntaxError(src string, pos int, format string, args ...any) *SyntaxError {
	if pos > len(src) {
		pos = len(src)
	}
	line, col := 1, 1
	for _, r := range src[:pos] {
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &SyntaxError{Pos: pos, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// lex splits src into tokens, dropping whitespace and comments.
func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return toks, newSyntaxError(src, i, "unterminated /* comment")
			}
			i += end + 4
		case c == '\'':
			start := i
			var b strings.Builder
			i++
			for {
				if i >= len(src) {
					return toks, newSyntaxError(src, start, "unterminated string literal")
				}
				if src[i] == '\'' {
					if i+1 < len(src) && src[i+1] == '\'' {
						b.WriteByte('\'')
						i += 2
						continue
					}
					i++
					break
				}
				if src[i] == '\\' && i+1 < len(src) {
					b.WriteByte(src[i])
					b.WriteByte(src[i+1])
					i += 2
					continue
				}
				b.WriteByte(src[i])
				i++
			}
			toks = append(toks, token{kind: tString, text: b.String(), pos: start, end: i})
		case c == '"' || c == '`':
			start := i
			q := c
			var b strings.Builder
			i++
			for {
				if i >= len(src) {
					return toks, newSyntaxError(src, start, "unterminated quoted identifier")
				}
				if src[i] == q {
					if i+1 < len(src) && src[i+1] == q {
						b.WriteByte(q)
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(src[i])
				i++
			}
			if b.Len() == 0 {
				return toks, newSyntaxError(src, start, "empty quoted identifier")
			}
			toks = append(toks, token{kind: tQuoted, text: b.String(), pos: start, end: i})
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			start := i
			for i < len(src) && (src[i] >= '0' && src[i] <= '9' || src[i] == '.') {
				i++
			}
			if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
				j := i + 1
				if j < len(src) && (src[j] == '+' || src[j] == '-') {
					j++
				}
				if j < len(src) && src[j] >= '0' && src[j] <= '9' {
					i = j
					for i < len(src) && src[i] >= '0' && src[i] <= '9' {
						i++
					}
				}
			}
			toks = append(toks, token{kind: tNumber, text: src[start:i], pos: start, end: i})
		case isIdentStart(src, i):
			start := i
			for i < len(src) {
				r, n := utf8.DecodeRuneInString(src[i:])
				if !(r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
					break
				}
				i += n
			}
			toks = append(toks, token{kind: tIdent, text: src[start:i], pos: start, end: i})
		case c == '?':
			toks = append(toks, token{kind: tParam, text: "?", pos: i, end: i + 1})
			i++
		case c == '$' && i+1 < len(src) && isIdentStart(src, i+1):
			// Confluent Cloud's system columns: $rowtime, $headers.
			start := i
			i++
			for i < len(src) {
				r, n := utf8.DecodeRuneInString(src[i:])
				if !(r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
					break
				}
				i += n
			}
			toks = append(toks, token{kind: tIdent, text: src[start:i], pos: start, end: i})
		case c == '$' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			start := i
			i++
			for i < len(src) && src[i] >= '0' && src[i] <= '9' {
				i++
			}
			toks = append(toks, token{kind: tParam, text: src[start:i], pos: start, end: i})
		default:
			op := ""
			for _, cand := range []string{"<=>", "::", "||", "<>", "!=", "<=", ">=", "=>", "->>", "->"} {
				if strings.HasPrefix(src[i:], cand) {
					op = cand
					break
				}
			}
			if op == "" {
				if strings.ContainsRune("(),.;*+-/%=<>[]:^&|~{}!", rune(c)) {
					op = string(c)
				} else {
					r, _ := utf8.DecodeRuneInString(src[i:])
					return toks, newSyntaxError(src, i, "unexpected character %q", r)
				}
			}
			toks = append(toks, token{kind: tOp, text: op, pos: i, end: i + len(op)})
			i += len(op)
		}
	}
	toks = append(toks, token{kind: tEOF, pos: len(src), end: len(src)})
	return toks, nil
}

func isIdentStart(src string, i int) bool {
	r, _ := utf8.DecodeRuneInString(src[i:])
	return r == '_' || unicode.IsLetter(r)
}
