package quality

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// query is one statement with its bound values.
type query struct {
	sql  string
	args []any
}

// scanCol is a column the null-rate check measures.
type scanCol struct {
	name, quoted string
	notNull      bool // declared NOT NULL: 0 % without a query
	scanIndex    int  // position among the profile's count(col) terms
}

type dupPlan struct {
	inferred      string // the enforced constraint that makes a query unnecessary
	count, sample *query
}

type customPlan struct {
	name          string
	count, sample *query
}

// plan is the set of queries one run sends. The profile is the one pass over the window that
// answers volume, hourly volume, every null rate and the newest timestamp at once; uniqueness and
// custom SQL are separate queries because count(DISTINCT) inside the pass would make the whole
// pass as slow as the distinct (on SQLite four separate queries beat one pass 3.2×: docs/reference/testing.md, performance anchors),
// and an enforced UNIQUE or NOT NULL constraint answers its check with no query at all.
type plan struct {
	ti       *warehouse.TableInfo
	checks   []Check
	d        warehouse.Dialect
	table    string // quoted
	tsName   string
	ts       string // quoted
	tsType   string // as declared
	tf       warehouse.TimeFormat
	since    time.Time
	until    time.Time
	loc      *time.Location // the window's zone: a date column holds its local days
	scanCols []scanCol
	nullCols []scanCol
	keyNames []string
	// metricCols are the columns the column check measures in the pass; distinct holds their
	// distinct counts, the one column metric that needs a scan of its own.
	metricCols []metricCol
	distinct   *query
	dim        *dimPlan
	recon      *reconPlan
	newestAt   int // position of max(ts) in the pass's row, 0 when not computed
	// loadQ reads the newest load time; a separate query because rows loaded late carry event
	// times outside the window, and they are exactly the ones that show loads still arrive.
	loadName string
	loadQ    *query

	profile *query // one pass (grouped by hour unless hourly counts them): rows, count(col) per null-rate column, max(ts)
	// hours says how the rows per hour are counted (chosen from the catalog, why in hoursWhy);
	// hourly is the range-count query when they are not counted by the pass itself.
	hours    hourPlan
	hoursWhy string
	hourly   *query
	// scanWindow says the window holds most of the table (scanWindowShare), so its range is
	// written on +ts: SQLite then scans the table instead of looking every row up through the
	// index on the timestamp, which for rows not stored in time order costs several times a scan.
	scanWindow bool
	// fresh reads the newest timestamp; freshFromProfile says the profile's max already answers it
	// (no index on the column and the window ends now), so fresh runs only when the window is empty.
	fresh            *query
	freshFromProfile bool
	// probe answers freshness from the timestamp's layout read (SQLite), when set: fresh is not sent.
	probe  *probeAnswer
	dup    *dupPlan
	custom []customPlan
	// stmts runs the planned statements: the run's warehouse snapshot (Run sets it). A custom
	// assertion is the caller's SQL and a sample is read after its verdict, so both go through
	// the warehouse handle, each statement in its own transaction.
	stmts statements
}

// statements is what runs a plan's statements: a warehouse.Snapshot (or the handle itself).
type statements interface {
	QueryRow(ctx context.Context, query string, args []any, dest ...any) error
	QueryAll(ctx context.Context, query string, args []any, max int) (warehouse.Rows, error)
}

func (p *plan) has(c Check) bool { return slices.Contains(p.checks, c) }

// window renders the half-open window predicate with bound values.
func (p *plan) window(a *warehouse.Args) string {
	col := p.ts
	if p.scanWindow {
		col = "+" + p.ts // unary plus: the same value, but no index is used for the comparison
	}
	return col + " >= " + p.bound(a, p.since, false) + " AND " + col + " < " + p.bound(a, p.until, true)
}

// bound binds one window bound (a local calendar date for a date column; roundUp for an
// exclusive end) and returns its placeholder.
func (p *plan) bound(a *warehouse.Args, t time.Time, roundUp bool) string {
	return p.d.BindBound(a, p.tf, p.tsType, t, p.loc, roundUp)
}

func (p *plan) queryCount() int {
	n := 0
	if p.profile != nil {
		n++
	}
	if p.hourly != nil {
		n++
	}
	if p.has(Freshness) && (p.probe != nil || p.fresh != nil && !p.freshFromProfile) {
		n++
	}
	if p.has(Uniqueness) && p.dup != nil && p.dup.inferred == "" {
		n++
	}
	if p.has(Custom) {
		n += len(p.custom)
	}
	if p.distinct != nil {
		n++
	}
	if p.dim != nil {
		n++
	}
	if p.loadQ != nil {
		n++
	}
	if p.recon != nil {
		n++
	}
	return n
}

