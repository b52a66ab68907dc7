package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/stdlib"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/dataworkers/dw/pkg/config"
)

// DB is a read-only session pool on the configured warehouse with its dialect, statement timeout
// and sample bound. Every query it runs is bounded by the timeout on both sides: the context
// cancels it client-side, and PostgreSQL / Snowflake are told the same limit server-side so a
// dropped client never leaves a query running.
type DB struct {
	Dialect   Dialect
	sql       *sql.DB
	timeout   time.Duration
	maxSample int
	caps      Caps
	catalog   *catalogCache // resolved tables by name (nil: every Resolve describes)
}

// Caps bound what one query reads into memory and hands back: a value longer than Value bytes is
// cut with a marker, and rows past Result bytes are not read. A tool's answer goes into a model's
// context, so the defaults are sized for that, not for the warehouse.
type Caps struct {
	Value  int
	Result int
}

// Default caps: a value of 2 KiB shows what a row holds; 64 KiB of rows is about 16k tokens.
const (
	DefaultMaxValueBytes  = 2 << 10
	DefaultMaxResultBytes = 64 << 10
	// MaxEngineValue is the largest value an engine may build or send us (SQLite's length limit,
	// PostgreSQL's message limit): a query such as SELECT randomblob(1000000000) fails at the
	// engine instead of being materialised, whatever the caps above.
	MaxEngineValue = 16 << 20
)

// Connect opens a read-only pool on c. Nothing is sent until the first query.
func Connect(c *config.Warehouse) (*DB, error) {
	if c == nil {
		return nil, ErrNotConfigured
	}
	d, err := DialectFor(c.Engine)
	if err != nil {
		return nil, err
	}
	timeout := c.StatementTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	maxSample := c.MaxSampleRows
	if maxSample <= 0 {
		maxSample = 20
	}
	caps := Caps{Value: c.MaxValueBytes, Result: c.MaxResultBytes}
	if caps.Value <= 0 {
		caps.Value = DefaultMaxValueBytes
	}
	if caps.Result <= 0 {
		caps.Result = DefaultMaxResultBytes
	}
	var db *sql.DB
	switch d.Engine {
	case SQLite:
		db, err = Open(c) // mode=ro and query_only: the file cannot be written through this pool
	case Postgres:
		db, err = openPostgres(c.DSN, timeout)
	case Snowflake:
		db, err = openSnowflake(c.DSN, timeout)
	}
	if err != nil {
		return nil, err
	}
	return &DB{Dialect: d, sql: db, timeout: timeout, maxSample: maxSample, caps: caps, catalog: newCatalogCache(time.Now)}, nil
}

// openPostgres sets the session read-only (any write fails with SQLSTATE 25006), the statement
// timeout server-side, and UTC so date_trunc on timestamptz buckets by UTC hours.
func openPostgres(dsn string, timeout time.Duration) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("warehouse.dsn is not a valid PostgreSQL DSN: %w", err)
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
	cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	cfg.RuntimeParams["TimeZone"] = "UTC"
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "data-workers"
	}
	// A message (one row) larger than this is refused before its body is read into memory.
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		f := pgproto3.NewFrontend(r, w)
		f.SetMaxBodyLen(4 * MaxEngineValue)
		return f
	}
	return stdlib.OpenDB(*cfg), nil
}

// Close closes the pool.
func (w *DB) Close() error { return w.sql.Close() }

// Timeout is the statement timeout applied to every query.
func (w *DB) Timeout() time.Duration { return w.timeout }

// MaxSample is the most rows any sample returns.
func (w *DB) MaxSample() int { return w.maxSample }

// QueryRow runs a one-row query under the statement timeout and scans it into dest.
func (w *DB) QueryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return w.queryRow(ctx, w, query, args, dest...)
}

func (w *DB) queryRow(ctx context.Context, sc scope, query string, args []any, dest ...any) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	q, done, err := sc.begin(ctx)
	if err != nil {
		return w.explain(ctx, err)
	}
	defer done()
	if err := q.QueryRowContext(ctx, query, args...).Scan(dest...); err != nil {
		sc.broke()
		return w.explain(ctx, err)
	}
	return nil
}

// scope is where one statement runs: the pool, each statement in its own transaction (DB), or
// a Snapshot's one transaction.
type scope interface {
	// begin returns where to run one statement and the function that ends it.
	begin(ctx context.Context) (querier, func(), error)
	// broke says the statement failed or was cancelled mid-result, so its transaction (and on
	// PostgreSQL its connection) may be unusable for the statements after it.
	broke()
}

func (w *DB) broke() {}

