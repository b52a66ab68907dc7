package quality

import (
	"math"
	"slices"
	"time"
)

// Status is a result's verdict.
type Status string

// Verdicts, in increasing severity.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

func worse(a, b Status) Status {
	rank := map[Status]int{Pass: 0, Warn: 1, Fail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Point is one earlier measurement of a metric.
type Point struct {
	At    time.Time
	Value float64
}

// Direction says which deviations are bad.
type Direction int

// Directions.
const (
	Both Direction = iota
	UpIsBad
	DownIsBad
)

// Policy tunes a baseline. The method: median and MAD (robust
// to the outliers that poison a mean), a seasonal bucket once there is enough history, a minimum
// number of points, and a small-change floor so a perfectly flat history does not turn the
// smallest wobble into an alert.
type Policy struct {
	MinPoints int     // fewer eligible points: no judgement against history
	MaxPoints int     // most recent eligible points used
	WarnZ     float64 // robust z beyond which a value warns
	FailZ     float64 // … and fails
	// AbsFloor and RelFloor widen the warn band to at least max(AbsFloor, RelFloor·|median|); the
	// fail band is twice that.
	AbsFloor  float64
	RelFloor  float64
	Direction Direction
}

// DefaultPolicy is the policy for metrics without their own.
var DefaultPolicy = Policy{MinPoints: 5, MaxPoints: 60, WarnZ: 3, FailZ: 5}

// Baseline is what earlier runs say a metric should be.
type Baseline struct {
	Points int     `json:"points" jsonschema:"Earlier eligible measurements the baseline was learnt from"`
	Median float64 `json:"median"`
	// MAD is the median absolute deviation scaled by 1.4826 (a robust standard deviation).
	MAD float64 `json:"mad"`
	// Low and High bound the expected range (values outside warn); FailLow/FailHigh the fail band.
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	FailLow  float64 `json:"fail_low"`
	FailHigh float64 `json:"fail_high"`
	// Seasonality is "none", "hour_of_day", "day_of_week" or "hour_of_week".
	Seasonality string `json:"seasonality"`
	// AllEqual is true when every earlier point had the same value (drives "in every earlier check").
	AllEqual bool `json:"all_equal"`
	// Max and Oldest are the largest point learnt from and when the oldest was measured, for
	// sentences such as "at most 0.3% in the last 14 days".
	Max    float64   `json:"max"`
	Oldest time.Time `json:"oldest"`
}

// seasonalities, most specific first. A bucket is used when the history spans at least two of its
// periods (a model needs ≥2× the seasonal period) and the bucket alone has MinPoints.
var seasonalities = []struct {
	name   string
	period time.Duration
	key    func(time.Time) int
}{
	{"hour_of_week", 7 * 24 * time.Hour, func(t time.Time) int { return int(t.Weekday())*24 + t.Hour() }},
	{"day_of_week", 7 * 24 * time.Hour, func(t time.Time) int { return int(t.Weekday()) }},
	{"hour_of_day", 24 * time.Hour, func(t time.Time) int { return t.Hour() }},
}

// ComputeBaseline learns a baseline for a measurement at `at` from earlier eligible points (the
// caller has already removed points inside incidents and the point under test). ok is false when
// there are fewer than MinPoints. loc is the zone seasonal buckets are read in.
func ComputeBaseline(points []Point, at time.Time, loc *time.Location, p Policy) (Baseline, bool) {
	if p.MinPoints <= 0 {
		p.MinPoints = DefaultPolicy.MinPoints
	}
	if p.MaxPoints <= 0 {
		p.MaxPoints = DefaultPolicy.MaxPoints
	}
	if p.WarnZ <= 0 {
		p.WarnZ, p.FailZ = DefaultPolicy.WarnZ, DefaultPolicy.FailZ
	}
	earlier := eligibleNewestFirst(points, at)
	if len(earlier) < p.MinPoints {
		return Baseline{Points: len(earlier), Seasonality: "none"}, false
	}
	train, season := earlier, "none"
	span := earlier[0].At.Sub(earlier[len(earlier)-1].At)
	for _, s := range seasonalities {
		if span < 2*s.period {
			continue
		}
		if bucket, ok := seasonalBucket(earlier, s.key, s.key(at.In(loc)), loc, p); ok {
			train, season = bucket, s.name
			break
		}
	}
	if len(train) > p.MaxPoints {
		train = train[:p.MaxPoints]
	}
	vals := make([]float64, len(train))
	for i, pt := range train {
		vals[i] = pt.Value
	}
	med := median(vals)
	dev := make([]float64, len(vals))
	allEqual := true
	for i, v := range vals {
		dev[i] = math.Abs(v - med)
		if v != vals[0] {
			allEqual = false
		}
	}
	mad := 1.4826 * median(dev)
	top := slices.Max(vals)
	floor := math.Max(p.AbsFloor, p.RelFloor*math.Abs(med))
	warnBand := math.Max(p.WarnZ*mad, floor)
	failBand := math.Max(p.FailZ*mad, 2*floor)
	return Baseline{
		Points: len(train), Median: med, MAD: mad,
		Low: med - warnBand, High: med + warnBand,
		FailLow: med - failBand, FailHigh: med + failBand,
		Seasonality: season, AllEqual: allEqual,
		Max: top, Oldest: train[len(train)-1].At,
	}, true
}

// eligibleNewestFirst is points before at with a value, newest first. A series comes from the
// history already in that order (the cache and the store both serve it newest first), and is then
// used as it is: copying and sorting 1,344 points for every baseline of every run was a third of a
// day's check on an indexed table. The points are only read, never changed.
func eligibleNewestFirst(points []Point, at time.Time) []Point {
	inOrder := len(points) == 0 || points[0].At.Before(at)
	for i := 0; inOrder && i < len(points); i++ {
		inOrder = !math.IsNaN(points[i].Value) && (i == 0 || !points[i].At.After(points[i-1].At))
	}
	if inOrder {
		return points
	}
	earlier := make([]Point, 0, len(points))
	for _, pt := range points {
		if pt.At.Before(at) && !math.IsNaN(pt.Value) {
			earlier = append(earlier, pt)
		}
	}
	// Newest first, so MaxPoints keeps the most recent history.
	slices.SortFunc(earlier, func(a, b Point) int { return b.At.Compare(a.At) })
	return earlier
}

// seasonalBucket is the newest points of earlier (newest first) in the seasonal bucket want, at
// most MaxPoints of them, and whether they make a seasonal baseline: at least MinPoints, and not
// every point (a bucket holding every point changes nothing; calling it seasonal would only
// confuse). It stops reading once it holds MaxPoints and has seen a point of another bucket,
// since nothing after that can change the answer.
func seasonalBucket(earlier []Point, key func(time.Time) int, want int, loc *time.Location, p Policy) ([]Point, bool) {
	enough := max(p.MaxPoints, p.MinPoints)
	bucket := make([]Point, 0, min(enough, len(earlier)))
	other := false
	for _, pt := range earlier {
		if key(pt.At.In(loc)) != want {
			other = true
		} else if len(bucket) < enough {
			bucket = append(bucket, pt)
		}
		if other && len(bucket) >= enough {
			break
		}
	}
	return bucket, other && len(bucket) >= p.MinPoints
}

// Judge compares v with the baseline in the policy's direction.
func (b Baseline) Judge(v float64, dir Direction) Status {
	high := dir != DownIsBad
	low := dir != UpIsBad
	switch {
	case high && v > b.FailHigh, low && v < b.FailLow:
		return Fail
	case high && v > b.High, low && v < b.Low:
		return Warn
	}
	return Pass
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
