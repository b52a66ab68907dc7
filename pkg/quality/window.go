// Package quality runs data-quality checks pushed down into the warehouse (null rate, volume and
// volume per hour of day, uniqueness, event freshness and load lag, custom SQL assertions, column
// metrics, dimensions, reconciliation with an upstream, schema changes), records every metric in
// the shared store's check history, and judges each against a robust baseline learnt from earlier
// runs of the same check, or a fixed threshold.
package quality

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // "today in Europe/Berlin" must work on machines without /usr/share/zoneinfo
)

// WindowSpec is a window as a caller writes it: "today" / "yesterday" in a time zone, a trailing
// duration ("24h"), or an explicit since/until (RFC 3339).
type WindowSpec struct {
	// Window is "today" (default when since is empty), "yesterday", "this_hour", "last_hour", or a
	// Go duration such as "6h".
	Window   string
	Since    string
	Until    string
	TimeZone string
}

// Window is a resolved half-open interval [Since, Until) over a table's timestamp column.
type Window struct {
	Since    time.Time `json:"since"`
	Until    time.Time `json:"until"`
	Label    string    `json:"label" jsonschema:"How results name the window: today, yesterday, in the last 6h, or between …"`
	TimeZone string    `json:"time_zone"`
	loc      *time.Location
}

// Location is the window's time zone (seasonal buckets use its local hours and days).
func (w Window) Location() *time.Location {
	if w.loc != nil {
		return w.loc
	}
	// A window read back from JSON has only the zone's name.
	if loc, err := time.LoadLocation(w.TimeZone); err == nil && w.TimeZone != "" {
		return loc
	}
	return time.UTC
}

// Hours is the elapsed length of the window up to now in hours, at least a quarter of an hour, so
// rows per hour early in the day is not divided by almost nothing.
func (w Window) Hours(now time.Time) float64 {
	end := w.Until
	if now.Before(end) {
		end = now
	}
	h := end.Sub(w.Since).Hours()
	if h < 0.25 {
		h = 0.25
	}
	return h
}

// ParseWindow resolves a spec at now. "today" runs from local midnight in the time zone to now.
func ParseWindow(s WindowSpec, now time.Time) (Window, error) {
	tz := s.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return Window{}, fmt.Errorf("time_zone %q is not an IANA zone name such as UTC or America/New_York", tz)
	}
	w := Window{TimeZone: tz, loc: loc}
	local := now.In(loc)
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
	if s.Since != "" || s.Until != "" {
		if s.Window != "" {
			return Window{}, fmt.Errorf("give either window (%q) or since/until, not both", s.Window)
		}
		if s.Since == "" {
			return Window{}, fmt.Errorf("since is required with until (RFC 3339, e.g. 2025-12-01T00:00:00Z)")
		}
		if w.Since, err = parseInstant(s.Since, loc); err != nil {
			return Window{}, fmt.Errorf("since: %w", err)
		}
		w.Until = now
		if s.Until != "" {
			if w.Until, err = parseInstant(s.Until, loc); err != nil {
				return Window{}, fmt.Errorf("until: %w", err)
			}
		}
		if !w.Until.After(w.Since) {
			return Window{}, fmt.Errorf("until (%s) must be after since (%s)", w.Until.Format(time.RFC3339), w.Since.Format(time.RFC3339))
		}
		w.Label = "between " + w.Since.In(loc).Format(time.RFC3339) + " and " + w.Until.In(loc).Format(time.RFC3339)
		return w, nil
	}
	switch spec := strings.ToLower(strings.TrimSpace(s.Window)); spec {
	case "", "today":
		w.Since, w.Until, w.Label = midnight, now, "today"
	case "yesterday":
		w.Since, w.Until, w.Label = midnight.AddDate(0, 0, -1), midnight, "yesterday"
	case "this_hour", "this hour":
		w.Since, w.Until, w.Label = localHour(local), now, "this hour"
	case "last_hour", "last hour":
		w.Since, w.Until, w.Label = localHour(local).Add(-time.Hour), localHour(local), "in the last complete hour"
	default:
		d, err := time.ParseDuration(spec)
		if err != nil || d <= 0 {
			return Window{}, fmt.Errorf("window %q: use today, yesterday, this_hour, last_hour, a duration such as 6h, or since/until", s.Window)
		}
		w.Since, w.Until, w.Label = now.Add(-d), now, "in the last "+strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
	}
	return w, nil
}

// localHour is the start of t's hour in t's zone (zones with half-hour offsets keep their own
// hour boundaries).
func localHour(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, t.Location())
}

func parseInstant(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not RFC 3339 (2025-12-01T00:00:00Z) or a date (2025-12-01)", s)
}
