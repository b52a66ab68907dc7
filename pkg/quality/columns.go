package quality

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// ColumnMetric names one per-column metric of the column check. Breaks that leave no null behind
// show here: a field removed upstream reads as zeros, a unit change moves the mean and the sum.
type ColumnMetric string

// The column metrics. Rates are shares of the window's non-null values; sum_per_hour is the
// window's sum divided by its elapsed hours, so windows of different lengths compare.
const (
	ZeroRate     ColumnMetric = "zero_rate"
	NegativeRate ColumnMetric = "negative_rate"
	MinValue     ColumnMetric = "min"
	MaxValue     ColumnMetric = "max"
	Mean         ColumnMetric = "mean"
	SumPerHour   ColumnMetric = "sum_per_hour"
	StdDev       ColumnMetric = "stddev"
	Distinct     ColumnMetric = "distinct"
	EmptyRate    ColumnMetric = "empty_rate"
	MinLength    ColumnMetric = "min_length"
	MaxLength    ColumnMetric = "max_length"
	MeanLength   ColumnMetric = "mean_length"
	TrueRate     ColumnMetric = "true_rate"
)

// colKind is what a declared type allows measuring.
type colKind int

const (
	kindOther colKind = iota
	kindNumeric
	kindText
	kindBool
)

func (k colKind) String() string {
	return [...]string{"other", "numeric", "text", "boolean"}[k]
}

type metricSpec struct {
	m     ColumnMetric
	kinds []colKind
}

// metricKinds lists, per metric, the column kinds it applies to, in reporting order.
var metricKinds = []metricSpec{
	{ZeroRate, []colKind{kindNumeric}},
	{NegativeRate, []colKind{kindNumeric}},
	{SumPerHour, []colKind{kindNumeric}},
	{Mean, []colKind{kindNumeric}},
	{MinValue, []colKind{kindNumeric}},
	{MaxValue, []colKind{kindNumeric}},
	{StdDev, []colKind{kindNumeric}},
	{EmptyRate, []colKind{kindText}},
	{MinLength, []colKind{kindText}},
	{MaxLength, []colKind{kindText}},
	{MeanLength, []colKind{kindText}},
	{TrueRate, []colKind{kindBool}},
	{Distinct, []colKind{kindNumeric, kindText, kindBool, kindOther}},
}

// AllColumnMetrics are the metric names a request or monitor may list.
func AllColumnMetrics() []string {
	out := make([]string, len(metricKinds))
	for i, mk := range metricKinds {
		out[i] = string(mk.m)
	}
	return out
}

