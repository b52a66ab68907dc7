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
		u := strings.ToUpper(w)
		switch u {
		case "INSERT", "UPDATE", "DELETE", "MERGE", "DROP", "ALTER", "CREATE", "TRUNCATE", "GRANT", "REVOKE", "COPY", "CALL", "PUT", "REMOVE", "ATTACH", "DETACH", "PRAGMA", "VACUUM",
			"SET", "RESET", "LOCK":
			return "", fmt.Errorf("%w: custom SQL may not contain %s", ErrNotReadOnlySQL, u)
		}
	}
	// Functions are refused by name both bare and quoted ("set_config"(…) calls it too).
	names := words(body)
	_ = scan(body, func(int, byte) {}, func(id string) { names = append(names, id) })
	for _, w := range names {
		if f := forbiddenFunction(strings.ToUpper(w)); f != "" {
			return "", fmt.Errorf("%w: custom SQL may not call %s functions (%s)", ErrNotReadOnlySQL, f, w)
		}
	}
	return body, nil
}

// forbiddenFunction names the family of a word that is a session- or server-changing function:
// PostgreSQL admin functions (pg_terminate_backend, pg_reload_conf, pg_advisory_lock, pg_read_file
// …: every pg_ name is refused, the catalogs a check might want are reachable through
// information_schema), large objects (lo_import/lo_export), dblink, and Snowflake's SYSTEM$
// functions (SYSTEM$CANCEL_ALL_QUERIES, SYSTEM$ABORT_SESSION …; '$' is a word character, as in
// Snowflake and PostgreSQL identifiers). It returns "" for any other word.
func forbiddenFunction(upper string) string {
	switch {
	case upper == "SET_CONFIG":
		return "session-setting (set_config)"
	case strings.HasPrefix(upper, "PG_"):
		return "PostgreSQL admin (pg_*)"
	case strings.HasPrefix(upper, "LO_"):
		return "large-object (lo_*)"
	case strings.HasPrefix(upper, "DBLINK"):
		return "dblink"
	case strings.HasPrefix(upper, "SYSTEM$"):
		return "Snowflake SYSTEM$"
	}
	return ""
}

// scan walks SQL text outside string literals, quoted identifiers and comments, calling fn for
// each byte of code with its offset, and ident (when not nil) with the text of each quoted
// identifier ("…" or `…`, doubled quotes undone). It fails on an unterminated literal or comment.
func scan(q string, fn func(i int, c byte), ident func(s string)) error {
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
			if ident != nil && c != '\'' {
				ident(strings.ReplaceAll(q[i+1:end], string([]byte{c, c}), string(c)))
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
	}, nil)
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
	_ = scan(q, func(_ int, c byte) { b.WriteByte(c) }, nil)
	return strings.FieldsFunc(b.String(), func(r rune) bool {
		return !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}

func firstWord(q string) string {
	w := words(q)
	if len(w) == 0 {
		return ""
	}
	return w[0]
}