// querier is what both the pool and a transaction offer for reads.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// begin returns where to run one statement and the function that ends it. On PostgreSQL every
// statement runs in its own explicit READ ONLY transaction that is always rolled back, so nothing
// a statement does to the session (a set_config(…, false), a SET) outlives it and the next
// statement is read-only whatever the session default became. SQLite's pool is read-only by
// mode=ro and query_only; Snowflake has no read-only transactions (the reader role and
// CheckReadOnlySQL are the guard there).
func (w *DB) begin(ctx context.Context) (querier, func(), error) {
	if w.Dialect.Engine != Postgres {
		return w.sql, func() {}, nil
	}
	tx, err := w.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	return tx, func() { _ = tx.Rollback() }, nil
}

// Rows is a bounded result: column names and at most the requested number of rows, values
// converted to JSON-friendly Go types and cut to the value cap; Truncated says what was cut.
type Rows struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
	// Truncated is empty when the rows are whole; otherwise it says which cap cut them.
	Truncated string `json:"truncated,omitempty" jsonschema:"Set when values were cut to warehouse.max_value_bytes (marked …[truncated]) or rows past warehouse.max_result_bytes were not read"`
}

// Caps are the byte bounds this pool reads under.
func (w *DB) Caps() Caps { return w.caps }

// Query runs query under the statement timeout and reads at most limit rows (the configured
// sample bound when limit <= 0 or larger). Rows beyond the bound are not returned; on PostgreSQL
// the statement is cancelled once the bound is reached, so they are not read either (see query).
func (w *DB) Query(ctx context.Context, query string, args []any, limit int) (Rows, error) {
	if limit <= 0 || limit > w.maxSample {
		limit = w.maxSample
	}
	return w.query(ctx, w, query, args, limit)
}

// QueryAll reads every row of a query whose size the caller bounds itself (catalog reads,
// GROUP BY hour). It still stops at max rows.
func (w *DB) QueryAll(ctx context.Context, query string, args []any, max int) (Rows, error) {
	return w.query(ctx, w, query, args, max)
}

func (w *DB) query(ctx context.Context, sc scope, query string, args []any, limit int) (out Rows, err error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	q, done, err := sc.begin(ctx)
	if err != nil {
		return Rows{}, w.explain(ctx, err)
	}
	defer done()
	defer func() {
		if err != nil {
			sc.broke()
		}
	}()
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return Rows{}, w.explain(ctx, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return Rows{}, w.explain(ctx, err)
	}
	out = Rows{Columns: cols, Rows: [][]any{}}
	var size int
	cutValues, full := false, false
	for len(out.Rows) < limit && rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return Rows{}, w.explain(ctx, err)
		}
		rowSize := 0
		for i, v := range vals {
			var cut bool
			vals[i], cut = capValue(jsonValue(v), w.caps.Value)
			cutValues = cutValues || cut
			rowSize += valueSize(vals[i])
		}
		if size+rowSize > w.caps.Result {
			full = true
			break
		}
		size += rowSize
		out.Rows = append(out.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return Rows{}, w.explain(ctx, err)
	}
	out.Truncated = truncation(cutValues, full, len(out.Rows), w.caps)
	// Closing a PostgreSQL cursor reads and discards every remaining row (a sample of an unbounded
	// SELECT would stream the whole table), so when rows remain past the bound the statement is
	// cancelled first: pgx then drops the connection and the server stops. One extra row is read
	// to know; an exhausted result closes normally and keeps its connection. SQLite and Snowflake
	// close a cursor without reading the rest.
	if w.Dialect.Engine == Postgres && (full || len(out.Rows) == limit && rows.Next()) {
		cancel()
		sc.broke()
	}
	return out, nil
}

// truncatedMarker ends a value cut to the value cap; the total length follows it.
const truncatedMarker = "…[truncated: "

// capValue cuts a string longer than max bytes, at a character boundary, and marks the cut with
// the value's full length.
func capValue(v any, max int) (any, bool) {
	s, ok := v.(string)
	if !ok || len(s) <= max {
		return v, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedMarker + strconv.Itoa(len(s)) + " bytes]", true
}

// valueSize approximates the bytes a value takes in the JSON answer.
func valueSize(v any) int {
	if s, ok := v.(string); ok {
		return len(s) + 3
	}
	return 16
}

// truncation says which caps cut a result, or "" when nothing was cut.
func truncation(cutValues, full bool, kept int, caps Caps) string {
	var parts []string
	if cutValues {
		parts = append(parts, fmt.Sprintf("values longer than %d bytes were cut (warehouse.max_value_bytes)", caps.Value))
	}
	if full {
		what := fmt.Sprintf("rows after the first %d were not read", kept)
		if kept == 0 {
			what = "the first row alone is larger than the result cap, so no row is shown"
		}
		parts = append(parts, fmt.Sprintf("%s: %d bytes is the most one result holds (warehouse.max_result_bytes)", what, caps.Result))
	}
	return strings.Join(parts, "; ")
}

// jsonValue turns driver values into something JSON renders faithfully.
func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}

