package quality_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/quality"
)

// prefetchRequests are runs of every result kind that judges against the history: volume, the
// hour of day, event freshness with load lag, null rates (one under a fixed limit, so its series
// is not read), column metrics, a dimension's keys and a reconciliation.
func prefetchRequests() []quality.Request {
	limit := 0.5
	return []quality.Request{
		{Table: "api_costs", TimestampColumn: "at", Checks: []quality.Check{quality.Volume, quality.VolumeByHour, quality.Freshness, quality.NullRate, quality.Column},
			Thresholds: []quality.Threshold{{Metric: "null_rate", Column: "region", Max: &limit}}},
		{Table: "billing_lines", TimestampColumn: "at", Checks: []quality.Check{quality.Volume, quality.Dimension}, Dimension: &quality.DimensionSpec{Column: "account_id", Measure: "amount"}},
		{Table: "usage_model", TimestampColumn: "at", Checks: []quality.Check{quality.Volume, quality.Reconcile}, Reconcile: &quality.ReconcileSpec{Upstream: "raw_usage", Column: "amount"}},
		{Table: "arrivals", TimestampColumn: "event_at", LoadTimestampColumn: "loaded_at", Checks: []quality.Check{quality.Volume, quality.VolumeByHour, quality.Freshness}},
	}
}

// runDays runs req on c at 15:05 on each of the scenario's 15 days and at 03:30 on the last, with
// c's clock set to each moment, and returns the reports as JSON without their durations.
func runDays(t *testing.T, c *quality.Checker, clock *time.Time, req quality.Request) []string {
	t.Helper()
	moments := []time.Time{}
	for day := range 15 {
		moments = append(moments, at15(day))
	}
	moments = append(moments, time.Date(2025, 12, 15, 3, 30, 0, 0, time.UTC))
	var out []string
	for _, now := range moments {
		*clock = now
		w, err := quality.ParseWindow(quality.WindowSpec{Window: "today", TimeZone: "UTC"}, now)
		if err != nil {
			t.Fatal(err)
		}
		req.Window = w
		rep, err := c.Run(context.Background(), req)
		if err != nil {
			t.Fatalf("%s at %s: %v", req.Table, now, err)
		}
		rep.DurationMS = 0
		js, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(js))
	}
	return out
}

// The prefetched baselines are the ones each result would have read itself: every report of a
// history of runs is the same with and without the prefetch, and no result asked for a series its
// plan had not listed.
func TestPrefetchedBaselinesMatchReadsWhenAsked(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wh := openColumnScenario(t, engine)
			for _, req := range prefetchRequests() {
				t.Run(req.Table, func(t *testing.T) {
					var clockA, clockB time.Time
					a := quality.NewChecker(wh, quality.NewHistory(openStore(t)), func() time.Time { return clockA })
					b := quality.WithoutPrefetch(quality.NewChecker(wh, quality.NewHistory(openStore(t)), func() time.Time { return clockB }))
					got, want := runDays(t, a, &clockA, req), runDays(t, b, &clockB, req)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("run %d differs with the prefetch:\n got %s\nwant %s", i, got[i], want[i])
						}
					}
					if n := quality.BaselineMisses(a); n != 0 {
						t.Errorf("%d baselines were read when asked, not prefetched", n)
					}
					// Not vacuous: the last day's runs were judged against a baseline.
					var last quality.Report
					if err := json.Unmarshal([]byte(got[14]), &last); err != nil {
						t.Fatal(err)
					}
					judged := 0
					for _, r := range last.Results {
						if r.Baseline != nil || len(r.Keys) > 0 {
							judged++
						}
					}
					if judged == 0 {
						t.Errorf("no result of the last day had a baseline: %s", got[14])
					}
				})
			}
		})
	}
}

