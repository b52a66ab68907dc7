package quality

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dataworkers/dw/pkg/store"
)

// The series cache keeps the baseline series a History read, per asset, so that the next run of
// the same monitor does not read them again: between two runs the only change is usually the
// points the previous run wrote, and those the cache adds itself. It stays exact by the asset's
// version in quality_series_versions (migration 0015), which triggers bump on every write of a
// metric point or an incident of the asset: a run reads that version once, and uses its cached
// series only when they were read (or last brought up to date) at that version.

// seriesCacheAssets and seriesCachePoints bound the cache: at most 256 assets and about 32 MB
// of points (a Point is 32 bytes; room kept for coming points counts); an arbitrary asset makes
// room when either is reached. seriesHeadroom is the room a series keeps for the points of the
// runs that follow, so that most runs add theirs without copying the series.
const (
	seriesCacheAssets = 256
	seriesCachePoints = 1 << 20
	seriesHeadroom    = 64
)

// seriesCache is a History's cached series, guarded by mu (runs are concurrent).
type seriesCache struct {
	mu     sync.Mutex
	assets map[string]*assetSeries
	points int // the points held, over every asset
}

// assetSeries is one asset's cached series, exact at version. Each series is the newest k.limit
// eligible points of all time (read with no `at` bound), newest first; a run at `at` is served
// the first k.limit of those before `at`.
type assetSeries struct {
	version int64
	series  map[seriesKey]*cachedSeries
	points  int
}

// cachedSeries is one series, buf[start:end], newest first. Runs are served slices of it, not
// copies, so nothing a run was served is ever written again: a newer point goes below start,
// into room no served slice covers, and the oldest point leaves by moving end; any other change
// builds a new buf. tiedFrom is the earliest instant at which an added point ties one already
// there (zero when none did): the engines order such points as they choose, so a read that would
// include them goes to the store.
type cachedSeries struct {
	buf        []Point
	start, end int
	tiedFrom   time.Time
}

func (s *cachedSeries) points() []Point { return s.buf[s.start:s.end] }

func newSeriesCache() *seriesCache { return &seriesCache{assets: map[string]*assetSeries{}} }

// seriesView is one run's access to an asset's cached series: the version it read, once, before
// any series. cached is false when that read failed (every read then goes to the store).
type seriesView struct {
	h       *History
	asset   string
	version int64
	cached  bool
}

// seriesVersionSQL reads the version every cached series of an asset depends on.
const seriesVersionSQL = `SELECT coalesce((SELECT version FROM quality_series_versions WHERE asset = ?), 0)`

