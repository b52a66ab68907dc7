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
	p, err := c.plan(ctx, c.wh, ti, req, req.Checks, now)
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

// WithoutPrefetch returns a checker on the same warehouse and history that reads each baseline
// when its result asks for it, as before the prefetch: the reference the prefetch must match.
func WithoutPrefetch(c *Checker) *Checker {
	return &Checker{wh: c.wh, hist: c.hist, now: c.now, baselineMisses: c.baselineMisses}
}

// BaselineMisses counts the baselines c's runs asked for that their plans had not prefetched.
func BaselineMisses(c *Checker) int64 { return c.baselineMisses.Load() }

// Median is the baselines' median, for the benchmarks' figures.
func Median(v []float64) float64 { return median(v) }

// SeriesReads counts the series statements h has sent to the store (cache misses included).
func SeriesReads(h *History) int64 { return h.seriesReads.Load() }