// profileSQL is the SQL shown for results the profile answered.
func (p *plan) profileSQL() string {
	if p.profile == nil {
		return ""
	}
	return p.profile.sql
}

// volumeSQL is the SQL shown for the volume results: the pass, and the hourly range counts when
// they are a query of their own.
func (p *plan) volumeSQL() string {
	if p.hourly == nil {
		return p.profileSQL()
	}
	return p.profileSQL() + ";\n" + p.hourly.sql
}

// planScope is where planning reads the catalog and the timestamp's layout: the run's snapshot
// (Run), so that what the plan learnt is what its statements then read, or the handle.
type planScope interface {
	statements
	Resolve(ctx context.Context, table string) (*warehouse.TableInfo, error)
}

func (c *Checker) plan(ctx context.Context, sc planScope, ti *warehouse.TableInfo, req Request, checks []Check, now time.Time) (*plan, error) {
	tf := func(ti *warehouse.TableInfo, col warehouse.Column, upTo *freshUpTo) (storedTime, error) {
		return c.sqliteStoredTime(ctx, sc, ti, col, upTo)
	}
	p, err := buildPlan(c.wh.Dialect, ti, req, checks, now, c.wh.MaxSample(), tf)
	if err != nil || p.recon == nil {
		return p, err
	}
	up, err := sc.Resolve(ctx, p.recon.spec.Upstream)
	if err != nil {
		return nil, fmt.Errorf("reconcile.upstream: %w", err)
	}
	return p, p.buildReconcile(up, tf)
}