// seriesVersion reads asset's version (0 before its first point or incident).
func (h *History) seriesVersion(ctx context.Context, asset string) (int64, error) {
	rows, err := h.query(ctx, seriesVersionSQL, asset)
	if err != nil {
		return 0, fmt.Errorf("read the series version of %s: %w", asset, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, fmt.Errorf("read the series version of %s: no row: %w", asset, rows.Err())
	}
	var version int64
	if err := rows.Scan(&version); err != nil {
		return 0, fmt.Errorf("read the series version of %s: %w", asset, err)
	}
	return version, rows.Err()
}

// view validates asset's cached series for one run. Reading the version before any series means
// a write in between can only make a cached series look older than it is, never fresher.
func (h *History) view(ctx context.Context, asset string) *seriesView {
	v := &seriesView{h: h, asset: asset}
	if err := h.st.AwaitWrites(ctx); err != nil {
		return v
	}
	version, err := h.seriesVersion(ctx, asset)
	if err != nil {
		return v // uncached: the series reads report a broken store themselves
	}
	h.cache.validate(asset, version)
	v.version, v.cached = version, true
	return v
}

// read is History.read through the cache. Prefix keys (a dimension's keys) are not cached: their
// limit spans every subject, and a run writes many points at one instant, whose order at the
// limit is the engine's choice.
func (v *seriesView) read(ctx context.Context, k seriesKey, at time.Time) (map[string][]Point, error) {
	if !v.cached || k.prefix || k.limit <= 0 {
		return v.h.read(ctx, v.asset, k, at)
	}
	pts, hit, exact := v.h.cache.serve(v.asset, v.version, k, at)
	if hit {
		if exact {
			return bySubject(k.subject, pts), nil
		}
		return v.h.read(ctx, v.asset, k, at)
	}
	all, err := v.h.series(ctx, v.asset, k.metric, "p.subject = ?", k.subject, farFuture(), k.limit)
	if err != nil {
		return nil, err
	}
	full := all[k.subject]
	// Keep the series only if the store is still at the version: then no write of the asset
	// came between the two reads, and the series is exactly its state at that version.
	if now, err := v.h.seriesVersion(ctx, v.asset); err == nil && now == v.version {
		v.h.cache.put(v.asset, v.version, k, &cachedSeries{buf: full, end: len(full)})
	}
	pts, exact = servedAt(full, k.limit, at)
	if !exact {
		return v.h.read(ctx, v.asset, k, at)
	}
	return bySubject(k.subject, pts), nil
}

// farFuture bounds a cached series' read: every point the series has.
func farFuture() time.Time { return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }

// bySubject is one subject's points as History.series returns them (no entry when empty).
func bySubject(subject string, pts []Point) map[string][]Point {
	if len(pts) == 0 {
		return map[string][]Point{}
	}
	return map[string][]Point{subject: pts}
}

// servedAt is what a read at `at` returns from full, a series' newest `limit` points: the first
// `limit` before `at`, shared with the cache (its capacity cut, so an append copies). exact is
// false when full was cut at the limit and points before `at` may be missing from it (the store
// must answer).
func servedAt(full []Point, limit int, at time.Time) (pts []Point, exact bool) {
	i := 0
	for i < len(full) && !full[i].At.Before(at) {
		i++
	}
	if i > 0 && len(full) >= limit {
		return nil, false
	}
	j := min(len(full), i+limit)
	return full[i:j:j], true
}

// validate makes asset's entry the one at version: an older entry is dropped, a newer one (read
// by a run that validated after this one) is kept, and this run then reads from the store.
func (c *seriesCache) validate(asset string, version int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.assets[asset]; ok {
		if e.version >= version {
			return
		}
		c.dropLocked(asset)
	}
	if len(c.assets) >= seriesCacheAssets {
		c.evictLocked("")
	}
	c.assets[asset] = &assetSeries{version: version, series: map[seriesKey]*cachedSeries{}}
}

// serve answers k at `at` from asset's entry when it is at version (hit). exact as servedAt.
func (c *seriesCache) serve(asset string, version int64, k seriesKey, at time.Time) (pts []Point, hit, exact bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.assets[asset]
	if !ok || e.version != version {
		return nil, false, false
	}
	s, ok := e.series[k]
	if !ok {
		return nil, false, false
	}
	if !s.tiedFrom.IsZero() && s.tiedFrom.Before(at) {
		return nil, true, false
	}
	pts, exact = servedAt(s.points(), k.limit, at)
	return pts, true, exact
}

// put keeps k's series read at version, if asset's entry is still at that version.
func (c *seriesCache) put(asset string, version int64, k seriesKey, s *cachedSeries) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.assets[asset]
	if !ok || e.version != version {
		return
	}
	if old, ok := e.series[k]; ok {
		e.points -= len(old.buf)
		c.points -= len(old.buf)
		delete(e.series, k)
	}
	for c.points+len(s.buf) > seriesCachePoints && len(c.assets) > 1 {
		c.evictLocked(asset)
	}
	if c.points+len(s.buf) > seriesCachePoints {
		return
	}
	e.series[k] = s
	e.points += len(s.buf)
	c.points += len(s.buf)
}

