package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/sqlparse"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// Value comparison statuses.
const (
	ValuesPass        = "pass"
	ValuesFail        = "fail"
	ValuesNotPossible = "not_possible"
)

// Bounds of a value comparison: how many closed windows of an aggregating statement it
// recomputes, how many warehouse rows it reads, and how many compared rows it reports.
const (
	maxValueWindows   = 6
	maxValueRows      = 20000
	maxReportedGroups = 20
)

// ValueCheck is verify_incident's comparison of the restored values with what the source says:
// the corrected statement's column recomputed from a bounded sample of its topic (each record
// decoded with its writer's schema, the plan's mapping applied) against the warehouse rows of the
// same keys and windows. Presence checks pass on a wrong factor; this does not.
type ValueCheck struct {
	Status     string       `json:"status" jsonschema:"pass, fail (the incident stays open), or not_possible (why says what was missing)"`
	Asset      string       `json:"asset,omitempty"`
	Column     string       `json:"column,omitempty"`
	Topic      string       `json:"topic,omitempty"`
	Expression string       `json:"expression,omitempty" jsonschema:"The corrected statement's select item the column is recomputed with"`
	Key        []string     `json:"key,omitempty" jsonschema:"The columns rows are matched on (the statement's group key or its pass-through columns)"`
	Records    int          `json:"records,omitempty" jsonschema:"Topic records read for the recomputation"`
	Compared   int          `json:"compared"`
	Mismatched int          `json:"mismatched"`
	Groups     []ValueGroup `json:"groups,omitempty" jsonschema:"Compared rows, mismatches first (at most 20)"`
	Why        string       `json:"why"`
}

// ValueGroup is one compared row: its key, the value recomputed from the topic and the one the
// warehouse holds (absent: no such row).
type ValueGroup struct {
	Key       string   `json:"key"`
	Source    *float64 `json:"source"`
	Warehouse *float64 `json:"warehouse"`
	Records   int      `json:"records" jsonschema:"Topic records behind the source value"`
	Match     bool     `json:"match"`
}

func notPossible(format string, args ...any) ValueCheck {
	return ValueCheck{Status: ValuesNotPossible, Why: "value comparison not possible: " + fmt.Sprintf(format, args...)}
}

// valueShape is what the comparison reads out of a corrected statement.
type valueShape struct {
	topic  string
	column string // the output column compared
	value  sqlparse.Expr
	agg    string // SUM, COUNT, MIN, MAX, AVG; "" for a per-record column (summed per key)
	star   bool   // COUNT(*)
	where  sqlparse.Expr
	keys   []outKey
	// window is the TUMBLE size and timeField the descriptor's field ("" when not windowed).
	window    time.Duration
	timeField string
	text      string
}

// outKey is one output column rows are matched on: a record field, or the window's start or end.
type outKey struct {
	column string
	field  string
	window string // "start", "end" or ""
}

