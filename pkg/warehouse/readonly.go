package warehouse

import (
	"fmt"
	"strings"
)

// CheckReadOnlySQL accepts one SELECT (or WITH … SELECT) statement and returns it without a
// trailing semicolon, ready to be wrapped as a subquery. It is a guard in front of the engine's own
// read-only session (SQLite query_only, PostgreSQL default_transaction_read_only), and the only one
// on Snowflake, which has no read-only session: a second statement, or a statement that is not a
// query, is refused before anything is sent.
func CheckReadOnlySQL(q string) (string, error) {
	body, err := stripTrailingSemicolon(q)
	if err != nil {
		return "", err
	}
	first := strings.ToUpper(firstWord(body))
	if first != "SELECT" && first != "WITH" {
		return "", fmt.Errorf("%w: custom SQL must be one SELECT or WITH query, got %q", ErrNotReadOnlySQL, first)
	}
	// A data-modifying CTE (WITH x AS (DELETE …)) is valid PostgreSQL; refuse the verbs outright.
	for _, w := range words(body) {
		switch strings.ToUpper(w) {
		case "INSERT", "UPDATE", "DELETE", "MERGE", "DROP", "ALTER", "CREATE", "TRUNCATE", "GRANT", "REVOKE", "COPY", "CALL", "PUT", "REMOVE", "ATTACH", "DETACH", "PRAGMA", "VACUUM":
			return "", fmt.Errorf("%w: custom SQL may not contain %s", ErrNotReadOnlySQL, strings.ToUpper(w))
		}
	}
	return body, nil
}

// scan walks SQL text outside string literals, quoted identifiers and comments, calling fn for
// each byte of code with its offset. It fails on an unterminated literal or comment.
func scan(q string, fn func(i int, c byte)) error {
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			end := i + 1
			for ; end < len(q); end++ {
				if q[end] == c {
					if end+1 < len(q) && q[end+1] == c { // doubled quote
						end++
						continue
					}
					break
				}
			}
			if end >= len(q) {
				return fmt.Errorf("%w: unterminated %c", ErrNotReadOnlySQL, c)
			}
			fn(i, ' ')
			i = end
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			nl := strings.IndexByte(q[i:], '\n')
			if nl < 0 {
				i = len(q)
			} else {
				i += nl
			}
			fn(i, ' ')
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return fmt.Errorf("%w: unterminated /* comment", ErrNotReadOnlySQL)
			}
			i += end + 3
			fn(i, ' ')
		case c == '$' && i+1 < len(q) && q[i+1] == '$': // PostgreSQL dollar quoting: refuse, too easy to hide a statement
			return fmt.Errorf("%w: dollar-quoted strings are not accepted", ErrNotReadOnlySQL)
		default:
			fn(i, c)
		}
	}
	return nil
}

func stripTrailingSemicolon(q string) (string, error) {
	last := -1
	semis := []int{}
	err := scan(q, func(i int, c byte) {
		if c == ';' {
			semis = append(semis, i)
		} else if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			last = i
		}
	})
	if err != nil {
		return "", err
	}
	for _, s := range semis {
		if s < last {
			return "", fmt.Errorf("%w: only one statement is allowed", ErrNotReadOnlySQL)
		}
	}
	if last < 0 {
		return "", fmt.Errorf("%w: empty SQL", ErrNotReadOnlySQL)
	}
	if len(semis) > 0 {
		return strings.TrimSpace(q[:semis[0]]), nil
	}
	return strings.TrimSpace(q), nil
}

// words returns the bare words of the code (outside literals and comments).
func words(q string) []string {
	var b strings.Builder
	_ = scan(q, func(_ int, c byte) { b.WriteByte(c) })
	return strings.FieldsFunc(b.String(), func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}

func firstWord(q string) string {
	w := words(q)
	if len(w) == 0 {
		return ""
	}
	return w[0]
}