// buildPlan is the pure part of planning: the same inputs always give the same SQL, which the
// golden tests pin per dialect.
func buildPlan(d warehouse.Dialect, ti *warehouse.TableInfo, req Request, checks []Check, now time.Time, maxSample int, timeFormat timeFormatFunc) (*plan, error) {
	qt, err := d.QuoteTable(ti.Ref())
	if err != nil {
		return nil, err
	}
	p := &plan{ti: ti, checks: checks, d: d, table: qt, since: req.Window.Since, until: req.Window.Until, loc: req.Window.Location()}
	var probed storedTime // what the SQLite layout read found (its newest value answers freshness)
	needsWindow := slices.Contains(checks, Volume) || slices.Contains(checks, VolumeByHour) || slices.Contains(checks, NullRate) || slices.Contains(checks, Uniqueness) ||
		slices.Contains(checks, Column) || slices.Contains(checks, Dimension) || slices.Contains(checks, Reconcile)
	// A custom rule alone reads the window only when its SQL asks for it or a column is named.
	customWindow := slices.Contains(checks, Custom) && (req.TimestampColumn != "" || slices.ContainsFunc(req.Assertions, func(a Assertion) bool {
		return strings.Contains(a.SQL, "{{window_")
	}))
	if needsWindow || slices.Contains(checks, Freshness) || customWindow {
		col, err := timestampColumn(d, ti, req.TimestampColumn)
		if err != nil {
			return nil, err
		}
		p.tsName, p.ts, p.tsType = col.Name, mustQuote(d, col.Name), col.Type
		var st storedTime
		if d.Engine == warehouse.SQLite {
			// Only the window's own column answers freshness; its layout read can carry the answer.
			var upTo *freshUpTo
			if slices.Contains(checks, Freshness) {
				upTo = &freshUpTo{now: now, loc: req.Window.Location()}
			}
			if st, err = timeFormat(ti, col, upTo); err != nil {
				return nil, err
			}
			p.tf = st.format
		}
		probed = st
		p.hours, p.hoursWhy = chooseHours(d, ti, col.Name, st)
		p.scanWindow = d.Engine == warehouse.SQLite && ti.Indexed(col.Name) && windowShare(st, p.since, p.until) >= scanWindowShare
	}
	names := req.Columns
	if len(names) == 0 {
		for _, col := range ti.Columns {
			names = append(names, col.Name)
		}
	}
	// Null-rate columns: NOT NULL ones are answered by the constraint, the rest counted in the pass.
	if slices.Contains(checks, NullRate) {
		for _, n := range names {
			col, err := ti.Column(n)
			if err != nil {
				return nil, err
			}
			sc := scanCol{name: col.Name, quoted: mustQuote(d, col.Name), notNull: !col.Nullable}
			if !sc.notNull {
				sc.scanIndex = len(p.scanCols)
				p.scanCols = append(p.scanCols, sc)
			}
			p.nullCols = append(p.nullCols, sc)
		}
	}
	if slices.Contains(checks, Column) {
		if err := p.chooseColumnMetrics(ti, names, len(req.Columns) > 0, req.ColumnMetrics); err != nil {
			return nil, err
		}
	}
	if slices.Contains(checks, Reconcile) {
		if req.Reconcile == nil {
			return nil, fmt.Errorf("the reconciliation check needs reconcile.upstream, the table the model is built from")
		}
		if err := p.prepareReconcile(ti, *req.Reconcile); err != nil {
			return nil, err
		}
	}
	// A window that ends "now" (within a minute: the tool read the clock a moment before the run
	// did) already holds the newest rows, so the pass's max answers freshness, unless an index
	// answers max(ts) without a scan or Snowflake answers it from partition metadata.
	p.freshFromProfile = needsWindow && p.has(Freshness) && !ti.Indexed(p.tsName) && d.Engine != warehouse.Snowflake && !p.until.Before(now.Add(-time.Minute))
	if needsWindow {
		p.buildProfile()
		p.buildDistinct()
	}
	if slices.Contains(checks, Dimension) {
		if req.Dimension == nil {
			return nil, fmt.Errorf("the dimension check needs dimension.column, the key to group by (e.g. account_id)")
		}
		if err := p.buildDimension(ti, *req.Dimension); err != nil {
			return nil, err
		}
	}
	if slices.Contains(checks, Freshness) {
		a := d.NewArgs()
		q := "SELECT max(" + p.ts + ") FROM " + qt + " WHERE " + p.ts + " <= " + p.bound(a, now, false)
		if d.Engine == warehouse.Snowflake {
			// MAX over a whole column is answered from micro-partition metadata; a filter would scan.
			// (Not LAST_ALTERED: it moves on DDL and maintenance; docs/reference/backends.md, Snowflake metadata.)
			q, a = "SELECT MAX("+p.ts+") FROM "+qt, d.NewArgs()
		}
		p.fresh = &query{sql: q, args: a.Vals}
		// On SQLite with an index the layout read also answered this statement, for each layout
		// the column might have had, in the same snapshot as the run's statements: the answer for
		// the layout it has is this statement's, and it is not sent.
		if fresh, ok := probed.freshByFormat[p.tf]; ok && d.Engine == warehouse.SQLite && !p.freshFromProfile {
			if newest, ok := freshAnswer(fresh); ok {
				p.probe = &probeAnswer{sql: probed.sql, args: probed.args, newest: newest}
			}
		}
	}
	if slices.Contains(checks, Freshness) && req.LoadTimestampColumn != "" {
		if err := p.buildLoad(ti, req.LoadTimestampColumn, now, timeFormat); err != nil {
			return nil, err
		}
	}
	if slices.Contains(checks, Uniqueness) && len(req.KeyColumns) > 0 {
		if err := p.buildUniqueness(ti, req.KeyColumns, maxSample); err != nil {
			return nil, err
		}
	}
	if slices.Contains(checks, Custom) {
		for _, a := range req.Assertions {
			cp, err := p.buildCustom(a, maxSample)
			if err != nil {
				return nil, err
			}
			p.custom = append(p.custom, cp)
		}
	}
	return p, nil
}