// compareValues recomputes the restored column from the topic and compares it with the warehouse.
// Any reason it cannot is a not_possible result saying what was missing, never an error: the
// presence checks still judge the incident.
func (s *Service) compareValues(ctx context.Context, inc incidents.Incident) ValueCheck {
	plan, err := plans.Latest(ctx, s.d.Store, inc.ID)
	if errors.Is(err, plans.ErrNoPlan) {
		return notPossible("incident #%d has no remediation plan, so nothing says how restored values derive from the source", inc.ID)
	}
	if err != nil {
		return notPossible("reading the plan: %v", err)
	}
	step, ok := correctedStatement(plan)
	if !ok {
		return notPossible("plan #%d has no corrected statement whose SQL is known (none, or one that waits for a mapping), so there is no rule to recompute restored values with", plan.ID)
	}
	sqlText, _ := step.Payload["sql"].(string)
	shape, why := readShape(sqlText, step.Mappings, plan.Checks)
	if why != "" {
		return notPossible("the corrected statement of step %d: %s", step.Order, why)
	}
	out := ValueCheck{Topic: shape.topic, Column: shape.column, Expression: shape.text}
	for _, k := range shape.keys {
		out.Key = append(out.Key, k.column)
	}
	for _, c := range plan.Checks {
		if c.Supersedes != "" && strings.EqualFold(c.Supersedes, inc.Asset) {
			out.Asset = c.Asset
			break
		}
	}
	if out.Asset == "" {
		return withWhy(out, "plan #%d does not say which warehouse table the corrected statement lands in (no check supersedes %s)", plan.ID, inc.Asset)
	}
	cfg := s.d.Config
	switch {
	case cfg.Kafka == nil:
		return withWhy(out, "kafka is not configured: set kafka.bootstrap_servers to read %s", shape.topic)
	case cfg.SchemaRegistry == nil:
		return withWhy(out, "schema_registry is not configured: set schema_registry.url to decode %s", shape.topic)
	case cfg.Warehouse == nil:
		return withWhy(out, "warehouse is not configured: set warehouse.engine and warehouse.dsn")
	}
	now := s.d.Now().UTC()
	from := planStart(step, now.Add(-time.Duration(maxValueWindows)*time.Hour))
	opt := kafka.SampleOptions{Since: from, Until: now}
	var windows []time.Time
	if shape.agg != "" {
		if shape.window <= 0 {
			return withWhy(out, "%s aggregates without a TUMBLE window, so no bounded set of records makes up one of its rows", shape.column)
		}
		first := from.Truncate(shape.window)
		if first.Before(from) {
			first = first.Add(shape.window) // a window begun before the restore started mixes old rows in
		}
		for w := first; !w.Add(shape.window).After(now); w = w.Add(shape.window) {
			windows = append(windows, w)
		}
		if len(windows) > maxValueWindows {
			windows = windows[len(windows)-maxValueWindows:]
		}
		if len(windows) == 0 {
			return withWhy(out, "no %s window has closed since the corrected statement started (%s)", shape.window, from.Format(time.RFC3339))
		}
		opt = kafka.SampleOptions{Since: windows[0], Until: windows[len(windows)-1].Add(shape.window), PerPartition: kafka.MaxPerPartition, MaxRecords: kafka.MaxSampleRecords}
	}
	recs, err := kafka.RecordsFromConfig(ctx, cfg.Kafka, cfg.SchemaRegistry, shape.topic, opt)
	if err != nil {
		return withWhy(out, "reading %s: %v", shape.topic, err)
	}
	out.Records = len(recs.Records)
	if shape.agg != "" && !recs.Complete {
		return withWhy(out, "%s of %s needs every record of each window, and %s holds more records from %s to %s than one bounded read takes (%d per partition, %d in all)",
			shape.agg, shape.column, shape.topic, opt.Since.Format(time.RFC3339), opt.Until.Format(time.RFC3339), kafka.MaxPerPartition, kafka.MaxSampleRecords)
	}
	if len(recs.Records) == 0 {
		why := fmt.Sprintf("no decodable record of %s from %s to %s", shape.topic, opt.Since.Format(time.RFC3339), opt.Until.Format(time.RFC3339))
		if len(recs.Why) > 0 {
			why += " (" + strings.Join(recs.Why, "; ") + ")"
		}
		return withWhy(out, "%s", why)
	}
	source, err := shape.recompute(recs.Records, windows)
	if err != nil {
		return withWhy(out, "%v", err)
	}
	if len(source) == 0 {
		return withWhy(out, "none of the %d records read passes the statement's filter or falls in a compared window", len(recs.Records))
	}
	held, complete, err := s.warehouseValues(ctx, out.Asset, shape, source, windows)
	if err != nil {
		return withWhy(out, "%v", err)
	}
	return judgeValues(out, shape, source, held, complete, recs.Skipped)
}

// withWhy turns a partly filled comparison into a not_possible one.
func withWhy(v ValueCheck, format string, args ...any) ValueCheck {
	v.Status, v.Why = ValuesNotPossible, "value comparison not possible: "+fmt.Sprintf(format, args...)
	return v
}

// correctedStatement is the plan's corrected statement with its SQL and every mapping known: one
// that reads removed fields through mappings, or one that widens a filter for new values.
func correctedStatement(p plans.Plan) (plans.Proposal, bool) {
	for _, st := range p.Proposals {
		if st.Class == config.ClassFlinkStatement && len(st.NeedsMapping) == 0 {
			if _, ok := st.Payload["sql"].(string); ok {
				return st, true
			}
		}
	}
	return plans.Proposal{}, false
}

