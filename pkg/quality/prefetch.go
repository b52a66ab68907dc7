package quality

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// seriesKey names one history read of a run: a metric's series for one subject, or (prefix) every
// series whose subject starts with it, such as a dimension's keys; limit bounds the points read.
type seriesKey struct {
	metric, subject string
	prefix          bool
	limit           int
}

// singleSeries is the key of one subject's baseline (eight weeks of hourly runs).
func singleSeries(metric, subject string) seriesKey {
	return seriesKey{metric: metric, subject: subject, limit: baselineDepth}
}

// baselineReads are a run's history reads, listed right after planning: every baseline is read at
// the run's clock and its series is known from the plan (baselineKeys). One goroutine reads them
// while the warehouse runs the statements, in the order the results ask for them, on its own store
// connection. A result whose series is being read waits for that read; one whose read has not
// started reads it itself rather than wait behind the others (so neither goroutine idles while
// reads remain, and a run whose statements are quicker than its reads pays for no hand-off). A
// result asking for a series that was not listed reads it too, and counts a miss: the plan's list
// and the results disagree, which the tests keep at zero. The listed reads go through the
// history's series cache, validated once for the run by whichever read comes first.
type baselineReads struct {
	at     time.Time
	reads  map[seriesKey]*seriesRead
	read   func(ctx context.Context, k seriesKey) (map[string][]Point, error)
	misses *atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

// seriesRead is one prefetched read: whoever claims it first reads it; ready closes once pts and
// err are set.
type seriesRead struct {
	key     seriesKey
	claimed atomic.Bool
	ready   chan struct{}
	pts     map[string][]Point
	err     error
}

// claimAndRead reads r unless another goroutine claimed it first.
func (b *baselineReads) claimAndRead(ctx context.Context, r *seriesRead) {
	if !r.claimed.CompareAndSwap(false, true) {
		return
	}
	r.pts, r.err = b.read(ctx, r.key)
	close(r.ready)
}

// prefetchBaselines lists keys of asset at `at` and starts reading them; it returns at once, nil
// when there is no history or nothing to read. The reads stop when ctx ends or stop is called; a read that fails
// keeps its error for the result that asks for it (an unreadable history fails the run, never a
// silent pass without a baseline).
func (c *Checker) prefetchBaselines(ctx context.Context, asset string, keys []seriesKey, at time.Time) *baselineReads {
	if c.hist == nil || !c.prefetch || len(keys) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	// The asset's cached series are validated once, by whichever read comes first.
	view := sync.OnceValue(func() *seriesView { return c.hist.view(ctx, asset) })
	b := &baselineReads{at: at, reads: make(map[seriesKey]*seriesRead, len(keys)), misses: c.baselineMisses, cancel: cancel, done: make(chan struct{}),
		read: func(ctx context.Context, k seriesKey) (map[string][]Point, error) {
			return view().read(ctx, k, at)
		}}
	var order []*seriesRead
	for _, k := range keys {
		if _, dup := b.reads[k]; dup {
			continue
		}
		r := &seriesRead{key: k, ready: make(chan struct{})}
		b.reads[k] = r
		order = append(order, r)
	}
	go func() {
		defer close(b.done)
		for _, r := range order {
			b.claimAndRead(ctx, r)
		}
	}()
	return b
}

// get returns k's points: read by the prefetch (waiting for a read in flight) or, when its read
// has not started, read here. ok is false when k was not prefetched at `at` (the caller then reads
// it itself).
func (b *baselineReads) get(ctx context.Context, k seriesKey, at time.Time) (pts map[string][]Point, ok bool, err error) {
	if b == nil {
		return nil, false, nil
	}
	r, found := b.reads[k]
	if !found || !at.Equal(b.at) {
		if b.misses != nil {
			b.misses.Add(1)
		}
		return nil, false, nil
	}
	b.claimAndRead(ctx, r)
	select {
	case <-r.ready:
		return r.pts, true, r.err
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
}

// stop cancels the reads still running and waits for the reading goroutine, so nothing reads the
// store after the run returns.
func (b *baselineReads) stop() {
	if b == nil {
		return
	}
	b.cancel()
	<-b.done
}

// seriesPoints returns the eligible points of k at `at`, by subject: from the run's prefetch when
// it holds k, otherwise read now. Every baseline of every result kind comes through here. The
// points may be shared with the history's cache (seriescache.go): read them, never write them.
func (c *Checker) seriesPoints(ctx context.Context, rep *Report, k seriesKey, at time.Time) (map[string][]Point, error) {
	if pts, ok, err := rep.baselines.get(ctx, k, at); ok {
		return pts, err
	}
	return c.hist.read(ctx, rep.Asset, k, at)
}

// baselineKeys lists every history series a run of p will judge against, in the order the results
// ask for them (execute's order). A series listed but not asked for (freshness of an empty table)
// costs one read; one asked for but not listed is read when asked (a miss).
func (p *plan) baselineKeys(req Request, w Window, now time.Time) []seriesKey {
	var keys []seriesKey
	if p.has(Volume) {
		keys = append(keys, singleSeries("rows_per_hour", ""))
	}
	if p.has(VolumeByHour) {
		if _, subject, ok := p.hourOfDay(w, now); ok {
			keys = append(keys, singleSeries("rows_in_hour", subject))
		}
	}
	if p.has(Freshness) {
		keys = append(keys, singleSeries("freshness_lag_seconds", p.tsName))
		if p.loadQ != nil {
			keys = append(keys, singleSeries("load_lag_seconds", p.loadName))
		}
	}
	if p.has(NullRate) {
		for _, col := range p.nullCols {
			if !col.notNull && thresholdFor(req.Thresholds, string(NullRate), col.name) == nil {
				keys = append(keys, singleSeries("null_rate", col.name))
			}
		}
	}
	if p.has(Column) {
		for _, mc := range p.metricCols {
			for _, m := range mc.metrics {
				if thresholdFor(req.Thresholds, string(m), mc.name) == nil {
					keys = append(keys, singleSeries(string(m), mc.name))
				}
			}
		}
	}
	if p.has(Dimension) && p.dim != nil {
		keys = append(keys, p.dim.seriesKey())
	}
	if p.has(Reconcile) && p.recon != nil {
		keys = append(keys, singleSeries("reconcile_ratio", p.recon.subject()))
	}
	return keys
}