// buildProfile writes the one pass. With the volume check and no index to count the hours from
// (chooseHours), grouping the per-column counts by hour costs no more than grouping the row count
// alone: on SQLite the GROUP BY sorter dominates either way, so a separate ungrouped aggregate plus
// a grouped hourly count is slower than the single grouped pass (BenchmarkQualityCheck);
// PostgreSQL hash-aggregates the pass in one scan. Every column metric's partial aggregate adds up
// across the hour buckets.
func (p *plan) buildProfile() {
	bucket := p.d.HourBucket(p.ts, p.tf)
	terms := []string{"count(*)"}
	for _, sc := range p.scanCols {
		terms = append(terms, "count("+sc.quoted+")")
	}
	// The newest timestamp answers freshness; nothing else reads it, so a pass whose freshness
	// comes from elsewhere does not compare every row's timestamp for it.
	if p.freshFromProfile {
		terms = append(terms, "max("+p.ts+")")
		p.newestAt = len(terms)
	}
	// Column metrics append their partial aggregates; an expression already in the pass (a null
	// count the null-rate check asked for) is shared, not repeated.
	at := map[string]int{}
	for i, t := range terms {
		at[t] = i + 1 // the hour bucket is column 0
	}
	add := func(expr string) int {
		if i, ok := at[expr]; ok {
			return i
		}
		terms = append(terms, expr)
		at[expr] = len(terms)
		return len(terms)
	}
	for i := range p.metricCols {
		mc := &p.metricCols[i]
		mc.terms = map[aggregate]int{}
		for _, m := range mc.metrics {
			for _, agg := range needs[m] {
				expr := aggregateSQL(p.d, agg, mc.quoted)
				if agg == aggCount && mc.notNull {
					expr = "count(*)" // a NOT NULL column's count is the row count, already in the pass
				}
				mc.terms[agg] = add(expr)
			}
		}
	}
	if p.recon != nil && p.recon.column != "" {
		p.recon.sumAt = add(p.d.FloatSum(mustQuote(p.d, p.recon.column)))
	}
	a := p.d.NewArgs()
	// GROUP BY 1 (positional, understood by all three engines) and no ORDER BY: the hours are
	// sorted in Go, so the engine is never asked for a second sort.
	// Without the volume check nothing reads the hours, so the pass need not group at all (on
	// SQLite the GROUP BY sorter is most of the cost of an otherwise plain aggregate); when the
	// index counts the hours (chooseHours), the pass need not group either.
	volume := p.has(Volume) || p.has(VolumeByHour)
	if !volume || p.hours == hoursFromRanges {
		p.profile = &query{sql: "SELECT NULL AS hour_bucket, " + strings.Join(terms, ", ") + " FROM " + p.table + " WHERE " + p.window(a), args: a.Vals}
		if volume {
			p.hourly = p.buildHourRanges()
		}
		return
	}
	p.profile = &query{sql: "SELECT " + bucket + " AS hour_bucket, " + strings.Join(terms, ", ") + " FROM " + p.table + " WHERE " + p.window(a) +
		" GROUP BY 1", args: a.Vals}
}

func (p *plan) buildLoad(ti *warehouse.TableInfo, name string, now time.Time, timeFormat timeFormatFunc) error {
	col, err := timestampColumn(p.d, ti, name)
	if err != nil {
		return fmt.Errorf("load_timestamp_column: %w", err)
	}
	if col.Name == p.tsName {
		return fmt.Errorf("load_timestamp_column %s is the event time column too; name the column that records when rows were loaded", col.Name)
	}
	q := mustQuote(p.d, col.Name)
	tf := warehouse.TimeNative
	if p.d.Engine == warehouse.SQLite {
		st, err := timeFormat(ti, col, nil)
		if err != nil {
			return err
		}
		tf = st.format
	}
	a := p.d.NewArgs()
	sqlText := "SELECT max(" + q + ") FROM " + p.table + " WHERE " + q + " <= " + p.d.BindBound(a, tf, col.Type, now, p.loc, false)
	if p.d.Engine == warehouse.Snowflake {
		sqlText, a = "SELECT MAX("+q+") FROM "+p.table, p.d.NewArgs() // answered from partition metadata
	}
	p.loadName, p.loadQ = col.Name, &query{sql: sqlText, args: a.Vals}
	return nil
}

