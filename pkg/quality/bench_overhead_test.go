package quality_test

import (
	"context"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/quality"
)

// BenchmarkQualityRunParts splits one "today" run on an indexed table into its parts, so the
// fixed cost around the warehouse statements can be told apart: one trivial statement through the
// handle and through a bare connection, resolving the table (cached per
// handle), planning (which reads the timestamp's layout), the planned statements alone (bare,
// through the handle, and in one snapshot as a run sends them), and the
// whole run (which adds the baselines and the history write). DW_BENCH_ROWS sets the size.
func BenchmarkQualityRunParts(b *testing.B) {
	n := benchRows(b)
	_, until, today := benchSpan(n)
	for _, eng := range []string{"sqlite", "postgres"} {
		b.Run(eng, func(b *testing.B) {
			wh, raw, exec := benchTable(b, eng, n)
			exec("CREATE INDEX usage_hourly_hour ON usage_hourly (hour)", benchAnalyze(eng))
			ctx := context.Background()
			c := quality.NewChecker(wh, quality.NewHistory(openStoreB(b)), func() time.Time { return until })
			req := quality.Request{Table: "usage_hourly", TimestampColumn: "hour",
				Window:     quality.Window{Since: today, Until: until, Label: "today", TimeZone: "UTC"},
				KeyColumns: []string{"usage_id"}, Checks: []quality.Check{quality.Volume, quality.Freshness, quality.NullRate, quality.Uniqueness}}
			stmts, args, err := c.PlannedStatements(ctx, req, until)
			if err != nil {
				b.Fatal(err)
			}
			// One trivial statement through the warehouse handle (its statement timeout and, on
			// PostgreSQL, its own read-only transaction) and through a bare connection.
			b.Run("select_1_handle", func(b *testing.B) {
				var one int
				for b.Loop() {
					if err := wh.QueryRow(ctx, "SELECT 1", nil, &one); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("select_1_bare", func(b *testing.B) {
				var one int
				for b.Loop() {
					if err := raw.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("resolve", func(b *testing.B) {
				for b.Loop() {
					if _, err := wh.Resolve(ctx, "usage_hourly"); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("resolve_and_plan", func(b *testing.B) {
				for b.Loop() {
					if _, _, err := c.PlannedStatements(ctx, req, until); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("planned_statements", func(b *testing.B) {
				for b.Loop() {
					for i, q := range stmts {
						runSQLArgs(b, raw, q, args[i])
					}
				}
			})
			// The same statements through the warehouse handle, each in its own transaction on
			// PostgreSQL, and in one snapshot as a run sends them.
			b.Run("planned_statements_handle", func(b *testing.B) {
				for b.Loop() {
					for i, q := range stmts {
						if _, err := wh.QueryAll(ctx, q, args[i], 100000); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
			b.Run("planned_statements_snapshot", func(b *testing.B) {
				for b.Loop() {
					snap, err := wh.Snapshot(ctx)
					if err != nil {
						b.Fatal(err)
					}
					for i, q := range stmts {
						if _, err := snap.QueryAll(ctx, q, args[i], 100000); err != nil {
							b.Fatal(err)
						}
					}
					if err := snap.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
			nohist := quality.NewChecker(wh, nil, func() time.Time { return until })
			b.Run("run_no_history", func(b *testing.B) {
				for b.Loop() {
					if _, err := nohist.Run(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("run", func(b *testing.B) {
				for b.Loop() {
					if _, err := c.Run(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
			// The whole run with its baselines prefetched (as the tool runs) against the same run
			// reading each baseline when its result asks, interleaved, on one history (medians).
			asked := quality.WithoutPrefetch(c)
			b.Run("run_prefetch_vs_asked", func(b *testing.B) {
				run := func(c *quality.Checker) func() {
					return func() {
						if _, err := c.Run(ctx, req); err != nil {
							b.Fatal(err)
						}
					}
				}
				samples := interleaveSamples(b, []func(){run(c), run(asked)}, 1, nil)
				pre, ask := quality.Median(samples[0]), quality.Median(samples[1])
				b.ReportMetric(pre, "prefetch_s")
				b.ReportMetric(ask, "asked_s")
				b.ReportMetric(pre/ask, "prefetch/asked")
			})
		})
	}
}