// planStart is when the corrected statement starts reading (its payload's start.from), else def.
func planStart(p plans.Proposal, def time.Time) time.Time {
	if start, ok := p.Payload["start"].(map[string]any); ok {
		if s, ok := start["from"].(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				return t.UTC()
			}
		}
	}
	return def
}

// readShape reads the compared column out of a corrected statement: one SELECT over one topic (or
// a TUMBLE window over it), the output column whose expression reads a mapped field (with no
// mappings, as for a widened filter, an aggregate output), the one a plan check names when several
// qualify, and the columns its rows are keyed by.
func readShape(text string, maps []plans.Replacement, checks []plans.Check) (valueShape, string) {
	stmt, err := sqlparse.Parse(text)
	if err != nil {
		return valueShape{}, fmt.Sprintf("it does not parse: %v", err)
	}
	var q *sqlparse.Query
	var cols []string
	switch st := stmt.(type) {
	case *sqlparse.Insert:
		q, cols = st.Query, st.Columns
	case *sqlparse.CreateTableAs:
		q, cols = st.Query, st.Columns
	default:
		return valueShape{}, "it writes no table"
	}
	sel, ok := q.Body.(*sqlparse.Select)
	if !ok || len(q.With) > 0 || len(sel.From) != 1 || sel.Having != nil || sel.Qualify != nil || sel.Distinct {
		return valueShape{}, "only a single SELECT over one topic (no CTE, set operation, join, HAVING, QUALIFY or DISTINCT) is recomputed"
	}
	var sh valueShape
	switch from := sel.From[0].(type) {
	case *sqlparse.TableName:
		sh.topic = from.Name[len(from.Name)-1]
	case *sqlparse.TableFunc:
		if from.Name != "TUMBLE" || len(from.Args) != 3 {
			return valueShape{}, fmt.Sprintf("it reads %s(…); only a plain topic or a TUMBLE window over one is recomputed", from.Name)
		}
		ta, ok1 := from.Args[0].(*sqlparse.TableArg)
		d, ok2 := from.Args[1].(*sqlparse.Descriptor)
		iv, ok3 := from.Args[2].(*sqlparse.Interval)
		tn, ok4 := (*sqlparse.TableName)(nil), false
		if ok1 {
			tn, ok4 = ta.Table.(*sqlparse.TableName)
		}
		if !ok1 || !ok2 || !ok3 || !ok4 || len(d.Columns) != 1 {
			return valueShape{}, "its TUMBLE window is not TUMBLE(TABLE <topic>, DESCRIPTOR(<time>), INTERVAL …)"
		}
		size, err := intervalOf(iv.Text)
		if err != nil {
			return valueShape{}, err.Error()
		}
		sh.topic, sh.timeField, sh.window = tn.Name[len(tn.Name)-1], d.Columns[0], size
	default:
		return valueShape{}, "only a plain topic or a TUMBLE window over one is recomputed"
	}
	sh.where = sel.Where
	if cols != nil && len(cols) != len(sel.Items) {
		return valueShape{}, "its column list and its select list differ in length"
	}
	name := func(i int) string {
		it := sel.Items[i]
		switch {
		case cols != nil:
			return cols[i]
		case it.Alias != "":
			return it.Alias
		}
		if c, ok := it.Expr.(*sqlparse.ColumnRef); ok {
			return c.Parts[len(c.Parts)-1]
		}
		return ""
	}
	var candidates []int
	for i, it := range sel.Items {
		if it.Star {
			return valueShape{}, "it selects *, so its output columns are not known here"
		}
		if name(i) != "" && (readsMapped(it.Expr, maps) || len(maps) == 0 && isAggregate(it.Expr)) {
			candidates = append(candidates, i)
		}
	}
	switch {
	case len(candidates) == 0 && len(maps) == 0:
		return valueShape{}, "it has no mapping and no aggregate output column to recompute"
	case len(candidates) == 0:
		return valueShape{}, "no output column reads a mapped field"
	}
	pick := candidates[0]
	for _, i := range candidates {
		for _, c := range checks {
			if slices.ContainsFunc(c.Columns, func(col string) bool { return strings.EqualFold(col, name(i)) }) {
				pick = i
			}
		}
	}
	sh.column, sh.text = name(pick), sel.Items[pick].Text
	sh.value = sel.Items[pick].Expr
	if f, ok := sh.value.(*sqlparse.FuncCall); ok && isAggregate(f) {
		if f.Distinct || f.Filter != nil || f.Over != nil || len(f.Args) != 1 {
			return valueShape{}, fmt.Sprintf("%s is %s with DISTINCT, FILTER, OVER or several arguments, which is not recomputed", sh.column, f.Name)
		}
		sh.agg = f.Name
		if _, star := f.Args[0].(*sqlparse.StarArg); star {
			sh.star = true
		} else {
			sh.value = f.Args[0]
		}
	}
	if sh.agg == "" && len(sel.GroupBy) > 0 {
		return valueShape{}, fmt.Sprintf("%s is grouped but is not one SUM, COUNT, MIN, MAX or AVG", sh.column)
	}
	grouped := map[string]bool{}
	for _, g := range sel.GroupBy {
		if c, ok := g.(*sqlparse.ColumnRef); ok {
			grouped[strings.ToLower(c.Parts[len(c.Parts)-1])] = true
		}
	}
	for i, it := range sel.Items {
		c, ok := it.Expr.(*sqlparse.ColumnRef)
		if i == pick || !ok || name(i) == "" {
			continue
		}
		field := c.Parts[len(c.Parts)-1]
		if sh.agg != "" && !grouped[strings.ToLower(field)] {
			continue
		}
		k := outKey{column: name(i), field: field}
		if sh.window > 0 {
			switch strings.ToLower(field) {
			case "window_start":
				k.window = "start"
			case "window_end":
				k.window = "end"
			}
		}
		sh.keys = append(sh.keys, k)
	}
	if len(sh.keys) == 0 {
		return valueShape{}, fmt.Sprintf("it writes no key or time column beside %s to match warehouse rows on", sh.column)
	}
	return sh, ""
}

