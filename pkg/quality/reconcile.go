package quality

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dataworkers/dw/pkg/warehouse"
)

// ReconcileSpec compares a model with the upstream table it is built from over the same window:
// its row count, or the sum of one column, as a ratio to the upstream's. The ratio is judged
// against the ratio history has taught, so a model that drops 28 % of a steady source fails even
// when its own volume swings widely.
type ReconcileSpec struct {
	Upstream string `json:"upstream" jsonschema:"The upstream table: name, schema.name or database.schema.name"`
	// UpstreamTimestampColumn is the upstream's window column; default the model's window column
	// when the upstream has one of that name, else its only timestamp column.
	UpstreamTimestampColumn string `json:"upstream_timestamp_column,omitempty" jsonschema:"The upstream's window column; default the model's when the upstream has it, else its only timestamp column"`
	// Column is the model's numeric column to compare by sum; empty compares row counts.
	Column string `json:"column,omitempty" jsonschema:"Model column compared by sum; default row counts"`
	// UpstreamColumn is the upstream's column; default the same name as Column.
	UpstreamColumn string `json:"upstream_column,omitempty" jsonschema:"Upstream column compared by sum; default the same name as column"`
}

// reconPolicy: the ratio of a model to its source is steady by construction, so it warns past
// 5 % and fails past 10 % unless its history is noisier.
var reconPolicy = Policy{MinPoints: 5, MaxPoints: 60, WarnZ: 3, FailZ: 5, AbsFloor: 0.01, RelFloor: 0.05, Direction: Both}

type reconPlan struct {
	spec     ReconcileSpec
	column   string // the model's column (catalog spelling), "" for rows
	sumAt    int    // the model sum's position in the pass
	upstream string // resolved name
	upColumn string
	query    *query // count(*) [, sum] of the upstream over the window
}

// prepareReconcile checks the model side and leaves the sum for the pass to compute.
func (p *plan) prepareReconcile(ti *warehouse.TableInfo, spec ReconcileSpec) error {
	if spec.Upstream == "" {
		return fmt.Errorf("the reconciliation check needs reconcile.upstream, the table the model is built from")
	}
	rp := &reconPlan{spec: spec}
	if spec.Column != "" {
		col, err := ti.Column(spec.Column)
		if err != nil {
			return fmt.Errorf("reconcile.column: %w", err)
		}
		if kindOf(p.d, col.Type) != kindNumeric {
			return fmt.Errorf("%w: reconcile.column %s is %s, not numeric", warehouse.ErrTypeMismatch, col.Name, col.Type)
		}
		rp.column = col.Name
	}
	p.recon = rp
	return nil
}

// buildReconcile writes the upstream's query once its table is resolved; tf is how a SQLite
// upstream stores its window column.
func (p *plan) buildReconcile(up *warehouse.TableInfo, timeFormat timeFormatFunc) error {
	rp := p.recon
	qt, err := p.d.QuoteTable(up.Ref())
	if err != nil {
		return err
	}
	tsName := rp.spec.UpstreamTimestampColumn
	if _, err := up.Column(p.tsName); tsName == "" && err == nil {
		tsName = p.tsName // a model usually keeps its source's time column name
	}
	col, err := timestampColumn(p.d, up, tsName)
	if err != nil {
		return fmt.Errorf("reconcile.upstream_timestamp_column: %w", err)
	}
	sub := &plan{d: p.d, ts: mustQuote(p.d, col.Name), tsType: col.Type, since: p.since, until: p.until, loc: p.loc}
	if p.d.Engine == warehouse.SQLite {
		st, err := timeFormat(up, col, nil)
		if err != nil {
			return err
		}
		sub.tf = st.format
	}
	terms := "count(*)"
	if rp.column != "" {
		name := rp.spec.UpstreamColumn
		if name == "" {
			name = rp.column
		}
		uc, err := up.Column(name)
		if err != nil {
			return fmt.Errorf("reconcile.upstream_column: %w", err)
		}
		if kindOf(p.d, uc.Type) != kindNumeric {
			return fmt.Errorf("%w: reconcile.upstream_column %s is %s, not numeric", warehouse.ErrTypeMismatch, uc.Name, uc.Type)
		}
		rp.upColumn = uc.Name
		terms += ", " + p.d.FloatSum(mustQuote(p.d, uc.Name))
	}
	a := p.d.NewArgs()
	rp.upstream = up.Ref().String()
	rp.query = &query{sql: "SELECT " + terms + " FROM " + qt + " WHERE " + sub.window(a), args: a.Vals}
	return nil
}

func (c *Checker) reconcileResult(ctx context.Context, p *plan, prof *profile, rep *Report, now time.Time, step func(string)) (Result, error) {
	rp := p.recon
	subject, what := rp.subject(), "rows"
	if rp.column != "" {
		what = "sum of " + rp.column
	}
	r := Result{Check: string(Reconcile), Metric: "reconcile_ratio", Subject: subject, Unit: "ratio", Status: Pass, SQL: p.profileSQL() + ";\n" + rp.query.sql}
	rows, err := p.stmts.QueryAll(ctx, rp.query.sql, rp.query.args, 1)
	if err != nil {
		return r, fmt.Errorf("reconcile %s with %s: %w", rep.Table, rp.upstream, err)
	}
	step("reconcile with " + rp.upstream)
	var up float64
	if len(rows.Rows) > 0 {
		up = float64(warehouse.Int(rows.Rows[0][0]))
		if rp.column != "" {
			up = anyFloat(rows.Rows[0][1])
		}
	}
	model := float64(prof.rows)
	if rp.column != "" {
		model = prof.reconSum
	}
	switch {
	case up == 0 && model == 0:
		r.Why = fmt.Sprintf("neither %s nor %s has %s %s to compare", rep.Table, rp.upstream, what, rep.Window.Label)
		return r, nil
	case up == 0:
		r.Status = Warn
		r.Why = fmt.Sprintf("%s has %s %s but %s has none to compare with", rep.Table, what, rep.Window.Label, rp.upstream)
		return r, nil
	}
	ratio := model / up
	r.Value, r.recorded = round(ratio, 6), true
	head := fmt.Sprintf("%s holds %s of %s's rows %s (%s against %s)", rep.Table, pct(ratio), rp.upstream, rep.Window.Label, sig(model), sig(up))
	if rp.column != "" {
		head = fmt.Sprintf("the sum of %s in %s is %s of %s's %s (%s against %s)", rp.column, rep.Table, pct(ratio), rp.upstream, rep.Window.Label, sig(model), sig(up))
	}
	b, ok, err := c.baseline(ctx, rep, r.Metric, r.Subject, now, reconPolicy)
	switch {
	case err != nil:
		return r, err
	case !ok:
		r.Why = head + "; " + tooFew(b.Points, reconPolicy.MinPoints)
	default:
		r.setBaseline(b, 0, math.Inf(1))
		r.Status = b.Judge(ratio, reconPolicy.Direction)
		r.Why = head + " against " + describe(*r.Baseline, pct, "")
	}
	return r, nil
}

// subject names the reconciliation's series: the upstream table, or its column when a sum is compared.
func (rp *reconPlan) subject() string {
	if rp.column != "" {
		return rp.upstream + "." + rp.upColumn
	}
	return rp.upstream
}
