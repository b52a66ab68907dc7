package quality

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// ProfileRequest asks for per-column statistics of a table, optionally within a window.
type ProfileRequest struct {
	Table string
	// Columns limits the profile; empty means every column.
	Columns []string
	// TimestampColumn and Window restrict the rows; without a column the whole table is read.
	TimestampColumn string
	Window          *Window
	// Distinct adds exact distinct counts: the cost centre of profiling on every engine
	// (docs/reference/testing.md, performance anchors), so only on request.
	Distinct bool
}

// ColumnProfile is one column's statistics.
type ColumnProfile struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Nullable bool     `json:"nullable"`
	Nulls    int64    `json:"nulls"`
	NullRate float64  `json:"null_rate"`
	Distinct *int64   `json:"distinct,omitempty"`
	Min      any      `json:"min,omitempty"`
	Max      any      `json:"max,omitempty"`
	Avg      *float64 `json:"avg,omitempty" jsonschema:"Mean, for numeric columns"`
	// Metrics are the column check's metrics for the column's type, measured once.
	Metrics map[string]float64 `json:"metrics,omitempty" jsonschema:"Per type: zeros, zero_rate, negatives, negative_rate, sum, stddev (numeric); empty, empty_rate, min_length, max_length, mean_length (text); true, false, true_rate (boolean)"`
}

// Profile is the answer of profile_table.
type Profile struct {
	Table      string          `json:"table"`
	Asset      string          `json:"asset"`
	Engine     string          `json:"engine"`
	Window     *Window         `json:"window,omitempty"`
	Rows       int64           `json:"rows"`
	Columns    []ColumnProfile `json:"columns"`
	SQL        string          `json:"sql" jsonschema:"The one query that computed every statistic"`
	DurationMS float64         `json:"duration_ms"`
}

// orderable says whether min/max are defined for a declared type on the engine (PostgreSQL has no
// min(boolean) or min(json); Snowflake's semi-structured types do not order).
func orderable(d warehouse.Dialect, typ string) bool {
	t := strings.ToLower(typ)
	switch d.Engine {
	case warehouse.SQLite:
		return true
	case warehouse.Snowflake:
		return !strings.Contains(t, "variant") && !strings.Contains(t, "object") && !strings.Contains(t, "array") &&
			!strings.Contains(t, "geography") && !strings.Contains(t, "geometry") && !strings.Contains(t, "vector")
	}
	for _, ok := range []string{"int", "numeric", "decimal", "real", "double", "float", "money", "char", "text", "date", "time", "uuid", "inet"} {
		if strings.Contains(t, ok) {
			return !strings.HasSuffix(t, "[]")
		}
	}
	return false
}

func numeric(d warehouse.Dialect, typ string) bool {
	t := strings.ToLower(typ)
	if strings.HasSuffix(t, "[]") {
		return false
	}
	for _, n := range []string{"int", "numeric", "decimal", "real", "double", "float", "number"} {
		if strings.Contains(t, n) && !strings.Contains(t, "interval") && !strings.Contains(t, "point") {
			return true
		}
	}
	return false
}

