package quality

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// DimensionSpec asks for one metric per value of a key column (account, campaign, carrier), each
// judged against that key's own history: a filter that drops one customer's rows barely moves the
// table's volume but takes that customer's to zero.
type DimensionSpec struct {
	// Column is the key column rows are grouped by.
	Column string `json:"column" jsonschema:"Key column to group by, e.g. account_id"`
	// Measure is a numeric column whose hourly sum is tracked per key; empty tracks rows per hour.
	Measure string `json:"measure,omitempty" jsonschema:"Numeric column whose hourly sum is tracked per key; default rows per hour"`
	// MaxKeys caps the keys read (the largest by rows); default 1000, at most 10000.
	MaxKeys int `json:"max_keys,omitempty" jsonschema:"Most keys compared, the largest by rows (default 1000, at most 10000)"`
	// Top is how many moved keys the result lists (default 10).
	Top int `json:"top,omitempty" jsonschema:"Moved keys listed, largest deviation first (default 10)"`
}

// Limits of a dimension check.
const (
	defaultMaxKeys = 1000
	maxMaxKeys     = 10000
	defaultTopKeys = 10
	goneAfter      = 7 * 24 * time.Hour
)

// KeyMove is one key's metric against its own baseline.
type KeyMove struct {
	Key    string  `json:"key"`
	Value  float64 `json:"value"`
	Median float64 `json:"median"`
	// Change is (value − median) / median: −1 when the key's rows vanished.
	Change float64 `json:"change"`
	Status Status  `json:"status"`
}

// dimPolicy: a key's metric warns past 25 % of its median and fails past 50 % (per-key series are
// noisier than a table's); a noisy key widens its own band through its MAD.
var dimPolicy = Policy{MinPoints: 5, MaxPoints: 60, WarnZ: 3, FailZ: 5, AbsFloor: 1e-9, RelFloor: 0.25, Direction: Both}

type dimPlan struct {
	spec              DimensionSpec
	key, measure      string // catalog spellings
	metric, prefix    string
	grouped           *query
	maxKeys, top      int
	measureIsRowCount bool
}

func (p *plan) buildDimension(ti *warehouse.TableInfo, spec DimensionSpec) error {
	if spec.Column == "" {
		return fmt.Errorf("the dimension check needs dimension.column, the key to group by (e.g. account_id)")
	}
	key, err := ti.Column(spec.Column)
	if err != nil {
		return fmt.Errorf("dimension.column: %w", err)
	}
	dp := &dimPlan{spec: spec, key: key.Name, maxKeys: spec.MaxKeys, top: spec.Top, metric: "dimension_rows_per_hour", measureIsRowCount: true}
	if dp.maxKeys == 0 {
		dp.maxKeys = defaultMaxKeys
	}
	if dp.maxKeys < 1 || dp.maxKeys > maxMaxKeys {
		return fmt.Errorf("dimension.max_keys: %d is outside 1 … %d", spec.MaxKeys, maxMaxKeys)
	}
	if dp.top <= 0 {
		dp.top = defaultTopKeys
	}
	qk := mustQuote(p.d, key.Name)
	terms := qk + ", count(*)"
	dp.prefix = key.Name + "="
	if spec.Measure != "" {
		m, err := ti.Column(spec.Measure)
		if err != nil {
			return fmt.Errorf("dimension.measure: %w", err)
		}
		if kindOf(p.d, m.Type) != kindNumeric {
			return fmt.Errorf("%w: dimension.measure %s is %s, not numeric", warehouse.ErrTypeMismatch, m.Name, m.Type)
		}
		dp.measure, dp.measureIsRowCount, dp.metric = m.Name, false, "dimension_sum_per_hour"
		dp.prefix = m.Name + " by " + key.Name + "="
		terms += ", " + p.d.FloatSum(mustQuote(p.d, m.Name))
	}
	a := p.d.NewArgs()
	dp.grouped = &query{sql: "SELECT " + terms + " FROM " + p.table + " WHERE " + p.window(a) + " GROUP BY 1 ORDER BY 2 DESC LIMIT " + fmt.Sprint(dp.maxKeys+1), args: a.Vals}
	p.dim = dp
	return nil
}

// extraPoint is a metric recorded with a result but not shown as a result of its own (one per key
// of a dimension check).
type extraPoint struct {
	metric, subject string
	value           float64
	status          Status
	baseline        *Baseline
}

// seriesKey is the history the dimension check judges its keys against: every key's series, up
// to 60 points each.
func (dp *dimPlan) seriesKey() seriesKey {
	return seriesKey{metric: dp.metric, subject: dp.prefix, prefix: true, limit: 60 * (dp.maxKeys + 1)}
}

