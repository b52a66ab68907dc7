package quality

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// runDistinct reads every distinct count the plan asked for in its one query.
func (c *Checker) runDistinct(ctx context.Context, p *plan, prof *profile) error {
	rows, err := p.stmts.QueryAll(ctx, p.distinct.sql, p.distinct.args, 1)
	if err != nil {
		return err
	}
	if len(rows.Rows) == 0 {
		return nil
	}
	for i, mc := range p.metricCols {
		if mc.distinctAt >= 0 {
			n := warehouse.Int(rows.Rows[0][mc.distinctAt])
			prof.cols[i].distinct = &n
		}
	}
	return nil
}

// columnResult judges one column metric against a fixed threshold when one is set, else against
// the metric's own history, and says so in one sentence.
func (c *Checker) columnResult(ctx context.Context, p *plan, mc metricCol, m ColumnMetric, acc *colAcc, rep *Report, req Request, now time.Time) (Result, error) {
	r := Result{Check: string(Column), Metric: string(m), Subject: mc.name, Unit: metricUnit(m), Status: Pass, SQL: p.profileSQL()}
	if m == Distinct && p.distinct != nil {
		r.SQL = p.distinct.sql
	}
	v, ok := acc.value(m, rep.Window.Hours(now))
	if !ok {
		r.Why = "no values " + rep.Window.Label + " to measure " + string(m) + " on"
		return r, nil
	}
	return c.judgeColumnMetric(ctx, r, m, v, acc, rep, req, now)
}

// judgeColumnMetric sets r's value and judges it against a fixed threshold when one is set, else
// against the metric's own history (warehouse and lake checks alike).
func (c *Checker) judgeColumnMetric(ctx context.Context, r Result, m ColumnMetric, v float64, acc *colAcc, rep *Report, req Request, now time.Time) (Result, error) {
	r.Value, r.recorded = round(v, 6), true
	f := sig
	if isShare(m) {
		f = pct
	}
	head := columnHead(m, v, acc, rep.Window.Label)
	if t := thresholdFor(req.Thresholds, string(m), r.Subject); t != nil {
		r.judgeThreshold(t, v, head, f)
		return r, nil
	}
	pol := columnPolicy(m)
	b, ok, err := c.baseline(ctx, rep, r.Metric, r.Subject, now, pol)
	if err != nil {
		return r, err
	}
	if !ok {
		r.Why = head + "; " + tooFew(b.Points, pol.MinPoints)
		return r, nil
	}
	hi := math.Inf(1)
	lo := math.Inf(-1)
	if isShare(m) {
		lo, hi = 0, 1
	}
	r.setBaseline(b, lo, hi)
	r.Status = b.Judge(v, pol.Direction)
	switch {
	case isShare(m):
		r.Why = head + " against " + describeShare(*r.Baseline, now)
	case r.Status != Pass && b.Median != 0:
		change := (v - b.Median) / math.Abs(b.Median)
		dir := "above"
		if change < 0 {
			dir = "below"
		}
		r.Why = fmt.Sprintf("%s is %s %s its baseline: %s %s against %s", levelPhrase[m], pct(math.Abs(change)), dir, f(v), rep.Window.Label, describe(*r.Baseline, f, ""))
	default:
		r.Why = head + " against " + describe(*r.Baseline, f, "")
	}
	return r, nil
}

// judgeThreshold judges v against a fixed limit instead of history.
func (r *Result) judgeThreshold(t *Threshold, v float64, head string, f func(float64) string) {
	r.ExpectedLow, r.ExpectedHigh = t.Min, t.Max
	switch {
	case t.Max != nil && v > *t.Max:
		r.Status, r.Why = Fail, head+" against a limit of at most "+f(*t.Max)
	case t.Min != nil && v < *t.Min:
		r.Status, r.Why = Fail, head+" against a limit of at least "+f(*t.Min)
	default:
		r.Status, r.Why = Pass, head+" within its limit"
	}
}

// columnHead is the measured half of a sentence: "41% zeros today", "the mean is 12.5 today".
func columnHead(m ColumnMetric, v float64, acc *colAcc, label string) string {
	switch {
	case m == TrueRate:
		return fmt.Sprintf("%s true (%s true, %s false) %s", pct(v), num(float64(acc.trues)), num(float64(acc.count-acc.trues)), label)
	case m == NegativeRate:
		return fmt.Sprintf("%s negative (%s %s) %s", pct(v), num(float64(acc.negatives)), plural(acc.negatives, "value", "values"), label)
	case isShare(m):
		return pct(v) + " " + shareNoun[m] + " " + label
	}
	return levelPhrase[m] + " is " + sig(v) + " " + label
}

// describeShare renders the history of a share of bad values by its worst point: "at most 0.3%
// in the last 14 days" (what an engineer asks first: was it ever this bad?).
func describeShare(b Baseline, now time.Time) string {
	if b.AllEqual {
		return describe(b, pct, "")
	}
	days := int(math.Round(now.Sub(b.Oldest).Hours() / 24))
	span := fmt.Sprintf("over %d earlier checks", b.Points)
	if days >= 2 {
		span = fmt.Sprintf("in the last %d days", days)
	}
	return "at most " + pct(b.Max) + " " + span
}