// holds reports whether asset has an entry (a run's record then reads the version it leaves).
func (c *seriesCache) holds(asset string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.assets[asset]
	return ok
}

// drop forgets asset's series.
func (c *seriesCache) drop(asset string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(asset)
}

func (c *seriesCache) dropLocked(asset string) {
	if e, ok := c.assets[asset]; ok {
		c.points -= e.points
		delete(c.assets, asset)
	}
}

// evictLocked drops an arbitrary asset other than keep.
func (c *seriesCache) evictLocked(keep string) {
	for a := range c.assets {
		if a != keep {
			c.dropLocked(a)
			return
		}
	}
}

// applyRun brings asset's entry up to the run that was just committed, which wrote points at
// `at` and left the store at v.version. That is only sound when the entry is exactly the state
// before the run: its version plus one bump per point is the version the run read inside its own
// transaction (nobody else wrote the asset in between). The run's own points then go into the
// series they belong to when they are eligible: a pass with no incident, at an instant no
// incident of the asset covers (v.covered: one that is not a false positive, open then or
// resolved after it). A warn or fail is not eligible and is not added. Anything else drops the
// entry, and the next run reads the store.
func (c *seriesCache) applyRun(asset string, v recordedVersion, at time.Time, points []metricRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.assets[asset]
	if !ok {
		return
	}
	if v.covered || v.version != e.version+int64(len(points)) {
		c.dropLocked(asset)
		return
	}
	for _, pt := range points {
		if pt.status != Pass || pt.incident != nil {
			continue
		}
		k := singleSeries(pt.metric, pt.subject)
		s, ok := e.series[k]
		if !ok {
			continue
		}
		held := len(s.buf)
		s.add(k.limit, Point{At: at, Value: pt.value})
		e.points += len(s.buf) - held
		c.points += len(s.buf) - held
	}
	e.version = v.version
}

// add puts p in its place among s's points (the newest `limit`), and cuts them to the limit. A
// point at the instant of one already there goes among them, and moves tiedFrom.
func (s *cachedSeries) add(limit int, p Point) {
	pts := s.points()
	i, found := slices.BinarySearchFunc(pts, p.At, func(q Point, at time.Time) int { return at.Compare(q.At) })
	if found && (s.tiedFrom.IsZero() || p.At.Before(s.tiedFrom)) {
		s.tiedFrom = p.At
	}
	switch {
	case i == len(pts) && len(pts) >= limit:
		return // older than every point of a series cut at the limit: not among the newest
	case i == 0 && s.start > 0: // the usual case: the newest point, into the room below start
		s.start--
		s.buf[s.start] = p
	default:
		buf := make([]Point, seriesHeadroom+len(pts)+1)
		copy(buf[seriesHeadroom:], pts[:i])
		buf[seriesHeadroom+i] = p
		copy(buf[seriesHeadroom+i+1:], pts[i:])
		s.buf, s.start, s.end = buf, seriesHeadroom, len(buf)
	}
	s.end = min(s.end, s.start+limit)
}

// recordedVersion is what a record reads inside its own write transaction: the asset's version
// once the run's points are in, and whether an incident that could exclude a point covers the
// run's instant (the same terms as History.series: not a false positive, opened at or before it
// and not resolved before it).
type recordedVersion struct {
	version int64
	covered bool
}

// recordedVersionTerms reads an asset's recordedVersion terms (asset, asset, at, at): the
// version as it stands and the covering incident.
const recordedVersionTerms = `coalesce((SELECT version FROM quality_series_versions WHERE asset = ?), 0),
EXISTS (SELECT 1 FROM incidents WHERE asset = ? AND status <> 'false_positive' AND ? >= opened_at AND (resolved_at IS NULL OR ? <= resolved_at))`

// recordedAt is `at` as the store keeps it (and a read returns it).
func recordedAt(at time.Time) time.Time {
	t, err := store.ParseTimestamp(store.Timestamp(at))
	if err != nil {
		return at
	}
	return t
}