// chooseColumnMetrics picks, per column, the requested metrics its type allows (every metric but
// distinct when none is requested). A column or metric named explicitly that nothing can measure
// is an error, not a silent pass.
func (p *plan) chooseColumnMetrics(ti *warehouse.TableInfo, names []string, named bool, want []ColumnMetric) error {
	used := map[ColumnMetric]bool{}
	var unfit error
	for _, n := range names {
		col, err := ti.Column(n)
		if err != nil {
			return err
		}
		if col.Name == p.tsName && !named {
			continue // the window column's values are the window itself
		}
		kind := kindOf(p.d, col.Type)
		mc := metricCol{name: col.Name, quoted: mustQuote(p.d, col.Name), kind: kind, notNull: !col.Nullable, distinctAt: -1}
		for _, mk := range metricKinds {
			if !slices.Contains(mk.kinds, kind) || (len(want) == 0 && mk.m == Distinct) || (len(want) > 0 && !slices.Contains(want, mk.m)) {
				continue
			}
			mc.metrics = append(mc.metrics, mk.m)
			used[mk.m] = true
		}
		if len(mc.metrics) == 0 {
			if named && unfit == nil {
				unfit = fmt.Errorf("column %s is %s (%s): none of the column metrics %s applies to it", col.Name, col.Type, kind, metricList(want))
			}
			continue
		}
		p.metricCols = append(p.metricCols, mc)
	}
	for _, m := range want {
		if !used[m] {
			return fmt.Errorf("column metric %s applies to none of the measured columns (%s)", m, strings.Join(names, ", "))
		}
	}
	if unfit != nil {
		return unfit
	}
	if len(p.metricCols) == 0 {
		return fmt.Errorf("the column check found no numeric, text or boolean column to measure in %s; name columns in columns", ti.Ref())
	}
	return nil
}