func (c *Checker) dimensionResult(ctx context.Context, p *plan, rep *Report, now time.Time, step func(string)) (Result, error) {
	dp := p.dim
	subject := dp.key
	what := "rows"
	if !dp.measureIsRowCount {
		subject, what = dp.measure+" by "+dp.key, "sums of "+dp.measure
	}
	r := Result{Check: string(Dimension), Metric: "keys_moved", Subject: subject, Unit: "keys", SQL: dp.grouped.sql, Status: Pass, recorded: true,
		ExpectedLow: ptr(0.0), ExpectedHigh: ptr(0.0)}
	rows, err := p.stmts.QueryAll(ctx, dp.grouped.sql, dp.grouped.args, dp.maxKeys+1)
	if err != nil {
		return r, fmt.Errorf("dimension %s of %s: %w", subject, rep.Table, err)
	}
	step("dimension " + subject)
	truncated := len(rows.Rows) > dp.maxKeys
	if truncated {
		rows.Rows = rows.Rows[:dp.maxKeys]
	}
	hours := rep.Window.Hours(now)
	current := map[string]float64{}
	for _, row := range rows.Rows {
		v := float64(warehouse.Int(row[1]))
		if !dp.measureIsRowCount {
			v = anyFloat(row[2])
		}
		current[keyString(row[0])] = v / hours
	}
	var history map[string][]Point
	if c.hist != nil {
		if history, err = c.seriesPoints(ctx, rep, dp.seriesKey(), now); err != nil {
			return r, fmt.Errorf("baseline of %s: %w", dp.metric, err)
		}
	}
	keys := make([]string, 0, len(current))
	for k := range current {
		keys = append(keys, k)
	}
	// A key with history and no row now had its rows vanish; when the answer was capped its
	// absence proves nothing, so it is left out.
	// A key whose last normal measurement is older than a week is gone, not newly missing (a
	// churned customer must not fail every run forever).
	for subj, pts := range history {
		k := strings.TrimPrefix(subj, dp.prefix)
		if _, ok := current[k]; !ok && !truncated && len(pts) > 0 && now.Sub(pts[0].At) <= goneAfter {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var moved []KeyMove
	unchanged, fresh := 0, 0
	for _, k := range keys {
		v := current[k]
		pt := extraPoint{metric: dp.metric, subject: dp.prefix + k, value: round(v, 6), status: Pass}
		b, ok := ComputeBaseline(history[dp.prefix+k], now, rep.Window.Location(), dimPolicy)
		if !ok {
			fresh++
			r.extra = append(r.extra, pt)
			continue
		}
		pt.baseline = &b
		pt.status = b.Judge(v, dimPolicy.Direction)
		r.extra = append(r.extra, pt)
		if pt.status == Pass {
			unchanged++
			continue
		}
		change := 0.0
		if b.Median != 0 {
			change = (v - b.Median) / math.Abs(b.Median)
		}
		moved = append(moved, KeyMove{Key: k, Value: round(v, 4), Median: round(b.Median, 4), Change: round(change, 4), Status: pt.status})
		r.Status = worse(r.Status, pt.status)
	}
	slices.SortFunc(moved, func(a, b KeyMove) int {
		if c := cmp.Compare(math.Abs(b.Change), math.Abs(a.Change)); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	r.Value = float64(len(moved))
	if len(moved) > dp.top {
		r.Keys = moved[:dp.top]
	} else {
		r.Keys = moved
	}
	var parts []string
	for _, dir := range []struct {
		word string
		sel  func(float64) bool
	}{{"fell", func(c float64) bool { return c < 0 }}, {"rose", func(c float64) bool { return c > 0 }}} {
		var these []KeyMove
		for _, m := range moved {
			if dir.sel(m.Change) {
				these = append(these, m)
			}
		}
		if len(these) == 0 {
			continue
		}
		least := math.Inf(1)
		for _, m := range these {
			least = math.Min(least, math.Abs(m.Change))
		}
		by := ""
		switch tens := math.Floor(least*10) * 10; {
		case dir.word == "fell" && least >= 1:
			by = " to zero"
		case tens >= 10:
			by = fmt.Sprintf(" by %d%% or more", int(tens))
		}
		n := int64(len(these))
		parts = append(parts, fmt.Sprintf("%s %s %s %s%s", group(n), dp.key, plural(n, "value's "+what, "values' "+what), dir.word, by))
	}
	head := ""
	if len(parts) > 0 {
		worst := r.Keys[0]
		head = strings.Join(parts, "; ") + fmt.Sprintf(" (%s %s: %s per hour against a median of %s)", dp.key, worst.Key, sig(worst.Value), sig(worst.Median)) + "; "
	}
	r.Why = head + fmt.Sprintf("%s unchanged %s", group(int64(unchanged)), rep.Window.Label)
	if fresh > 0 {
		r.Why += fmt.Sprintf("; %s with too little history to judge", countOf(fresh, dp.key+" value", dp.key+" values"))
	}
	if truncated {
		r.Why += fmt.Sprintf("; only the %d largest %s values were compared (dimension.max_keys)", dp.maxKeys, dp.key)
	}
	return r, nil
}

func countOf(n int, one, many string) string {
	return group(int64(n)) + " " + plural(int64(n), one, many)
}

// keyString renders a grouped key as text (NULL keys group together too).
func keyString(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
