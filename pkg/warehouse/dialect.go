package warehouse

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Engine names a supported SQL engine.
type Engine string

// The engines Data Workers reads.
const (
	SQLite    Engine = "sqlite"
	Postgres  Engine = "postgres"
	Snowflake Engine = "snowflake"
)

// Dialect is what differs between engines when we write SQL: quoting, placeholders, hour buckets,
// and whether declared constraints can be trusted.
type Dialect struct {
	Engine Engine
}

// DialectFor returns the dialect of a configured engine name.
func DialectFor(engine string) (Dialect, error) {
	switch Engine(engine) {
	case SQLite, Postgres, Snowflake:
		return Dialect{Engine: Engine(engine)}, nil
	}
	return Dialect{}, fmt.Errorf("warehouse.engine %q is not supported; use sqlite, postgres or snowflake", engine)
}

// MaxIdentLen bounds identifiers: Snowflake allows 255 characters, PostgreSQL 63 bytes; longer
// input is never a real name.
const MaxIdentLen = 255

// ValidateIdent rejects what can never be a real identifier: empty, too long, invalid UTF-8 or
// control characters (NUL included). Everything else is legal when quoted, so quoting, not a
// character whitelist, is what keeps hostile names inert; and every name is resolved against the
// catalog before it reaches a query.
func ValidateIdent(name string) error {
	switch {
	case name == "":
		return errors.New("empty identifier")
	case len(name) > MaxIdentLen:
		return fmt.Errorf("identifier %.40q… is longer than %d bytes", name, MaxIdentLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("identifier %q is not valid UTF-8", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("identifier %q contains a control character", name)
		}
	}
	return nil
}

// Quote validates and double-quotes one identifier (all three engines use ANSI quoting; an embedded
// quote is doubled). Quoted names are case-sensitive, so callers quote the name the catalog returned.
func (d Dialect) Quote(name string) (string, error) {
	if err := ValidateIdent(name); err != nil {
		return "", err
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`, nil
}

// mustQuote quotes a name that came from the catalog (already validated).
func (d Dialect) mustQuote(name string) string {
	q, err := d.Quote(name)
	if err != nil {
		panic(fmt.Sprintf("warehouse: unvalidated identifier reached SQL: %v", err))
	}
	return q
}

// QuoteTable renders a resolved table reference.
func (d Dialect) QuoteTable(t TableRef) (string, error) {
	var parts []string
	for _, p := range []string{t.Database, t.Schema, t.Name} {
		if p == "" {
			continue
		}
		q, err := d.Quote(p)
		if err != nil {
			return "", err
		}
		parts = append(parts, q)
	}
	if len(parts) == 0 {
		return "", errors.New("empty table name")
	}
	return strings.Join(parts, "."), nil
}

// Args collects bound values and renders the engine's placeholder for each.
type Args struct {
	d    Dialect
	Vals []any
}

// NewArgs starts an empty argument list.
func (d Dialect) NewArgs() *Args { return &Args{d: d} }

// Add binds v and returns its placeholder.
func (a *Args) Add(v any) string {
	a.Vals = append(a.Vals, v)
	if a.d.Engine == Postgres {
		return "$" + strconv.Itoa(len(a.Vals))
	}
	return "?"
}

// TimeFormat is how a timestamp column stores time, which decides how a bound value must
// look: PostgreSQL and Snowflake compare native timestamps; SQLite compares text or numbers, so a
// bound value must use the column's own text layout (or epoch seconds) to compare correctly.
type TimeFormat int

// Time formats of a timestamp column.
const (
	TimeNative    TimeFormat = iota // a real timestamp type (PostgreSQL, Snowflake)
	TimeTextSpace                   // SQLite text "2006-01-02 15:04:05[...]"
	TimeTextT                       // SQLite text "2006-01-02T15:04:05[...]"
	TimeEpoch                       // SQLite integer/real seconds since 1970
	TimeTextDate                    // SQLite text "2006-01-02" (a whole day)
)

// BindTime returns the value to bind for t when comparing with a column stored in format f.
// Text is rendered without a zone suffix: "2025-12-01T05:00:00Z" >= "2025-12-01T05:00:00" holds,
// so naive and Z-suffixed UTC text both compare correctly (timestamps in SQLite must be UTC).
func BindTime(f TimeFormat, t time.Time) any {
	t = t.UTC()
	switch f {
	case TimeTextSpace:
		return t.Format("2006-01-02 15:04:05")
	case TimeTextT:
		return t.Format("2006-01-02T15:04:05")
	case TimeEpoch:
		return t.Unix()
	case TimeTextDate:
		// Only reached without a zone (see BindBound, which date columns go through): a date
		// stands for its UTC day.
		return t.Format("2006-01-02")
	}
	return t
}

// IsDateColumn reports whether a column holds whole calendar days, not instants: a DATE column on
// PostgreSQL or Snowflake, or SQLite text stored as "2006-01-02".
func (d Dialect) IsDateColumn(f TimeFormat, colType string) bool {
	if d.Engine == SQLite {
		return f == TimeTextDate
	}
	return strings.EqualFold(strings.TrimSpace(colType), "date")
}

// BindBound binds the time bound t for a comparison with a column of type colType stored in
// format f, and returns its (cast) placeholder. Instants bind as BindTime does. A date column
// holds the local calendar days of the window's zone loc, so the bound binds as the local date of
// t: a window start compares "col >= start date" (inclusive); with roundUp a window end that is
// not local midnight rounds up to the next date, so "col < end date" keeps today's rows. Comparing
// a date with an instant instead (05:00Z for New York's midnight) loses the whole first day.
func (d Dialect) BindBound(a *Args, f TimeFormat, colType string, t time.Time, loc *time.Location, roundUp bool) string {
	if !d.IsDateColumn(f, colType) {
		return d.TimeParam(a.Add(BindTime(f, t)), colType)
	}
	if loc == nil {
		loc = time.UTC
	}
	local := t.In(loc)
	day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
	if roundUp && !local.Equal(time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)) {
		day = day.AddDate(0, 0, 1)
	}
	ph := a.Add(day.Format("2006-01-02"))
	switch d.Engine {
	case Postgres:
		return ph + "::date"
	case Snowflake:
		return "TO_DATE(" + ph + ")"
	}
	return ph
}

// TimeParam renders the placeholder of a time bound compared with a column of type colType.
// PostgreSQL would otherwise type the parameter after the column (a date column would truncate
// "now" to midnight and drop today's rows), so the parameter is cast: to timestamptz for
// timestamptz columns, else to timestamp (UTC wall clock, as bound). Date columns bind local dates
// through BindBound instead. Comparing like with like keeps the per-row comparison cheap and
// index-friendly.
func (d Dialect) TimeParam(placeholder, colType string) string {
	if d.Engine != Postgres {
		return placeholder
	}
	if t := strings.ToLower(colType); t == "timestamptz" || strings.HasPrefix(t, "timestamp with time zone") || strings.HasPrefix(t, "timestamp(") && strings.HasSuffix(t, "with time zone") {
		return placeholder + "::timestamptz"
	}
	return placeholder + "::timestamp"
}

// HourBucket is an expression truncating ts to its hour; ParseHourBucket reads the value back.
func (d Dialect) HourBucket(col string, f TimeFormat) string {
	switch d.Engine {
	case Postgres:
		return "date_trunc('hour', " + col + ")"
	case Snowflake:
		return "DATE_TRUNC('HOUR', " + col + ")"
	}
	if f == TimeEpoch {
		return "(CAST(" + col + " AS INTEGER) / 3600 * 3600)"
	}
	// The first 13 characters are the date and the hour in both text layouts; substr is several
	// times cheaper than strftime over millions of rows.
	return "substr(" + col + ", 1, 13)"
}

// ParseTime reads a timestamp as a driver returns it: time.Time, text in the common layouts, or
// epoch seconds. SQLite hour buckets ("2025-12-01 05") are accepted too.
func ParseTime(v any) (time.Time, bool) {
	switch x := v.(type) {
	case time.Time:
		return x.UTC(), true
	case int64:
		return time.Unix(x, 0).UTC(), true
	case float64:
		return time.Unix(0, int64(x*1e9)).UTC(), true
	case []byte:
		return ParseTime(string(x))
	case string:
		s := strings.TrimSpace(x)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && len(s) >= 9 {
			return time.Unix(n, 0).UTC(), true
		}
		if layout := zonelessLayout(s); layout != "" {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UTC(), true
			}
		}
		return parseTimeLayouts(s)
	}
	return time.Time{}, false
}

// parseTimeLayouts tries every layout in order, the first that parses wins.
func parseTimeLayouts(s string) (time.Time, bool) {
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// zonelessLayout picks the one layout a zoneless text timestamp can match by its length and its
// date-time separator, so the shapes every SQLite read returns (hour buckets, minutes, seconds)
// parse in one attempt instead of failing through the list first: each failed time.Parse builds
// an error, which cost a day's run about a tenth of a millisecond in hour buckets alone. It
// chooses nothing a zoned layout earlier in the list could also parse (those need more
// characters), so ParseTime's answer is the list's.
func zonelessLayout(s string) string {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return ""
	}
	if len(s) == 10 {
		return "2006-01-02"
	}
	sep := s[10]
	if sep != ' ' && sep != 'T' {
		return ""
	}
	var layout string
	switch {
	case len(s) == 13:
		layout = "2006-01-02 15"
	case len(s) == 16:
		layout = "2006-01-02 15:04"
	case len(s) == 19, len(s) > 20 && len(s) <= 29 && s[19] == '.' && !strings.ContainsAny(s[20:], "Z+- "):
		layout = "2006-01-02 15:04:05.999999999"
	default:
		return ""
	}
	if sep == 'T' {
		layout = layout[:10] + "T" + layout[11:]
	}
	return layout
}

var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02 15:04:05.999999999 -07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02 15",
	"2006-01-02T15",
	"2006-01-02",
}

// TrustsUnique reports whether declared UNIQUE / PRIMARY KEY constraints are enforced, so a check
// may infer "no duplicates" without scanning. Snowflake accepts them on standard tables but does not
// enforce them (NOT NULL it does enforce, on every engine).
func (d Dialect) TrustsUnique() bool { return d.Engine != Snowflake }

// IsTimestampType reports whether a declared column type holds timestamps (dates included).
// SQLite has no such type: any declared type is accepted and the stored values decide.
func (d Dialect) IsTimestampType(typ string) bool {
	if d.Engine == SQLite {
		return true
	}
	t := strings.ToUpper(typ)
	return strings.HasPrefix(t, "TIMESTAMP") || strings.HasPrefix(t, "DATE") || t == "DATETIME"
}

// FloatSum sums expr as a double on every engine, so a sum of large integers (micros, bytes)
// neither overflows (SQLite's sum raises an error on integer overflow; total() never does) nor
// comes back as PostgreSQL numeric text, and per-hour partial sums add up in Go.
func (d Dialect) FloatSum(expr string) string {
	switch d.Engine {
	case Postgres:
		return "sum(CAST(" + expr + " AS float8))"
	case Snowflake:
		return "SUM(CAST(" + expr + " AS DOUBLE))"
	}
	return "total(" + expr + ")"
}

// FloatSquareSum sums the squares of a numeric column as doubles (with FloatSum and the count it
// gives the standard deviation of partial aggregates that combine across hour buckets).
func (d Dialect) FloatSquareSum(col string) string {
	switch d.Engine {
	case Postgres:
		return "sum(CAST(" + col + " AS float8) * CAST(" + col + " AS float8))"
	case Snowflake:
		return "SUM(CAST(" + col + " AS DOUBLE) * CAST(" + col + " AS DOUBLE))"
	}
	// SQLite turns an overflowing integer product into a real, and total() adds reals.
	return "total(" + col + " * " + col + ")"
}

// Length is the character length of a text expression.
func (d Dialect) Length(expr string) string {
	if d.Engine == Snowflake {
		return "LENGTH(" + expr + ")"
	}
	return "length(" + expr + ")"
}

// Distinct counts distinct non-null values: approximately (HyperLogLog, about 1.6 % error) where
// the engine offers it natively, exactly elsewhere. Exact reports whether the count is exact.
func (d Dialect) Distinct(col string) (expr string, exact bool) {
	if d.Engine == Snowflake {
		return "APPROX_COUNT_DISTINCT(" + col + ")", false
	}
	return "count(DISTINCT " + col + ")", true
}