// A run whose context is cancelled while it runs stops, the baseline reads with it, and says so.
func TestCancelledRunStopsItsBaselineReads(t *testing.T) {
	wh := openColumnScenario(t, "sqlite")
	hist := quality.NewHistory(openStore(t))
	req := prefetchRequests()[0]
	for day := range 14 {
		runAt(t, wh, hist, at15(day), req)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req.Progress = func(done, total int, msg string) { cancel() } // after the first warehouse statement
	w, err := quality.ParseWindow(quality.WindowSpec{Window: "today", TimeZone: "UTC"}, at15(14))
	if err != nil {
		t.Fatal(err)
	}
	req.Window = w
	rep, err := quality.NewChecker(wh, hist, func() time.Time { return at15(14) }).Run(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: report %v, err %v", rep, err)
	}
	// The history kept the 14 runs and nothing of the cancelled one's points.
	runs, err := hist.Runs(context.Background(), quality.HistoryQuery{Metric: "rows_per_hour", Limit: 100})
	if err != nil || len(runs) != 14 {
		t.Fatalf("runs with rows_per_hour = %d, %v", len(runs), err)
	}
}

// Runs on one checker at once (a server answers calls concurrently) each read their own baselines:
// under -race, every report equals the same run made alone.
func TestConcurrentRunsOnOneChecker(t *testing.T) {
	wh := openColumnScenario(t, "sqlite")
	hist := quality.NewHistory(openStore(t))
	reqs := prefetchRequests()
	for day := range 14 {
		for _, req := range reqs {
			runAt(t, wh, hist, at15(day), req)
		}
	}
	now := at15(14)
	w, err := quality.ParseWindow(quality.WindowSpec{Window: "today", TimeZone: "UTC"}, now)
	if err != nil {
		t.Fatal(err)
	}
	c := quality.NewChecker(wh, hist, func() time.Time { return now })
	const rounds = 3
	reports := make([][]*quality.Report, len(reqs))
	errs := make(chan error, len(reqs)*rounds)
	var wg sync.WaitGroup
	for i, req := range reqs {
		req.Window = w
		reports[i] = make([]*quality.Report, rounds)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range rounds {
				rep, err := c.Run(context.Background(), req)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", req.Table, err)
					return
				}
				reports[i][k] = rep
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := quality.BaselineMisses(c); n != 0 {
		t.Errorf("%d baselines were read when asked, not prefetched", n)
	}
	// A baseline reads only points before the run's clock, so no round's points reach another's
	// baselines: every round's verdicts equal the first round's.
	for i := range reqs {
		for k := 1; k < rounds; k++ {
			if a, b := verdicts(reports[i][0]), verdicts(reports[i][k]); a != b {
				t.Errorf("%s round %d: %s, round 0: %s", reqs[i].Table, k, b, a)
			}
		}
	}
}

// verdicts is each result's metric, subject and status.
func verdicts(rep *quality.Report) string {
	s := ""
	for _, r := range rep.Results {
		s += r.Metric + "/" + r.Subject + "=" + string(r.Status) + " "
	}
	return s
}

// A monitor's next run finds its baselines in the history's cache, brought up to date by the
// previous run's own record: it sends no series read to the store, though it judges against a
// baseline. (That the cached baselines are the store's is TestPrefetchedBaselinesMatchReadsWhenAsked.)
func TestNextRunReadsNoSeries(t *testing.T) {
	wh := openColumnScenario(t, "sqlite")
	for _, req := range []quality.Request{prefetchRequests()[0], prefetchRequests()[3]} {
		t.Run(req.Table, func(t *testing.T) {
			hist := quality.NewHistory(openStore(t))
			for day := range 14 {
				runAt(t, wh, hist, at15(day), req)
			}
			before := quality.SeriesReads(hist)
			rep := runAt(t, wh, hist, at15(14), req)
			if n := quality.SeriesReads(hist) - before; n != 0 {
				t.Errorf("the 15th run read %d series from the store, want 0", n)
			}
			judged := 0
			for _, r := range rep.Results {
				if r.Baseline != nil {
					judged++
				}
			}
			if judged == 0 {
				t.Errorf("the 15th run judged nothing against a baseline: %+v", rep.Results)
			}
		})
	}
}
