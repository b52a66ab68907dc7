package quality

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The sentences results say. They follow one shape — value, window, "against", baseline — so
// "18% null today against 0% in every earlier check" reads the same for every metric.

// pct renders a ratio as a percentage with at most two decimals: 0.18 → "18%", 0.1834 → "18.34%".
func pct(v float64) string {
	return strconv.FormatFloat(round(v*100, 2), 'f', -1, 64) + "%"
}

// num renders a count or rate with at most one decimal and thousands separators.
func num(v float64) string {
	r := round(v, 1)
	if r == math.Trunc(r) && math.Abs(r) < 1e15 {
		return group(int64(r))
	}
	return group(int64(r)) + "." + strconv.Itoa(int(math.Abs(math.Round((r-math.Trunc(r))*10))))
}

func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

func countRows(n int64) string { return group(n) + " " + plural(n, "row", "rows") }

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// dur renders seconds as a short duration: 3700 → "1h1m".
func dur(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 24*time.Hour:
		s := d.Round(time.Minute).String()
		if len(s) > 2 && s[len(s)-2:] == "0s" {
			s = s[:len(s)-2]
		}
		return s
	}
	days := int(d / (24 * time.Hour))
	return fmt.Sprintf("%dd%dh", days, int((d%(24*time.Hour)).Round(time.Hour)/time.Hour))
}

// describe renders a baseline: "0% in every earlier check" when history is flat, else its
// median, size and expected range.
func describe(b Baseline, f func(float64) string, unit string) string {
	scope, scopes := "earlier check", "earlier checks"
	if b.Seasonality != "none" && b.Seasonality != "" {
		scope, scopes = "earlier check at this "+seasonName(b.Seasonality), "earlier checks at this "+seasonName(b.Seasonality)
	}
	if b.AllEqual {
		return f(b.Median) + unit + " in every " + scope
	}
	return fmt.Sprintf("a median of %s%s over %d %s (expected %s–%s)", f(b.Median), unit, b.Points, scopes, f(b.Low), f(b.High))
}

func describeLag(b Baseline) string {
	if b.AllEqual {
		return "a lag of " + dur(b.Median) + " in every earlier check"
	}
	return fmt.Sprintf("a median lag of %s over %d earlier checks (expected up to %s)", dur(b.Median), b.Points, dur(b.High))
}

func seasonName(s string) string {
	switch s {
	case "hour_of_day":
		return "hour of day"
	case "day_of_week":
		return "day of week"
	case "hour_of_week":
		return "hour of the week"
	}
	return s
}

func tooFew(have, need int) string {
	return fmt.Sprintf("%d earlier %s, %d needed before judging against history", have, plural(int64(have), "check", "checks"), need)
}
