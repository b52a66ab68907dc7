package quality

import (
	"context"
	"time"
)

// PlannedStatements returns every statement (SQL and bound values) a run of req at now would send
// to the warehouse, so a benchmark can time the plan's own statements apart from the run's fixed
// costs (catalog reads, baselines, the history write).
func (c *Checker) PlannedStatements(ctx context.Context, req Request, now time.Time) ([]string, [][]any, error) {
	ti, err := c.wh.Resolve(ctx, req.Table)
	if err != nil {
		return nil, nil, err
	}
	p, err := c.plan(ctx, ti, req, req.Checks, now)
	if err != nil {
		return nil, nil, err
	}
	var sqls []string
	var args [][]any
	for _, q := range p.planQueries() {
		sqls, args = append(sqls, q.sql), append(args, q.args)
	}
	return sqls, args, nil
}