// isAggregate reports whether x is one of the aggregates the comparison recomputes.
func isAggregate(x sqlparse.Expr) bool {
	f, ok := x.(*sqlparse.FuncCall)
	return ok && slices.Contains([]string{"SUM", "COUNT", "MIN", "MAX", "AVG"}, f.Name)
}

// readsMapped reports whether x references a removed field a mapping restores.
func readsMapped(x sqlparse.Expr, maps []plans.Replacement) bool {
	ts, err := sqlparse.Tokens(sqlparse.Format(x))
	if err != nil {
		return false
	}
	for _, t := range ts {
		for _, m := range maps {
			if t.IsName(m.Removed) {
				return true
			}
		}
	}
	return false
}

// intervalOf reads INTERVAL 'n' UNIT.
func intervalOf(text string) (time.Duration, error) {
	f := strings.Fields(strings.ReplaceAll(strings.ToUpper(text), "'", " "))
	if len(f) != 3 || f[0] != "INTERVAL" {
		return 0, fmt.Errorf("window size %s is not INTERVAL 'n' UNIT", text)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("window size %s is not a positive whole number of units", text)
	}
	unit := map[string]time.Duration{"SECOND": time.Second, "MINUTE": time.Minute, "HOUR": time.Hour, "DAY": 24 * time.Hour}[strings.TrimSuffix(f[2], "S")]
	if unit == 0 {
		return 0, fmt.Errorf("window unit %s is not SECOND, MINUTE, HOUR or DAY", f[2])
	}
	return time.Duration(n) * unit, nil
}

// groupAcc accumulates one row's source value.
type groupAcc struct {
	key     []any
	sum     float64
	n       int // non-null values (COUNT, AVG)
	records int
	min     *float64
	max     *float64
}