func metricList(ms []ColumnMetric) string {
	if len(ms) == 0 {
		return "for its type"
	}
	var s []string
	for _, m := range ms {
		s = append(s, string(m))
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// buildDistinct writes the one query answering every distinct count: approximate where the
// engine has HyperLogLog built in, exact elsewhere.
func (p *plan) buildDistinct() {
	var terms []string
	for i := range p.metricCols {
		mc := &p.metricCols[i]
		if slices.Contains(mc.metrics, Distinct) {
			expr, _ := p.d.Distinct(mc.quoted)
			mc.distinctAt = len(terms)
			terms = append(terms, expr)
		}
	}
	if len(terms) == 0 {
		return
	}
	a := p.d.NewArgs()
	p.distinct = &query{sql: "SELECT " + strings.Join(terms, ", ") + " FROM " + p.table + " WHERE " + p.window(a), args: a.Vals}
}

func (p *plan) buildUniqueness(ti *warehouse.TableInfo, keys []string, limit int) error {
	var quoted []string
	for _, k := range keys {
		col, err := ti.Column(k)
		if err != nil {
			return err
		}
		if slices.Contains(p.keyNames, col.Name) {
			continue
		}
		p.keyNames = append(p.keyNames, col.Name)
		quoted = append(quoted, mustQuote(p.d, col.Name))
	}
	p.dup = &dupPlan{}
	if p.d.TrustsUnique() && ti.UniqueCovers(p.keyNames) {
		p.dup.inferred = fmt.Sprintf("a UNIQUE or PRIMARY KEY constraint the engine enforces covers (%s)", strings.Join(p.keyNames, ", "))
		return nil
	}
	a := p.d.NewArgs()
	if len(quoted) == 1 {
		p.dup.count = &query{sql: "SELECT count(" + quoted[0] + ") - count(DISTINCT " + quoted[0] + ") FROM " + p.table + " WHERE " + p.window(a), args: a.Vals}
	} else {
		notNull := strings.Join(quoted, " IS NOT NULL AND ") + " IS NOT NULL"
		p.dup.count = &query{sql: "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM " + p.table + " WHERE " + p.window(a) + " AND " + notNull +
			" GROUP BY " + strings.Join(quoted, ", ") + " HAVING count(*) > 1) dw_dups", args: a.Vals}
	}
	a2 := p.d.NewArgs()
	notNull := strings.Join(quoted, " IS NOT NULL AND ") + " IS NOT NULL"
	p.dup.sample = &query{sql: "SELECT " + strings.Join(quoted, ", ") + ", count(*) AS copies FROM " + p.table + " WHERE " + p.window(a2) + " AND " + notNull +
		" GROUP BY " + strings.Join(quoted, ", ") + " HAVING count(*) > 1 ORDER BY count(*) DESC LIMIT " + fmt.Sprint(limit), args: a2.Vals}
	return nil
}

// buildCustom checks the assertion is one read-only query, then wraps it: a bounded count of the
// violating rows and, for a failure, a bounded sample of them.
func (p *plan) buildCustom(as Assertion, limit int) (customPlan, error) {
	if err := warehouse.ValidateIdent(as.Name); err != nil {
		return customPlan{}, fmt.Errorf("assertion name: %w", err)
	}
	body, err := warehouse.CheckReadOnlySQL(as.SQL)
	if err != nil {
		return customPlan{}, fmt.Errorf("assertion %s: %w", as.Name, err)
	}
	if strings.Contains(body, "{{window_") && p.tsName == "" {
		return customPlan{}, fmt.Errorf("assertion %s uses {{window_start}}/{{window_end}} but no timestamp column is set", as.Name)
	}
	bind := func(a *warehouse.Args) string {
		s := body
		for strings.Contains(s, "{{window_start}}") || strings.Contains(s, "{{window_end}}") {
			i, j := strings.Index(s, "{{window_start}}"), strings.Index(s, "{{window_end}}")
			if i >= 0 && (j < 0 || i < j) {
				s = s[:i] + p.bound(a, p.since, false) + s[i+len("{{window_start}}"):]
			} else {
				s = s[:j] + p.bound(a, p.until, true) + s[j+len("{{window_end}}"):]
			}
		}
		return s
	}
	a := p.d.NewArgs()
	count := &query{sql: "SELECT count(*) FROM (" + bind(a) + ") dw_violations", args: a.Vals}
	a2 := p.d.NewArgs()
	sample := &query{sql: "SELECT * FROM (" + bind(a2) + ") dw_violations LIMIT " + fmt.Sprint(limit), args: a2.Vals}
	return customPlan{name: as.Name, count: count, sample: sample}, nil
}

// timestampColumn resolves the window column: the named one, or the only timestamp-typed column.
func timestampColumn(d warehouse.Dialect, ti *warehouse.TableInfo, name string) (warehouse.Column, error) {
	if name != "" {
		col, err := ti.Column(name)
		if err != nil {
			return col, err
		}
		if !d.IsTimestampType(col.Type) {
			return col, fmt.Errorf("%w: column %s of %s is %s, not a timestamp or date: name a timestamp column in timestamp_column", warehouse.ErrTypeMismatch, col.Name, ti.Ref(), col.Type)
		}
		return col, nil
	}
	var cands []warehouse.Column
	for _, col := range ti.Columns {
		t := strings.ToUpper(col.Type)
		if (d.Engine != warehouse.SQLite && d.IsTimestampType(col.Type)) || (d.Engine == warehouse.SQLite && (strings.Contains(t, "TIME") || strings.Contains(t, "DATE"))) {
			cands = append(cands, col)
		}
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	var names []string
	for _, c := range cands {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return warehouse.Column{}, fmt.Errorf("%w: %s has no timestamp-typed column; name the column the window is read on in timestamp_column", ErrNoTimestamp, ti.Ref())
	}
	return warehouse.Column{}, fmt.Errorf("%w: %s has several timestamp columns (%s); choose one in timestamp_column", ErrNoTimestamp, ti.Ref(), strings.Join(names, ", "))
}

// freshUpTo is what the freshness statement bounds the newest timestamp by: now, in the
// window's zone for a column of dates.
type freshUpTo struct {
	now time.Time
	loc *time.Location
}

// sqliteLayouts are the layouts a SQLite timestamp column may have, in the order the layout read
// answers the freshness statement for them.
var sqliteLayouts = [...]warehouse.TimeFormat{warehouse.TimeTextSpace, warehouse.TimeTextT, warehouse.TimeEpoch, warehouse.TimeTextDate}

// sqliteStoredTime learns how the column keeps time (text with a space or a T, a bare date, or
// epoch seconds), because SQLite compares what is stored, not what is declared. It reads the
// smallest and the largest value: SQLite orders numbers before text, so a column mixing epoch
// numbers and text (which would compare wrongly, with no error) shows one of each, and so does a
// column whose text layouts differ at either end. Both must agree. With an index leading on the
// column each value is one index seek (two single min/max queries); without one, one scan reads
// both (two would scan twice). With an index and upTo set, the same statement also answers the
// freshness statement, `max(ts) WHERE ts <= bound`, once with the bound each layout would bind
// (one more seek each): the layout is not known until the statement returns, and the answer for
// the one found is exactly what the freshness statement would return (the same comparison, the
// column's own collation, the same snapshot), so freshness needs no statement of its own.
func (c *Checker) sqliteStoredTime(ctx context.Context, sc statements, ti *warehouse.TableInfo, col warehouse.Column, upTo *freshUpTo) (storedTime, error) {
	table, err := c.wh.Dialect.QuoteTable(ti.Ref())
	if err != nil {
		return storedTime{}, err
	}
	ts, name := mustQuote(c.wh.Dialect, col.Name), col.Name
	q := "SELECT CAST(min(" + ts + ") AS TEXT), typeof(min(" + ts + ")), CAST(max(" + ts + ") AS TEXT), typeof(max(" + ts + ")) FROM " + table
	a := c.wh.Dialect.NewArgs()
	freshAt := 4 // the column of the first layout's freshness answer, when asked
	if ti.Indexed(col.Name) {
		outer, inner := "CAST(lo AS TEXT), typeof(lo), CAST(hi AS TEXT), typeof(hi)", "(SELECT min("+ts+") FROM "+table+") AS lo, (SELECT max("+ts+") FROM "+table+") AS hi"
		if upTo != nil {
			for i, f := range sqliteLayouts {
				bound := c.wh.Dialect.BindBound(a, f, col.Type, upTo.now, upTo.loc, false)
				outer += fmt.Sprintf(", f%d", i)
				inner += fmt.Sprintf(", (SELECT max(%s) FROM %s WHERE %s <= %s) AS f%d", ts, table, ts, bound, i)
			}
		}
		q = "SELECT " + outer + " FROM (SELECT " + inner + ")"
	}
	rows, err := sc.QueryAll(ctx, q, a.Vals, 1)
	if err != nil {
		return storedTime{}, err
	}
	if len(rows.Rows) == 0 || rows.Rows[0][0] == nil {
		return storedTime{format: warehouse.TimeTextSpace}, nil // no values yet: any layout compares correctly with nothing
	}
	r := rows.Rows[0]
	lo, err := sqliteValueFormat(name, r[0], fmt.Sprint(r[1]))
	if err != nil {
		return storedTime{}, err
	}
	hi, err := sqliteValueFormat(name, r[2], fmt.Sprint(r[3]))
	if err != nil {
		return storedTime{}, err
	}
	if lo != hi {
		return storedTime{}, fmt.Errorf("%w: column %s mixes time formats (smallest value %q is %s, largest %q is %s), so window comparisons would be wrong; store one format (UTC text like 2025-12-01 05:00:00, or epoch seconds) or name another column in timestamp_column",
			warehouse.ErrTypeMismatch, name, fmt.Sprint(r[0]), timeFormatName(lo), fmt.Sprint(r[2]), timeFormatName(hi))
	}
	st := storedTime{format: lo, sql: q, args: a.Vals}
	if len(r) == freshAt+len(sqliteLayouts) {
		st.freshByFormat = map[warehouse.TimeFormat]any{}
		for i, f := range sqliteLayouts {
			st.freshByFormat[f] = r[freshAt+i]
		}
	}
	oldest, ok1 := warehouse.ParseTime(r[0])
	newest, ok2 := warehouse.ParseTime(r[2])
	if ok1 && ok2 {
		st.oldest, st.newest = oldest, newest
	}
	return st, nil
}

// sqliteValueFormat classifies one stored value by its SQLite storage class and text layout.
func sqliteValueFormat(name string, v any, typ string) (warehouse.TimeFormat, error) {
	switch typ {
	case "integer", "real":
		return warehouse.TimeEpoch, nil
	case "text":
		s := fmt.Sprint(v)
		if _, ok := warehouse.ParseTime(s); !ok {
			return 0, fmt.Errorf("%w: column %s holds %q, not a timestamp (store UTC text like 2025-12-01 05:00:00 or epoch seconds)", warehouse.ErrTypeMismatch, name, s)
		}
		if len(s) == 10 {
			return warehouse.TimeTextDate, nil
		}
		if len(s) > 10 && s[10] == 'T' {
			return warehouse.TimeTextT, nil
		}
		return warehouse.TimeTextSpace, nil
	}
	return 0, fmt.Errorf("%w: column %s holds %s values, not timestamps", warehouse.ErrTypeMismatch, name, typ)
}

func timeFormatName(f warehouse.TimeFormat) string {
	switch f {
	case warehouse.TimeEpoch:
		return "epoch seconds"
	case warehouse.TimeTextDate:
		return "a date"
	case warehouse.TimeTextT:
		return "text with a T"
	}
	return "text with a space"
}

func mustQuote(d warehouse.Dialect, name string) string {
	q, err := d.Quote(name)
	if err != nil {
		// Names reaching here came from the catalog; an invalid one is a bug, not input.
		panic(fmt.Sprintf("quality: catalog returned an invalid identifier: %v", err))
	}
	return q
}
