package quality

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)

func series(n int, step time.Duration, f func(i int, at time.Time) float64) []Point {
	var out []Point
	for i := 0; i < n; i++ {
		at := t0.Add(time.Duration(i) * step)
		out = append(out, Point{At: at, Value: f(i, at)})
	}
	return out
}

func TestBaselineNeedsMinimumPoints(t *testing.T) {
	pts := series(4, 24*time.Hour, func(int, time.Time) float64 { return 0 })
	b, ok := ComputeBaseline(pts, t0.Add(10*24*time.Hour), time.UTC, nullPolicy)
	if ok || b.Points != 4 {
		t.Fatalf("baseline from 4 points: ok=%v %+v", ok, b)
	}
}

func TestBaselineIgnoresThePointUnderTestAndLaterPoints(t *testing.T) {
	pts := series(10, 24*time.Hour, func(i int, _ time.Time) float64 { return float64(i) })
	at := t0.Add(5 * 24 * time.Hour) // points 0..4 are earlier; 5 is the point under test
	b, ok := ComputeBaseline(pts, at, time.UTC, Policy{MinPoints: 5})
	if !ok || b.Points != 5 || b.Median != 2 {
		t.Fatalf("baseline = %+v, ok=%v", b, ok)
	}
}

func TestFlatHistoryUsesTheSmallChangeFloor(t *testing.T) {
	pts := series(14, 24*time.Hour, func(int, time.Time) float64 { return 0 })
	b, ok := ComputeBaseline(pts, t0.Add(14*24*time.Hour), time.UTC, nullPolicy)
	if !ok || !b.AllEqual || b.MAD != 0 || b.High != 0.01 || b.FailHigh != 0.02 {
		t.Fatalf("baseline = %+v", b)
	}
	cases := []struct {
		v    float64
		want Status
	}{{0, Pass}, {0.005, Pass}, {0.015, Warn}, {0.18, Fail}}
	for _, c := range cases {
		if got := b.Judge(c.v, nullPolicy.Direction); got != c.want {
			t.Errorf("Judge(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}

func TestMedianAndMADResistAnOutlier(t *testing.T) {
	vals := []float64{100, 102, 98, 101, 99, 100, 5000}
	pts := series(len(vals), time.Hour, func(i int, _ time.Time) float64 { return vals[i] })
	b, ok := ComputeBaseline(pts, t0.Add(24*time.Hour), time.UTC, Policy{MinPoints: 5, WarnZ: 3, FailZ: 5})
	if !ok || b.Median != 100 || math.Abs(b.MAD-1.4826) > 1e-9 {
		t.Fatalf("baseline = %+v", b)
	}
	if b.Judge(104, Both) != Pass || b.Judge(106, Both) != Warn || b.Judge(120, Both) != Fail || b.Judge(80, Both) != Fail {
		t.Errorf("judgements around median 100, MAD 1.48 are wrong: %+v", b)
	}
	if b.Judge(80, UpIsBad) != Pass {
		t.Error("a drop is fine when only increases are bad")
	}
}

func TestSeasonalBucketOnceThereIsEnoughHistory(t *testing.T) {
	// Hourly volume for 3 days: 1000 rows/hour at 09:00–17:00, 100 otherwise.
	busy := func(_ int, at time.Time) float64 {
		if at.Hour() >= 9 && at.Hour() < 17 {
			return 1000
		}
		return 100
	}
	pts := series(72, time.Hour, busy)
	at := t0.Add(72*time.Hour + 10*time.Hour) // day 4, 10:00
	b, ok := ComputeBaseline(pts, at, time.UTC, volumePolicy)
	if !ok || b.Seasonality != "none" {
		t.Fatalf("3 points in the 10:00 bucket is below the minimum, so the whole history is used; got %+v", b)
	}
	pts = series(24*6, time.Hour, busy)
	at = t0.Add(6*24*time.Hour + 10*time.Hour)
	b, ok = ComputeBaseline(pts, at, time.UTC, volumePolicy)
	if !ok || b.Seasonality != "hour_of_day" || b.Median != 1000 || b.Points != 6 {
		t.Fatalf("baseline = %+v", b)
	}
	if b.Judge(1000, Both) != Pass || b.Judge(100, Both) != Fail {
		t.Errorf("the busy hour must be judged against busy hours: %+v", b)
	}
	// Without enough span the non-seasonal median would call a busy hour normal only by luck.
	flat, _ := ComputeBaseline(pts[len(pts)-30:], at, time.UTC, volumePolicy)
	if flat.Seasonality != "none" {
		t.Errorf("30 hours of history is not two days: %+v", flat)
	}
}

func TestDayOfWeekSeasonalityForDailyRuns(t *testing.T) {
	// Daily at 15:05 for 10 weeks; Mondays carry twice the volume.
	pts := series(70, 24*time.Hour, func(_ int, at time.Time) float64 {
		if at.Weekday() == time.Monday {
			return 2000
		}
		return 1000
	})
	monday := t0.Add(70 * 24 * time.Hour)
	for monday.Weekday() != time.Monday {
		monday = monday.Add(24 * time.Hour)
	}
	b, ok := ComputeBaseline(pts, monday, time.UTC, volumePolicy)
	if !ok || b.Median != 2000 || (b.Seasonality != "day_of_week" && b.Seasonality != "hour_of_week") {
		t.Fatalf("baseline = %+v", b)
	}
}

func TestWindowToday(t *testing.T) {
	now := time.Date(2025, 12, 15, 3, 30, 0, 0, time.UTC)
	w, err := ParseWindow(WindowSpec{Window: "today", TimeZone: "America/New_York"}, now)
	if err != nil {
		t.Fatal(err)
	}
	// 03:30 UTC is 22:30 the day before in New York.
	if !w.Since.Equal(time.Date(2025, 12, 14, 5, 0, 0, 0, time.UTC)) || !w.Until.Equal(now) || w.Label != "today" {
		t.Errorf("window = %+v", w)
	}
	if h := w.Hours(now); h != 22.5 {
		t.Errorf("hours = %v", h)
	}
	for _, bad := range []WindowSpec{{Window: "fortnight"}, {TimeZone: "Nowhere/Land"}, {Since: "yesterday"}, {Since: "2025-12-15", Until: "2025-12-14"}, {Window: "today", Since: "2025-12-01"}} {
		if _, err := ParseWindow(bad, now); err == nil {
			t.Errorf("ParseWindow(%+v) accepted", bad)
		}
	}
	w, err = ParseWindow(WindowSpec{Window: "6h"}, now)
	if err != nil || w.Label != "in the last 6h" || !w.Since.Equal(now.Add(-6*time.Hour)) {
		t.Errorf("6h window = %+v, %v", w, err)
	}
}

func TestSentences(t *testing.T) {
	if got := pct(0.18) + " null today against " + describe(Baseline{AllEqual: true, Seasonality: "none"}, pct, ""); got != "18% null today against 0% in every earlier check" {
		t.Errorf("got %q", got)
	}
	if got := describe(Baseline{Median: 1000, Points: 12, Low: 800, High: 1200.5, Seasonality: "hour_of_day"}, num, " per hour"); got != "a median of 1,000 per hour over 12 earlier checks at this hour of day (expected 800–1,200.5)" {
		t.Errorf("got %q", got)
	}
	for in, want := range map[float64]string{59: "59s", 3900: "1h5m", 90000: "1d1h"} {
		if got := dur(in); got != want {
			t.Errorf("dur(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestDueFollowsTheCronScheduleInTheMonitorsZone(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	last := time.Date(2025, 12, 15, 14, 5, 0, 0, time.UTC) // 09:05 in New York
	cases := []struct {
		sched string
		now   time.Time
		want  bool
	}{
		{"5 * * * *", last.Add(30 * time.Minute), false},
		{"5 * * * *", last.Add(time.Hour), true},
		{"0 23 * * *", time.Date(2025, 12, 16, 3, 59, 0, 0, time.UTC), false}, // 22:59 New York
		{"0 23 * * *", time.Date(2025, 12, 16, 4, 0, 0, 0, time.UTC), true},
	}
	for _, c := range cases {
		got, _, err := Due(c.sched, ny, last, c.now)
		if err != nil || got != c.want {
			t.Errorf("Due(%q, now=%s) = %v, %v; want %v", c.sched, c.now, got, err, c.want)
		}
	}
	if due, _, _ := Due("@daily", ny, time.Time{}, last); !due {
		t.Error("a monitor that never ran is due")
	}
}

// referenceBaseline is ComputeBaseline's rule written the plain way (copy, sort, bucket every
// point, then cut): the fast paths must answer exactly as it does.
func referenceBaseline(points []Point, at time.Time, loc *time.Location, p Policy) (Baseline, bool) {
	var earlier []Point
	for _, pt := range points {
		if pt.At.Before(at) && !math.IsNaN(pt.Value) {
			earlier = append(earlier, pt)
		}
	}
	slices.SortStableFunc(earlier, func(a, b Point) int { return b.At.Compare(a.At) })
	if len(earlier) < p.MinPoints {
		return Baseline{Points: len(earlier), Seasonality: "none"}, false
	}
	train, season := earlier, "none"
	span := earlier[0].At.Sub(earlier[len(earlier)-1].At)
	for _, s := range seasonalities {
		if span < 2*s.period {
			continue
		}
		var bucket []Point
		for _, pt := range earlier {
			if s.key(pt.At.In(loc)) == s.key(at.In(loc)) {
				bucket = append(bucket, pt)
			}
		}
		if len(bucket) >= p.MinPoints && len(bucket) < len(earlier) {
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
		allEqual = allEqual && v == vals[0]
	}
	mad := 1.4826 * median(dev)
	floor := math.Max(p.AbsFloor, p.RelFloor*math.Abs(med))
	warnBand, failBand := math.Max(p.WarnZ*mad, floor), math.Max(p.FailZ*mad, 2*floor)
	return Baseline{
		Points: len(train), Median: med, MAD: mad, Low: med - warnBand, High: med + warnBand,
		FailLow: med - failBand, FailHigh: med + failBand, Seasonality: season, AllEqual: allEqual,
		Max: slices.Max(vals), Oldest: train[len(train)-1].At,
	}, true
}

func TestBaselineFastPathsAnswerAsThePlainRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	zones := []*time.Location{time.UTC, time.FixedZone("UTC-5", -5*3600)}
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	for trial := range 600 {
		n := rng.IntN(1500)
		step := []time.Duration{time.Minute, time.Hour, 3 * time.Hour, 24 * time.Hour}[rng.IntN(4)]
		pts := make([]Point, n)
		for i := range pts {
			// Newest first, as the history serves a series; distinct instants (the order of
			// points at one instant is not part of the rule), the odd NaN.
			pts[i] = Point{At: start.Add(time.Duration(n-i) * step), Value: float64(rng.IntN(50))}
			if rng.IntN(200) == 0 {
				pts[i].Value = math.NaN()
			}
		}
		if trial%3 == 0 {
			rng.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
		}
		at := start.Add(time.Duration(n+1-rng.IntN(4)) * step)
		loc := zones[rng.IntN(len(zones))]
		pol := []Policy{nullPolicy, volumePolicy, lagPolicy, {MinPoints: 5, MaxPoints: 3, WarnZ: 3, FailZ: 5}}[rng.IntN(4)]
		got, gotOK := ComputeBaseline(pts, at, loc, pol)
		want, wantOK := referenceBaseline(pts, at, loc, pol)
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d (%d points, step %v, %s): got %+v %v, want %+v %v", trial, n, step, loc, got, gotOK, want, wantOK)
		}
	}
}