// recompute evaluates the statement over the records: the filter, the keys, the value. windows,
// when set, are the closed windows compared; a record outside them is left out.
func (sh valueShape) recompute(recs []kafka.Record, windows []time.Time) (map[string]*groupAcc, error) {
	out := map[string]*groupAcc{}
	for _, r := range recs {
		if sh.where != nil {
			ok, err := evalRow(sh.where, r.Fields)
			if err != nil {
				return nil, fmt.Errorf("the statement's filter cannot be recomputed: %v", err)
			}
			if b, _ := ok.(bool); !b {
				continue
			}
		}
		var start time.Time
		if sh.window > 0 {
			t, ok := eventTime(r, sh.timeField)
			if !ok {
				return nil, fmt.Errorf("records carry no time in %s, the window's time column", sh.timeField)
			}
			start = t.Truncate(sh.window)
			if !slices.ContainsFunc(windows, start.Equal) {
				continue
			}
		}
		key := make([]any, len(sh.keys))
		for i, k := range sh.keys {
			switch k.window {
			case "start":
				key[i] = start
			case "end":
				key[i] = start.Add(sh.window)
			default:
				if k.field == "$rowtime" {
					// The record's own timestamp, as Confluent's Flink exposes it.
					key[i] = r.Timestamp.UTC()
				} else {
					key[i] = lookupField(r.Fields, k.field)
				}
			}
		}
		id := keyText(key)
		g := out[id]
		if g == nil {
			g = &groupAcc{key: key}
			out[id] = g
		}
		g.records++
		if sh.star {
			g.n++
			continue
		}
		v, err := evalRow(sh.value, r.Fields)
		if err != nil {
			return nil, fmt.Errorf("%s cannot be recomputed from the records: %v", sh.text, err)
		}
		if v == nil {
			continue
		}
		f, ok := toFloat(v)
		if !ok {
			return nil, fmt.Errorf("%s gives %v, not a number", sh.text, v)
		}
		g.n++
		g.sum += f
		if g.min == nil || f < *g.min {
			g.min = &f
		}
		if g.max == nil || f > *g.max {
			g.max = &f
		}
	}
	return out, nil
}

// value is the group's recomputed value, nil when SQL gives NULL.
func (g *groupAcc) value(agg string) *float64 {
	var v float64
	switch agg {
	case "COUNT":
		v = float64(g.n)
	case "MIN":
		return g.min
	case "MAX":
		return g.max
	case "AVG":
		if g.n == 0 {
			return nil
		}
		v = g.sum / float64(g.n)
	default: // SUM, and a per-record column summed per key
		if g.n == 0 {
			return nil
		}
		v = g.sum
	}
	return &v
}

// eventTime is the record's time in field: a timestamp, epoch milliseconds, or the Kafka record
// timestamp for Confluent's $rowtime.
func eventTime(r kafka.Record, field string) (time.Time, bool) {
	if field == "$rowtime" {
		return r.Timestamp, true
	}
	switch v := lookupField(r.Fields, field).(type) {
	case time.Time:
		return v.UTC(), true
	case int64:
		return time.UnixMilli(v).UTC(), true
	case string:
		return warehouse.ParseTime(v)
	}
	return time.Time{}, false
}

// keyText renders a key so a topic's and a warehouse's spelling of the same values agree.
func keyText(key []any) string {
	parts := make([]string, len(key))
	for i, v := range key {
		parts[i] = valueText(v)
	}
	return strings.Join(parts, ", ")
}

func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		// Whole seconds: a warehouse column may keep less precision than the record's
		// timestamp (TIMESTAMP(0), text without fractions), and rows of one key within a second
		// are summed alike on both sides.
		return x.UTC().Truncate(time.Second).Format(time.RFC3339)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// warehouseValues reads the compared column of the restored table for the rows the source
