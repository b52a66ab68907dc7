package warehouse

import (
	"fmt"
	"strings"
)

// TableRef names a table: up to database.schema.name. Empty parts mean "the session's default".
type TableRef struct {
	Database string `json:"database,omitempty"`
	Schema   string `json:"schema,omitempty"`
	Name     string `json:"name"`
}

// String renders the reference as dotted parts, quoting a part only when it needs it.
func (t TableRef) String() string {
	var parts []string
	for _, p := range []string{t.Database, t.Schema, t.Name} {
		if p == "" {
			continue
		}
		if strings.ContainsAny(p, `." `) {
			p = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ".")
}

// ParseTableRef reads "name", "schema.name" or "database.schema.name". A part may be double-quoted
// to contain dots or quotes ("" is a literal quote). Each part is validated as an identifier.
func ParseTableRef(s string) (TableRef, error) {
	var parts []string
	var cur strings.Builder
	inQuote, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote && c == '"' && i+1 < len(s) && s[i+1] == '"':
			cur.WriteByte('"')
			i++
		case inQuote && c == '"':
			inQuote = false
		case inQuote:
			cur.WriteByte(c)
		case c == '"':
			if cur.Len() > 0 || quoted {
				return TableRef{}, fmt.Errorf("table %q: a quote may only open a whole name part", s)
			}
			inQuote, quoted = true, true
		case c == '.':
			parts = append(parts, cur.String())
			cur.Reset()
			quoted = false
		default:
			if quoted {
				return TableRef{}, fmt.Errorf("table %q: text after a closing quote", s)
			}
			cur.WriteByte(c)
		}
	}
	if inQuote {
		return TableRef{}, fmt.Errorf("table %q: unterminated quote", s)
	}
	parts = append(parts, cur.String())
	if len(parts) > 3 {
		return TableRef{}, fmt.Errorf("table %q: use name, schema.name or database.schema.name", s)
	}
	for _, p := range parts {
		if err := ValidateIdent(p); err != nil {
			return TableRef{}, fmt.Errorf("table %q: %w", s, err)
		}
	}
	var t TableRef
	switch len(parts) {
	case 1:
		t.Name = parts[0]
	case 2:
		t.Schema, t.Name = parts[0], parts[1]
	case 3:
		t.Database, t.Schema, t.Name = parts[0], parts[1], parts[2]
	}
	return t, nil
}
