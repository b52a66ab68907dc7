package quality

import (
	"time"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// storedTime is what planning learns about how a SQLite column keeps time: its layout, and its
// oldest and newest values (zero when the column is empty or they were not read), which with the
// catalog's row estimate give the table's density in rows per hour.
type storedTime struct {
	format         warehouse.TimeFormat
	oldest, newest time.Time
	sql            string // the statement that read them, and its values
	args           []any
	// freshByFormat is the freshness statement's answer (max(ts) up to now, a raw value or nil)
	// for each layout the column might have had, when the statement was asked to read it.
	freshByFormat map[warehouse.TimeFormat]any
}

// probeAnswer is the freshness statement's answer as the layout read found it (nil newest: no
// row up to now), and that statement.
type probeAnswer struct {
	sql    string
	args   []any
	newest *time.Time
}

// freshAnswer reads one raw answer of the freshness statement as execute does; ok is false when it
// is not a timestamp (the statement is then sent, and says so).
func freshAnswer(raw any) (newest *time.Time, ok bool) {
	if raw == nil {
		return nil, true
	}
	t, ok := warehouse.ParseTime(raw)
	if !ok {
		return nil, false
	}
	return &t, true
}

// timeFormatFunc learns how a SQLite column stores time (it needs a query, so it is injected).
// With upTo set it also answers the freshness statement for that column (sqliteStoredTime).
type timeFormatFunc func(ti *warehouse.TableInfo, col warehouse.Column, upTo *freshUpTo) (storedTime, error)

// hourPlan is how the rows per hour are counted.
type hourPlan int

const (
	// hoursGrouped: the one pass groups every aggregate by the hour bucket.
	hoursGrouped hourPlan = iota
	// hoursFromRanges: the pass is ungrouped, and a second query walks the index on the
	// timestamp hour by hour, counting each hour's range (only hours with rows are visited).
	hoursFromRanges
)

// minRowsPerHourForRanges is the density below which counting ranges over the index costs more
// than sorting the rows: each visited hour costs three index seeks (about 4 µs on SQLite), so
// with fewer than about 8 rows an hour the sorter is cheaper (docs/reference/quality-metrics.md,
// measured plans).
const minRowsPerHourForRanges = 8

// chooseHours decides, from what the catalog says, how the hourly counts are computed.
//
// SQLite has no hash aggregation: a GROUP BY on an hour expression sorts every row of the window
// (with all the pass's aggregates in the sorter's records), which is most of the pass's cost. With
// an index leading on the timestamp, the same counts come from the index: the ungrouped
// aggregate plus one range count per hour with rows. A column of whole days has no hours to count,
// and a table sparser than minRowsPerHourForRanges (by sqlite_stat1's row count over the
// column's time span) sorts faster than it seeks.
//
// PostgreSQL and Snowflake keep the grouped pass: PostgreSQL hash-aggregates while it scans (and
// the pass must read the table for the null counts anyway; measured faster than every split
// formulation), and Snowflake has no indexes: one grouped scan over the micro-partitions the
// window's range prunes to.
func chooseHours(d warehouse.Dialect, ti *warehouse.TableInfo, tsName string, st storedTime) (hourPlan, string) {
	switch {
	case d.Engine == warehouse.Postgres:
		return hoursGrouped, "one pass grouped by date_trunc('hour'): PostgreSQL hash-aggregates while it scans"
	case d.Engine != warehouse.SQLite:
		return hoursGrouped, "one pass grouped by DATE_TRUNC('HOUR') over the micro-partitions the window prunes to"
	case !ti.Indexed(tsName):
		return hoursGrouped, "one pass grouped by hour: no index leads on " + tsName
	case st.format == warehouse.TimeTextDate:
		return hoursGrouped, "one pass: " + tsName + " holds whole days"
	}
	if perHour, ok := rowsPerHour(ti, st); ok && perHour < minRowsPerHourForRanges {
		return hoursGrouped, "one pass grouped by hour: too few rows per hour for range counts to pay"
	}
	return hoursFromRanges, "ungrouped pass, and hourly counts from ranges of the index on " + tsName
}

// rowsPerHour is the table's density: the catalog's row estimate over the column's span.
func rowsPerHour(ti *warehouse.TableInfo, st storedTime) (float64, bool) {
	if ti.RowCount == nil || st.oldest.IsZero() || st.newest.Before(st.oldest) {
		return 0, false
	}
	hours := st.newest.Sub(st.oldest).Hours() + 1
	return float64(*ti.RowCount) / hours, true
}

// scanWindowShare is the share of a SQLite table's time span a window must cover for its
// statements to scan the table rather than range over the index on the timestamp. Measured on
// 1,000,000 rows: stored in time order, the index range and the scan cost the same over the whole
// table (and the range wins below); stored out of time order, looking each row up through the
// index cost 10× the scan over the whole table and already 1.5× at a tenth of it. From four
// fifths up the scan is never the slower (docs/reference/quality-metrics.md, measured plans).
const scanWindowShare = 0.8

// windowShare estimates the share of the rows in [since, until) from the column's oldest and
// newest values, as if rows were spread evenly over the span; 0 when the span is unknown.
func windowShare(st storedTime, since, until time.Time) float64 {
	if st.oldest.IsZero() || st.newest.Before(st.oldest) {
		return 0
	}
	lo, hi := since, until
	if st.oldest.After(lo) {
		lo = st.oldest
	}
	if st.newest.Before(hi) {
		hi = st.newest
	}
	span := st.newest.Sub(st.oldest)
	if span == 0 {
		if !st.oldest.Before(since) && st.oldest.Before(until) {
			return 1
		}
		return 0
	}
	if !hi.After(lo) {
		return 0
	}
	return float64(hi.Sub(lo)) / float64(span)
}

// buildHourRanges writes the hourly counts as range counts over the index on the timestamp
// (SQLite). A recursive walk jumps from each hour with rows to the next one (the smallest value at
// or after the next hour's start, found by one index seek), so empty hours cost nothing, and each
// visited hour is counted over its range, clipped to the window. Every comparison is on the bare
// column, so each one is an index range; the hour labels are those of the grouped pass.
func (p *plan) buildHourRanges() *query {
	a := p.d.NewArgs()
	start, next := hourStartSQL(p.tf), nextHourSQL(p.tf)
	// min(ts) alone in its query: SQLite then reads it off the index instead of scanning.
	first := "(SELECT " + start("min("+p.ts+")") + " FROM " + p.table + " WHERE " + p.ts + " >= " + p.bound(a, p.since, false) + " AND " + p.ts + " < " + p.bound(a, p.until, true) + ")"
	step := "(SELECT " + start("min("+p.ts+")") + " FROM " + p.table + " WHERE " + p.ts + " >= " + next("dw_h.h") + " AND " + p.ts + " < " + p.bound(a, p.until, true) + ")"
	lo, hi := p.bound(a, p.since, false), p.bound(a, p.until, true)
	count := "(SELECT count(*) FROM " + p.table + " WHERE " + p.ts + " >= max(dw_h.h, " + lo + ") AND " + p.ts + " < min(" + next("dw_h.h") + ", " + hi + "))"
	return &query{sql: "WITH RECURSIVE dw_h(h) AS (SELECT " + first + " UNION ALL SELECT " + step + " FROM dw_h WHERE dw_h.h IS NOT NULL) " +
		"SELECT dw_h.h AS hour_bucket, " + count + " FROM dw_h WHERE dw_h.h IS NOT NULL", args: a.Vals}
}

// hourStartSQL is the hour holding a stored value, as a bound in the column's layout. For text it
// is the 13-character prefix of date and hour (the grouped pass's bucket): every value of that hour,
// whatever its precision or suffix, sorts at or after the prefix and before the next hour's, so
// the ranges count exactly what the grouped pass would.
func hourStartSQL(f warehouse.TimeFormat) func(string) string {
	if f == warehouse.TimeEpoch {
		// Floor to the hour below, negative (pre-1970) and fractional seconds included: CAST
		// truncates towards zero, so step down by one when that rounded up.
		return func(v string) string {
			fl := "(CAST(" + v + " AS INTEGER) - (" + v + " < CAST(" + v + " AS INTEGER)))"
			return "(" + fl + " - ((" + fl + " % 3600) + 3600) % 3600)"
		}
	}
	return func(v string) string { return "substr(" + v + ", 1, 13)" }
}

// nextHourSQL is the bound of the hour after the hour bound h, in the same form.
func nextHourSQL(f warehouse.TimeFormat) func(string) string {
	switch f {
	case warehouse.TimeEpoch:
		return func(h string) string { return "(" + h + " + 3600)" }
	case warehouse.TimeTextT:
		return func(h string) string { return "strftime('%Y-%m-%dT%H', " + h + " || ':00', '+1 hour')" }
	}
	return func(h string) string { return "strftime('%Y-%m-%d %H', " + h + " || ':00', '+1 hour')" }
}