// recomputed: for a windowed statement the rows of the compared windows (a range on the window
// column), for a per-record one the rows whose first plain key is among the sampled keys. complete
// is false when a bound (maxValueRows, warehouse.max_result_bytes) cut the read, so a row not
// found may exist unread.
func (s *Service) warehouseValues(ctx context.Context, asset string, sh valueShape, source map[string]*groupAcc, windows []time.Time) (held map[string]*float64, complete bool, err error) {
	table, err := tableOf(asset, s.d.Config.Warehouse.Engine)
	if err != nil {
		return nil, false, err
	}
	wh, err := warehouse.Connect(s.d.Config.Warehouse)
	if err != nil {
		return nil, false, err
	}
	defer wh.Close()
	ti, err := wh.Resolve(ctx, table)
	if err != nil {
		return nil, false, fmt.Errorf("the restored table %s: %w", table, err)
	}
	ref, err := wh.Dialect.QuoteTable(ti.Ref())
	if err != nil {
		return nil, false, err
	}
	quoted := make([]string, 0, len(sh.keys)+1)
	var types []string
	for _, k := range append(append([]outKey(nil), sh.keys...), outKey{column: sh.column}) {
		c, err := ti.Column(k.column)
		if err != nil {
			return nil, false, fmt.Errorf("the restored table %s: %w", table, err)
		}
		q, err := wh.Dialect.Quote(c.Name)
		if err != nil {
			return nil, false, err
		}
		quoted, types = append(quoted, q), append(types, c.Type)
	}
	base := "SELECT " + strings.Join(quoted, ", ") + " FROM " + ref
	var queries []string
	var args [][]any
	switch win, by := windowKey(sh), plainKey(sh, source); {
	case win >= 0 && len(windows) > 0:
		from, to := windows[0], windows[len(windows)-1].Add(sh.window)
		if sh.keys[win].window == "end" {
			from, to = from.Add(sh.window), to.Add(sh.window)
		}
		f := warehouse.TimeNative
		if wh.Dialect.Engine == warehouse.SQLite {
			var one any
			if err := wh.QueryRow(ctx, "SELECT "+quoted[win]+" FROM "+ref+" WHERE "+quoted[win]+" IS NOT NULL LIMIT 1", nil, &one); err == nil {
				f = sqliteTimeFormat(one)
			}
		}
		a := wh.Dialect.NewArgs()
		lo := wh.Dialect.TimeParam(a.Add(warehouse.BindTime(f, from)), types[win])
		hi := wh.Dialect.TimeParam(a.Add(warehouse.BindTime(f, to)), types[win])
		queries, args = append(queries, base+" WHERE "+quoted[win]+" >= "+lo+" AND "+quoted[win]+" < "+hi), append(args, a.Vals)
	case by >= 0:
		var vals []any
		seen := map[string]bool{}
		for _, g := range source {
			if v := g.key[by]; !seen[valueText(v)] {
				seen[valueText(v)] = true
				vals = append(vals, v)
			}
		}
		for len(vals) > 0 {
			n := min(len(vals), 500)
			a := wh.Dialect.NewArgs()
			phs := make([]string, n)
			for i, v := range vals[:n] {
				phs[i] = a.Add(v)
			}
			queries, args = append(queries, base+" WHERE "+quoted[by]+" IN ("+strings.Join(phs, ", ")+")"), append(args, a.Vals)
			vals = vals[n:]
		}
	default:
		queries, args = append(queries, base), append(args, nil)
	}
	held, complete = map[string]*float64{}, true
	timeKey := make([]bool, len(sh.keys))
	for i, k := range sh.keys {
		timeKey[i] = k.window != "" || k.field == sh.timeField || k.field == "$rowtime"
	}
	for i, q := range queries {
		rows, err := wh.QueryAll(ctx, q, args[i], maxValueRows)
		if err != nil {
			return nil, false, fmt.Errorf("reading %s from %s: %w", sh.column, table, err)
		}
		if len(rows.Rows) >= maxValueRows || rows.Truncated != "" {
			complete = false
		}
		for _, row := range rows.Rows {
			key := make([]any, len(sh.keys))
			for i := range sh.keys {
				key[i] = normalizeCell(row[i], timeKey[i])
			}
			id := keyText(key)
			v, ok := numberOf(row[len(sh.keys)])
			if !ok {
				if _, seen := held[id]; !seen {
					held[id] = nil
				}
				continue
			}
			if prev := held[id]; prev != nil {
				v += *prev
			}
			held[id] = &v
		}
	}
	return held, complete, nil
}

// windowKey is the index of the window start (else end) key, -1 when the rows have none.
func windowKey(sh valueShape) int {
	end := -1
	for i, k := range sh.keys {
		switch k.window {
		case "start":
			return i
		case "end":
			end = i
		}
	}
	return end
}