// ParseColumnMetrics validates metric names; empty means every metric that fits each column's
// type except distinct, which needs its own scan (a distinct count does not add up across the
// pass's hour buckets) and so is measured only when listed.
func ParseColumnMetrics(names []string) ([]ColumnMetric, error) {
	var out []ColumnMetric
	for _, n := range names {
		m := ColumnMetric(strings.ToLower(strings.TrimSpace(n)))
		if !slices.ContainsFunc(metricKinds, func(mk metricSpec) bool { return mk.m == m }) {
			return nil, fmt.Errorf("column metric %q is unknown; use %s", n, strings.Join(AllColumnMetrics(), ", "))
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// kindOf classifies a declared type. SQLite's declared types follow its affinity rules (INT,
// CHAR/CLOB/TEXT, REAL/FLOA/DOUB); BOOLEAN is checked first as it is numeric there.
func kindOf(d warehouse.Dialect, typ string) colKind {
	t := strings.ToLower(typ)
	switch {
	case strings.Contains(t, "bool"):
		return kindBool
	case numeric(d, typ):
		return kindNumeric
	case strings.HasSuffix(t, "[]"):
		return kindOther
	case strings.Contains(t, "char"), strings.Contains(t, "text"), strings.Contains(t, "clob"), strings.Contains(t, "string"):
		return kindText
	}
	return kindOther
}

// aggregate is one partial aggregate a column metric needs from the pass.
type aggregate int

const (
	aggCount aggregate = iota
	aggZeros
	aggNegatives
	aggMin
	aggMax
	aggSum
	aggSumSq
	aggEmpty
	aggMinLen
	aggMaxLen
	aggSumLen
	aggTrues
)

// needs lists the partial aggregates behind each metric; every one of them combines across hour
// buckets (counts and sums add, minima and maxima compare), which is what lets the column metrics
// ride in the same grouped pass as volume and null counts.
var needs = map[ColumnMetric][]aggregate{
	ZeroRate:     {aggCount, aggZeros},
	NegativeRate: {aggCount, aggNegatives},
	MinValue:     {aggMin},
	MaxValue:     {aggMax},
	Mean:         {aggCount, aggSum},
	SumPerHour:   {aggSum},
	StdDev:       {aggCount, aggSum, aggSumSq},
	EmptyRate:    {aggCount, aggEmpty},
	MinLength:    {aggMinLen},
	MaxLength:    {aggMaxLen},
	MeanLength:   {aggCount, aggSumLen},
	TrueRate:     {aggCount, aggTrues},
}

// aggregateSQL renders one partial aggregate of the quoted column q.
func aggregateSQL(d warehouse.Dialect, a aggregate, q string) string {
	switch a {
	case aggCount:
		return "count(" + q + ")"
	case aggZeros:
		return "count(CASE WHEN " + q + " = 0 THEN 1 END)"
	case aggNegatives:
		return "count(CASE WHEN " + q + " < 0 THEN 1 END)"
	case aggMin:
		return "min(" + q + ")"
	case aggMax:
		return "max(" + q + ")"
	case aggSum:
		return d.FloatSum(q)
	case aggSumSq:
		return d.FloatSquareSum(q)
	case aggEmpty:
		return "count(CASE WHEN " + q + " = '' THEN 1 END)"
	case aggMinLen:
		return "min(" + d.Length(q) + ")"
	case aggMaxLen:
		return "max(" + d.Length(q) + ")"
	case aggSumLen:
		return d.FloatSum(d.Length(q))
	case aggTrues:
		return "count(CASE WHEN " + q + " THEN 1 END)"
	}
	panic(fmt.Sprintf("quality: unknown aggregate %d", a))
}

// metricCol is one column the column check measures, with the positions of its aggregates among
// the pass's terms.
type metricCol struct {
	name, quoted string
	kind         colKind
	notNull      bool
	metrics      []ColumnMetric
	terms        map[aggregate]int // aggregate → index in the pass's row
	distinctAt   int               // index in the distinct query's row, -1 when not measured
}

// colAcc adds up one column's partial aggregates over the pass's hour buckets.
type colAcc struct {
	count, zeros, negatives, empty, trues int64
	sum, sumSq, sumLen                    float64
	min, max, minLen, maxLen              *float64
	distinct                              *int64
}

func (a *colAcc) add(agg aggregate, v any) {
	if v == nil {
		return
	}
	keep := func(cur **float64, f float64, less bool) {
		if *cur == nil || (less && f < **cur) || (!less && f > **cur) {
			*cur = &f
		}
	}
	switch agg {
	case aggCount:
		a.count += warehouse.Int(v)
	case aggZeros:
		a.zeros += warehouse.Int(v)
	case aggNegatives:
		a.negatives += warehouse.Int(v)
	case aggEmpty:
		a.empty += warehouse.Int(v)
	case aggTrues:
		a.trues += warehouse.Int(v)
	case aggSum:
		a.sum += anyFloat(v)
	case aggSumSq:
		a.sumSq += anyFloat(v)
	case aggSumLen:
		a.sumLen += anyFloat(v)
	case aggMin:
		keep(&a.min, anyFloat(v), true)
	case aggMax:
		keep(&a.max, anyFloat(v), false)
	case aggMinLen:
		keep(&a.minLen, anyFloat(v), true)
	case aggMaxLen:
		keep(&a.maxLen, anyFloat(v), false)
	}
}

// value computes one metric from the accumulated aggregates; ok is false when the window holds
// no value to measure (no non-null value for a rate or a mean).
func (a *colAcc) value(m ColumnMetric, hours float64) (float64, bool) {
	share := func(n int64) (float64, bool) {
		if a.count == 0 {
			return 0, false
		}
		return float64(n) / float64(a.count), true
	}
	deref := func(p *float64) (float64, bool) {
		if p == nil {
			return 0, false
		}
		return *p, true
	}
	switch m {
	case ZeroRate:
		return share(a.zeros)
	case NegativeRate:
		return share(a.negatives)
	case EmptyRate:
		return share(a.empty)
	case TrueRate:
		return share(a.trues)
	case MinValue:
		return deref(a.min)
	case MaxValue:
		return deref(a.max)
	case MinLength:
		return deref(a.minLen)
	case MaxLength:
		return deref(a.maxLen)
	case Mean:
		if a.count == 0 {
			return 0, false
		}
		return a.sum / float64(a.count), true
	case MeanLength:
		if a.count == 0 {
			return 0, false
		}
		return a.sumLen / float64(a.count), true
	case SumPerHour:
		return a.sum / hours, true
	case StdDev:
		if a.count < 2 {
			return 0, false
		}
		n := float64(a.count)
		v := (a.sumSq - a.sum*a.sum/n) / (n - 1)
		return math.Sqrt(math.Max(v, 0)), true // rounding can leave a tiny negative variance
	case Distinct:
		if a.distinct == nil {
			return 0, false
		}
		return float64(*a.distinct), true
	}
	return 0, false
}

// columnPolicy is how each metric is judged. Shares of bad values (zeros, negatives, empty
// strings) alarm upwards past one percentage point, as null rates do; levels warn both ways past
// 10 % of their median and fail past 20 % (a ×1/1000 unit change or a lost field moves them far
// more; a noisy series widens its band through its MAD); extremes and
// spread move more by nature and get a 25 % floor.
func columnPolicy(m ColumnMetric) Policy {
	p := Policy{MinPoints: 5, MaxPoints: 60, WarnZ: 3, FailZ: 5, Direction: Both}
	switch m {
	case ZeroRate, NegativeRate, EmptyRate:
		p.AbsFloor, p.Direction = 0.01, UpIsBad
	case TrueRate:
		p.AbsFloor = 0.05
	case Mean, SumPerHour, MeanLength, Distinct:
		p.AbsFloor, p.RelFloor = 1e-9, 0.1
	default:
		p.AbsFloor, p.RelFloor = 1e-9, 0.25
	}
	return p
}

// isShare reports whether a metric is a ratio between 0 and 1.
func isShare(m ColumnMetric) bool {
	return m == ZeroRate || m == NegativeRate || m == EmptyRate || m == TrueRate
}

// shareNoun is how a share reads after its percentage: "41% zeros".
var shareNoun = map[ColumnMetric]string{ZeroRate: "zeros", NegativeRate: "negative", EmptyRate: "empty strings", TrueRate: "true"}

// levelPhrase is how a level metric reads as a subject: "the hourly sum is …".
var levelPhrase = map[ColumnMetric]string{
	MinValue: "the minimum", MaxValue: "the maximum", Mean: "the mean", SumPerHour: "the hourly sum", StdDev: "the standard deviation",
	Distinct: "the distinct count", MinLength: "the shortest value's length", MaxLength: "the longest value's length", MeanLength: "the mean length",
}

func metricUnit(m ColumnMetric) string {
	switch {
	case isShare(m):
		return "ratio"
	case m == SumPerHour:
		return "per hour"
	case m == MinLength || m == MaxLength || m == MeanLength:
		return "characters"
	case m == Distinct:
		return "values"
	}
	return "value"
}

// Threshold is a fixed limit on a metric, judged instead of (or where there is no) history.
type Threshold struct {
	// Metric is a column metric or null_rate.
	Metric string `json:"metric"`
	// Column is the column it applies to; empty means every measured column.
	Column string   `json:"column,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
}

// ValidateThresholds checks each limit names a known metric and at least one bound.
func ValidateThresholds(ts []Threshold) error {
	known := append(AllColumnMetrics(), string(NullRate))
	for i, t := range ts {
		if !slices.Contains(known, t.Metric) {
			return fmt.Errorf("thresholds[%d].metric: %q is unknown; use %s", i, t.Metric, strings.Join(known, ", "))
		}
		if t.Min == nil && t.Max == nil {
			return fmt.Errorf("thresholds[%d]: give min, max or both", i)
		}
		if t.Min != nil && t.Max != nil && *t.Min > *t.Max {
			return fmt.Errorf("thresholds[%d]: min %v is above max %v", i, *t.Min, *t.Max)
		}
	}
	return nil
}

func thresholdFor(ts []Threshold, metric, column string) *Threshold {
	for i := range ts {
		if ts[i].Metric == metric && (ts[i].Column == "" || strings.EqualFold(ts[i].Column, column)) {
			return &ts[i]
		}
	}
	return nil
}

// sig renders a measured value: thousands separators for large values, three significant digits
// for small ones (a mean of 0.0123 must not read as 0).
func sig(v float64) string {
	if math.Abs(v) >= 100 || v == math.Trunc(v) {
		return num(v)
	}
	s := fmt.Sprintf("%.3g", v)
	if strings.ContainsAny(s, "e") {
		return fmt.Sprintf("%g", v)
	}
	return s
}