// Error kinds a caller may branch on.
var (
	ErrTimeout        = errors.New("statement timeout")
	ErrNoSuchTable    = errors.New("no such table")
	ErrNoSuchColumn   = errors.New("no such column")
	ErrTypeMismatch   = errors.New("type mismatch")
	ErrReadOnly       = errors.New("write refused by the read-only session")
	ErrNotReadOnlySQL = errors.New("not a single read-only query")
	ErrValueTooLarge  = errors.New("value too large")
)

// valueHint is what to do about a value the engine was not allowed to build or send.
var valueHint = fmt.Sprintf("a value is larger than %d MiB, the most Data Workers reads: select a part of it (substr, left) or its length instead", MaxEngineValue>>20)

// QueryError is a warehouse failure explained: what kind, what the engine said, what to do.
type QueryError struct {
	Kind   error
	Engine Engine
	Err    error
	Hint   string
}

func (e *QueryError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Engine, e.Err)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *QueryError) Unwrap() []error { return []error{e.Kind, e.Err} }

// explain classifies an engine error so a tool can say what to do next.
func (w *DB) explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	qe := &QueryError{Engine: w.Dialect.Engine, Err: err}
	timeoutHint := fmt.Sprintf("the query ran longer than warehouse.statement_timeout (%s): narrow the window, add an index on the timestamp column, or raise the key", w.timeout)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		qe.Kind, qe.Hint = ErrTimeout, timeoutHint
		return qe
	}
	var tooBig *pgproto3.ExceededMaxBodyLenErr
	if errors.As(err, &tooBig) {
		qe.Kind, qe.Hint = ErrValueTooLarge, valueHint
		return qe
	}
	var pe *pgconn.PgError
	var se sqlite3.Error
	sfNumber, isSF := snowflakeErrorNumber(err)
	switch {
	case errors.As(err, &pe):
		switch pe.Code {
		case "57014":
			qe.Kind, qe.Hint = ErrTimeout, timeoutHint
		case "42P01", "3F000":
			qe.Kind, qe.Hint = ErrNoSuchTable, "list_tables shows the tables that exist"
		case "42703":
			qe.Kind, qe.Hint = ErrNoSuchColumn, "describe_table shows the columns"
		case "42883", "42804", "22007", "22008", "22P02":
			qe.Kind, qe.Hint = ErrTypeMismatch, "a column does not have the type the check needs"
		case "25006":
			qe.Kind, qe.Hint = ErrReadOnly, "Data Workers only reads; write the query as a SELECT"
		}
	case errors.As(err, &se):
		msg := se.Error()
		switch {
		case se.Code == sqlite3.ErrInterrupt:
			qe.Kind, qe.Hint = ErrTimeout, timeoutHint
		case se.Code == sqlite3.ErrTooBig:
			qe.Kind, qe.Hint = ErrValueTooLarge, valueHint
		case strings.Contains(msg, "no such table"):
			qe.Kind, qe.Hint = ErrNoSuchTable, "list_tables shows the tables that exist"
		case strings.Contains(msg, "no such column"):
			qe.Kind, qe.Hint = ErrNoSuchColumn, "describe_table shows the columns"
		case se.Code == sqlite3.ErrReadonly || strings.Contains(msg, "readonly") || strings.Contains(msg, "query_only"):
			qe.Kind, qe.Hint = ErrReadOnly, "Data Workers only reads; write the query as a SELECT"
		}
	case isSF:
		switch sfNumber {
		case 630, 604:
			qe.Kind, qe.Hint = ErrTimeout, timeoutHint
		case 2003:
			qe.Kind, qe.Hint = ErrNoSuchTable, "list_tables shows the tables the role can see"
		case 904:
			qe.Kind, qe.Hint = ErrNoSuchColumn, "describe_table shows the columns"
		case 1044, 2016, 100038:
			qe.Kind, qe.Hint = ErrTypeMismatch, "a column does not have the type the check needs"
		}
	}
	if qe.Kind == nil {
		qe.Kind = errors.New("query failed")
	}
	return qe
}
