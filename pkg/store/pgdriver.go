package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgConnector opens connections through pgx's database/sql driver and wraps each one so the SQL
// every package writes stays portable between the two engines: `?` and `?NNN` placeholders
// (SQLite's) are rebound to PostgreSQL's `$n`, and bool arguments are sent as 0/1, the way the
// SQLite driver stores them in our INTEGER flag columns.
type pgConnector struct {
	inner driver.Connector
}

func newPGConnector(cfg *pgx.ConnConfig) driver.Connector {
	return pgConnector{inner: stdlib.GetConnector(*cfg)}
}

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{Conn: conn.(*stdlib.Conn)}, nil
}

func (c pgConnector) Driver() driver.Driver { return pgDriver{} }

// pgDriver exists only because database/sql asks a connector for its driver; connections are made
// by pgConnector.
type pgDriver struct{}

func (pgDriver) Open(name string) (driver.Conn, error) {
	cfg, err := pgx.ParseConfig(name)
	if err != nil {
		return nil, err
	}
	return newPGConnector(cfg).Connect(context.Background())
}

// pgConn is a pgx connection that rebinds placeholders; everything else is pgx's.
type pgConn struct {
	*stdlib.Conn
}

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	q, err := rebind(query)
	if err != nil {
		return nil, err
	}
	st, err := c.Conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return pgStmt{inner: st.(*stdlib.Stmt)}, nil
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	q, err := rebind(query)
	if err != nil {
		return nil, err
	}
	return c.Conn.ExecContext(ctx, q, portableArgs(args))
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, err := rebind(query)
	if err != nil {
		return nil, err
	}
	return c.Conn.QueryContext(ctx, q, portableArgs(args))
}

type pgStmt struct {
	inner *stdlib.Stmt
}

func (s pgStmt) Close() error  { return s.inner.Close() }
func (s pgStmt) NumInput() int { return s.inner.NumInput() }

func (s pgStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s pgStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.inner.ExecContext(ctx, portableArgs(args))
}

func (s pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.inner.QueryContext(ctx, portableArgs(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

// portableArgs sends bools as 0/1: flag columns are INTEGER on both engines, and SQLite's driver
// already writes a Go bool as 0/1.
func portableArgs(args []driver.NamedValue) []driver.NamedValue {
	for i, a := range args {
		if b, ok := a.Value.(bool); ok {
			v := int64(0)
			if b {
				v = 1
			}
			args[i].Value = v
		}
	}
	return args
}

// rebind rewrites SQLite placeholders as PostgreSQL's: `?NNN` becomes `$NNN` and a bare `?` takes
// the number after the largest used so far (SQLite's rule). Text inside '…' strings, "…"
// identifiers, -- and /* */ comments and $tag$…$tag$ bodies is left alone, so a literal question
// mark never becomes a parameter. PostgreSQL's own jsonb `?` operators are therefore not usable in
// store SQL; no store query needs them.
func rebind(q string) (string, error) {
	if !strings.ContainsRune(q, '?') {
		return q, nil
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	highest := 0
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			end := closeQuote(q, i, c)
			b.WriteString(q[i:end])
			i = end
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				end = len(q) - i
			}
			b.WriteString(q[i : i+end])
			i += end
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return "", fmt.Errorf("store: unterminated /* comment in SQL")
			}
			b.WriteString(q[i : i+2+end+2])
			i += 2 + end + 2
		case c == '$' && dollarTag(q, i) != "":
			tag := dollarTag(q, i)
			end := strings.Index(q[i+len(tag):], tag)
			if end < 0 {
				return "", fmt.Errorf("store: unterminated %s quote in SQL", tag)
			}
			b.WriteString(q[i : i+len(tag)+end+len(tag)])
			i += len(tag) + end + len(tag)
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n := highest + 1
			if j > i+1 {
				var err error
				n, err = strconv.Atoi(q[i+1 : j])
				if err != nil || n < 1 || n > 65535 {
					return "", fmt.Errorf("store: bad placeholder %s in SQL", q[i:j])
				}
			}
			if n > highest {
				highest = n
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

// closeQuote returns the index just past the quote opened at q[i] (a doubled quote is an escaped
// one), or len(q) for an unterminated quote, which the server then reports.
func closeQuote(q string, i int, quote byte) int {
	for j := i + 1; j < len(q); j++ {
		if q[j] == quote {
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
}

// dollarTag returns the $tag$ opening a dollar-quoted string at q[i], or "" when q[i] is not one
// ($1 is a parameter, not a tag).
func dollarTag(q string, i int) string {
	for j := i + 1; j < len(q); j++ {
		c := q[j]
		switch {
		case c == '$':
			return q[i : j+1]
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (j > i+1 && c >= '0' && c <= '9'):
		default:
			return ""
		}
	}
	return ""
}