// ProfileTable computes every column's statistics in one pass.
func (c *Checker) ProfileTable(ctx context.Context, req ProfileRequest) (*Profile, error) {
	started := c.now()
	ti, err := c.wh.Resolve(ctx, req.Table)
	if err != nil {
		return nil, err
	}
	d := c.wh.Dialect
	qt, err := d.QuoteTable(ti.Ref())
	if err != nil {
		return nil, err
	}
	cols := ti.Columns
	if len(req.Columns) > 0 {
		cols = nil
		for _, n := range req.Columns {
			col, err := ti.Column(n)
			if err != nil {
				return nil, err
			}
			cols = append(cols, col)
		}
	}
	terms := []string{"count(*)"}
	var layout [][]string // per column: the kinds of its terms, in order
	for _, col := range cols {
		q := mustQuote(d, col.Name)
		kinds := []string{"count"}
		terms = append(terms, "count("+q+")")
		if req.Distinct {
			kinds = append(kinds, "distinct")
			expr, _ := d.Distinct(q)
			terms = append(terms, expr)
		}
		if orderable(d, col.Type) {
			kinds = append(kinds, "min", "max")
			terms = append(terms, "min("+q+")", "max("+q+")")
		}
		if numeric(d, col.Type) || (d.Engine == warehouse.SQLite && col.Type == "") {
			kinds = append(kinds, "avg")
			avg := "avg(" + q + ")"
			if d.Engine == warehouse.Postgres {
				avg = "avg(" + q + ")::float8" // numeric averages come back as text otherwise
			}
			terms = append(terms, avg)
		}
		layout = append(layout, kinds)
	}
	// The column check's aggregates ride in the same query, sharing the terms already there.
	at := map[string]int{}
	for i, t := range terms {
		at[t] = i
	}
	accs := make([]map[aggregate]int, len(cols))
	for ci, col := range cols {
		accs[ci] = map[aggregate]int{}
		kind := kindOf(d, col.Type)
		for _, mk := range metricKinds {
			if mk.m == Distinct || !slices.Contains(mk.kinds, kind) {
				continue
			}
			for _, agg := range needs[mk.m] {
				expr := aggregateSQL(d, agg, mustQuote(d, col.Name))
				if _, ok := at[expr]; !ok {
					at[expr] = len(terms)
					terms = append(terms, expr)
				}
				accs[ci][agg] = at[expr]
			}
		}
	}
	a := d.NewArgs()
	sqlText := "SELECT " + strings.Join(terms, ", ") + " FROM " + qt
	p := &Profile{Table: ti.Ref().String(), Asset: AssetURN(d.Engine, ti.Table), Engine: string(d.Engine), Columns: []ColumnProfile{}}
	if req.Window != nil {
		col, err := timestampColumn(d, ti, req.TimestampColumn)
		if err != nil {
			return nil, err
		}
		pl := &plan{d: d, ts: mustQuote(d, col.Name), tsType: col.Type, since: req.Window.Since, until: req.Window.Until, loc: req.Window.Location()}
		if d.Engine == warehouse.SQLite {
			st, err := c.sqliteStoredTime(ctx, c.wh, ti, col, nil)
			if err != nil {
				return nil, err
			}
			pl.tf = st.format
		}
		sqlText += " WHERE " + pl.window(a)
		p.Window = req.Window
	}
	rows, err := c.wh.QueryAll(ctx, sqlText, a.Vals, 1)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Table, err)
	}
	r := rows.Rows[0]
	p.Rows = warehouse.Int(r[0])
	i := 1
	for ci, col := range cols {
		cp := ColumnProfile{Name: col.Name, Type: col.Type, Nullable: col.Nullable}
		for _, k := range layout[ci] {
			v := r[i]
			i++
			switch k {
			case "count":
				cp.Nulls = p.Rows - warehouse.Int(v)
			case "distinct":
				n := warehouse.Int(v)
				cp.Distinct = &n
			case "min":
				cp.Min = v
			case "max":
				cp.Max = v
			case "avg":
				if v != nil {
					f := anyFloat(v)
					cp.Avg = &f
				}
			}
		}
		if p.Rows > 0 {
			cp.NullRate = round(float64(cp.Nulls)/float64(p.Rows), 6)
		}
		cp.Metrics = profileMetrics(kindOf(d, col.Type), accs[ci], r)
		p.Columns = append(p.Columns, cp)
	}
	p.SQL = sqlText
	p.DurationMS = float64(c.now().Sub(started).Microseconds()) / 1000
	return p, nil
}

func anyFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	case string:
		var f float64
		fmt.Sscan(x, &f)
		return f
	case []byte:
		return anyFloat(string(x))
	}
	return 0
}

// profileMetrics reads one column's column-check aggregates from the profile's row.
func profileMetrics(kind colKind, terms map[aggregate]int, row []any) map[string]float64 {
	if len(terms) == 0 {
		return nil
	}
	var a colAcc
	for agg, i := range terms {
		a.add(agg, row[i])
	}
	out := map[string]float64{}
	put := func(name string, m ColumnMetric) {
		if v, ok := a.value(m, 1); ok {
			out[name] = round(v, 6)
		}
	}
	switch kind {
	case kindNumeric:
		out["zeros"], out["negatives"], out["sum"] = float64(a.zeros), float64(a.negatives), a.sum
		put("zero_rate", ZeroRate)
		put("negative_rate", NegativeRate)
		put("stddev", StdDev)
	case kindText:
		out["empty"] = float64(a.empty)
		put("empty_rate", EmptyRate)
		put("min_length", MinLength)
		put("max_length", MaxLength)
		put("mean_length", MeanLength)
	case kindBool:
		out["true"], out["false"] = float64(a.trues), float64(a.count-a.trues)
		put("true_rate", TrueRate)
	}
	return out
}