// plainKey is the first key whose sampled values are text or integers (an id a warehouse column
// compares equal), -1 when none is.
func plainKey(sh valueShape, source map[string]*groupAcc) int {
	for i, k := range sh.keys {
		if k.window != "" {
			continue
		}
		ok := len(source) > 0
		for _, g := range source {
			switch g.key[i].(type) {
			case string, int64:
			default:
				ok = false
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// sqliteTimeFormat is how a SQLite column stores time, read from one of its values.
func sqliteTimeFormat(v any) warehouse.TimeFormat {
	switch x := v.(type) {
	case int64, float64:
		return warehouse.TimeEpoch
	case string:
		switch {
		case len(x) == len("2006-01-02"):
			return warehouse.TimeTextDate
		case len(x) > 10 && x[10] == 'T':
			return warehouse.TimeTextT
		}
	}
	return warehouse.TimeTextSpace
}

// normalizeCell reads a warehouse value as the topic side spells it: times as UTC instants,
// integral numbers as integers.
func normalizeCell(v any, isTime bool) any {
	if isTime {
		if t, ok := warehouse.ParseTime(v); ok {
			return t
		}
	}
	switch x := v.(type) {
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.UTC()
		}
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	case float32:
		return normalizeCell(float64(x), false)
	}
	return v
}

func numberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// sameValue allows for floating-point summation order only: a restored value that differs by
// more is a different value.
func sameValue(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-9
}

// judgeValues compares each recomputed row with the warehouse's and says what differs.
func judgeValues(out ValueCheck, sh valueShape, source map[string]*groupAcc, held map[string]*float64, complete bool, skipped int) ValueCheck {
	agg := sh.agg
	unread := 0
	for id, g := range source {
		want := g.value(agg)
		have, found := held[id]
		if !found && !complete {
			unread++ // the read was cut: the row may exist unread
			continue
		}
		vg := ValueGroup{Key: id, Source: want, Warehouse: have, Records: g.records}
		switch {
		case !found:
		case want == nil || have == nil:
			vg.Match = want == nil && have == nil
		default:
			vg.Match = sameValue(*want, *have)
		}
		out.Groups = append(out.Groups, vg)
	}
	sort.Slice(out.Groups, func(i, j int) bool {
		a, b := out.Groups[i], out.Groups[j]
		if a.Match != b.Match {
			return !a.Match
		}
		return a.Key < b.Key
	})
	out.Compared = len(out.Groups)
	var worst []string
	for _, g := range out.Groups {
		if g.Match {
			continue
		}
		out.Mismatched++
		if len(worst) < 3 {
			worst = append(worst, describeMismatch(out.Key, g))
		}
	}
	if len(out.Groups) > maxReportedGroups {
		out.Groups = out.Groups[:maxReportedGroups]
	}
	from := fmt.Sprintf("recomputed %s from %d record(s) of %s with %s", out.Column, out.Records, out.Topic, out.Expression)
	if skipped > 0 {
		from += fmt.Sprintf(" (%d record(s) not decoded, left out)", skipped)
	}
	if unread > 0 {
		from += fmt.Sprintf(" (%d row(s) not compared: the warehouse read stopped at its bound, %d rows or warehouse.max_result_bytes, before finding them)", unread, maxValueRows)
	}
	if out.Compared == 0 {
		return withWhy(out, "%s: none of its rows was found within the bounded warehouse read", from)
	}
	if out.Mismatched == 0 {
		out.Status = ValuesPass
		out.Why = fmt.Sprintf("%s: all %d row(s) of %s match, keyed by %s", from, out.Compared, out.Asset, strings.Join(out.Key, ", "))
		return out
	}
	out.Status = ValuesFail
	out.Why = fmt.Sprintf("%s: %d of %d row(s) of %s differ: %s", from, out.Mismatched, out.Compared, out.Asset, strings.Join(worst, "; "))
	return out
}

func describeMismatch(key []string, g ValueGroup) string {
	at := strings.Join(key, ", ") + " = " + g.Key
	num := func(p *float64) string {
		if p == nil {
			return "NULL"
		}
		return strconv.FormatFloat(*p, 'f', -1, 64)
	}
	switch {
	case g.Warehouse == nil && g.Source != nil:
		return fmt.Sprintf("at %s the source gives %s and the warehouse has no value (no row, or NULL)", at, num(g.Source))
	case g.Source == nil:
		return fmt.Sprintf("at %s the source gives NULL and the warehouse holds %s", at, num(g.Warehouse))
	}
	s := fmt.Sprintf("at %s the source gives %s, the warehouse holds %s", at, num(g.Source), num(g.Warehouse))
	if *g.Source != 0 {
		s += fmt.Sprintf(" (%s× the source)", strconv.FormatFloat(*g.Warehouse / *g.Source, 'g', 4, 64))
	}
	return s
}
