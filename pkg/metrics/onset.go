package metrics

import (
	"fmt"
	"time"
)

// OnsetLag compares one series before and after an incident's onset: the evidence behind "load
// lag of the sink connector was normal through the onset" or its opposite.
type OnsetLag struct {
	Group      string  `json:"group,omitempty"`
	Topic      string  `json:"topic,omitempty"`
	BeforeMax  float64 `json:"before_max"`
	BeforeLast float64 `json:"before_last"`
	AfterMax   float64 `json:"after_max"`
	AfterLast  float64 `json:"after_last"`
	// Points before and after the onset; a side with none cannot be judged.
	BeforePoints int `json:"before_points"`
	AfterPoints  int `json:"after_points"`
	// Verdict is normal, rising, or unknown (no points on one side).
	Verdict string `json:"verdict"`
	Summary string `json:"summary"`
}

// RiseFloor is the smallest growth of lag, in the series' unit (offsets for lag), counted as a
// rise: a group idling at 0 that reads 3 after the onset is not backed up.
const RiseFloor = 1000

// AroundOnset judges s at onset: rising when the largest lag after it exceeds twice the largest
// before it and grew by at least RiseFloor; normal otherwise.
func AroundOnset(s Series, onset time.Time) OnsetLag {
	o := OnsetLag{Group: s.Group, Topic: s.Topic}
	for _, p := range s.Points {
		if p.At.Before(onset) {
			o.BeforeMax, o.BeforeLast = max(o.BeforeMax, p.Value), p.Value
			o.BeforePoints++
		} else {
			o.AfterMax, o.AfterLast = max(o.AfterMax, p.Value), p.Value
			o.AfterPoints++
		}
	}
	name := s.Group
	if s.Topic != "" {
		name += " on " + s.Topic
	}
	at := onset.UTC().Format(time.RFC3339)
	switch {
	case o.BeforePoints == 0 || o.AfterPoints == 0:
		o.Verdict = "unknown"
		o.Summary = fmt.Sprintf("lag of %s: %d points before and %d after the onset %s; cannot compare", name, o.BeforePoints, o.AfterPoints, at)
	case o.AfterMax > 2*o.BeforeMax && o.AfterMax-o.BeforeMax >= RiseFloor:
		o.Verdict = "rising"
		o.Summary = fmt.Sprintf("lag of %s rose after the onset %s: at most %.0f before, up to %.0f after (now %.0f)", name, at, o.BeforeMax, o.AfterMax, o.AfterLast)
	default:
		o.Verdict = "normal"
		o.Summary = fmt.Sprintf("lag of %s was normal through the onset %s: at most %.0f before, at most %.0f after", name, at, o.BeforeMax, o.AfterMax)
	}
	return o
}
