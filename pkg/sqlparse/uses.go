package sqlparse

import (
	"sort"
	"strings"
)

// ColumnUse is one column reference as written and the base-table column it reads directly, so
// a caller can edit exactly the references to one table's column (and not a same-named column of
// a joined table, a CTE's output or a nested field).
type ColumnUse struct {
	Ref *ColumnRef
	// Table and Column are the base table and its column (a dotted path for a nested field) the
	// reference reads directly, through at most a windowing TVF. Table is nil when the reference
	// reads a derived relation (CTE, subquery, other table function), is ambiguous or is unknown.
	Table  []string
	Column string
	// Bare: the reference is a whole SELECT item without an alias, so it also names the output column.
	Bare bool
}

// ColumnUses resolves every column reference of stmt the way Analyze does and returns them in
// text order.
func ColumnUses(stmt Statement, cols ColumnsFunc) []ColumnUse {
	uses := map[*ColumnRef]*ColumnUse{}
	analyze(stmt, cols, uses)
	out := make([]ColumnUse, 0, len(uses))
	for _, u := range uses {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref.Pos < out[j].Ref.Pos })
	return out
}

// windowColumns are what a windowing TVF adds to its input's columns.
var windowColumns = map[string]bool{"window_start": true, "window_end": true, "window_time": true}

// use records what x resolved to: relation r and the column path within it.
func (e *env) use(x *ColumnRef, r *relation, path []string) {
	u := e.uses[x]
	if u == nil {
		u = &ColumnUse{Ref: x}
		e.uses[x] = u
	}
	if r == nil || len(path) == 0 {
		return
	}
	switch {
	case r.name != nil:
		u.Table = r.name
	case r.baseUnknown != nil && !windowColumns[strings.ToLower(path[0])]:
		u.Table = r.baseUnknown
	case r.base != nil && !windowColumns[strings.ToLower(path[0])]:
		u.Table = r.base
	default:
		return
	}
	u.Column = strings.Join(path, ".")
	if r.name != nil || r.base != nil {
		for _, c := range r.cols {
			if strings.EqualFold(c, path[0]) {
				u.Column = strings.Join(append([]string{c}, path[1:]...), ".")
			}
		}
	}
}

// TokenKind is the kind of a Token.
type TokenKind int

// Token kinds.
const (
	TokenIdent  TokenKind = TokenKind(tIdent)
	TokenQuoted TokenKind = TokenKind(tQuoted) // "ident" or `ident`
	TokenString TokenKind = TokenKind(tString)
	TokenNumber TokenKind = TokenKind(tNumber)
	TokenOp     TokenKind = TokenKind(tOp)
	TokenParam  TokenKind = TokenKind(tParam)
)

// Token is a token of SQL text as the parser reads it: identifiers unquoted, strings unescaped,
// with its byte span [Pos, End) in the text.
type Token struct {
	Kind     TokenKind
	Text     string
	Pos, End int
}

// IsName reports whether t is an identifier (quoted or not) equal to name, ignoring case.
func (t Token) IsName(name string) bool {
	return (t.Kind == TokenIdent || t.Kind == TokenQuoted) && strings.EqualFold(t.Text, name)
}

// IsKeyword reports whether t is the unquoted word kw, ignoring case.
func (t Token) IsKeyword(kw string) bool {
	return t.Kind == TokenIdent && strings.EqualFold(t.Text, kw)
}

// Tokens splits src with the parser's lexer, dropping whitespace and comments. On a lexical
// error (an unterminated string, an unexpected character) it returns the tokens before it and
// the error, so a caller that needs only a prefix can still use them.
func Tokens(src string) ([]Token, error) {
	toks, err := lex(src)
	out := make([]Token, 0, len(toks))
	for _, t := range toks {
		if t.kind == tEOF {
			break
		}
		out = append(out, Token{Kind: TokenKind(t.kind), Text: t.text, Pos: t.pos, End: t.end})
	}
	return out, err
}
