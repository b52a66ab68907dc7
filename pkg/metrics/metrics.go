// Package metrics reads consumer lag and topic throughput from the monitoring a team already runs
// — Prometheus (kafka-exporter or Confluent's Prometheus export), the Confluent Cloud Metrics API
// v2 and Datadog — as history over a window, per consumer group and topic, so lag before and after
// an incident's onset can be compared without a broker connection. Every client goes through
// pkg/httpapi (auth, retries, error bodies) and caps the points it asks for.
package metrics

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
)

// MaxPoints caps the points per series a query asks for; a longer window gets a coarser step.
const MaxPoints = 1000

// instantWindow is how far back an "instant" read looks on APIs that only answer ranges
// (Confluent, Datadog): their series arrive a few minutes late.
const instantWindow = 15 * time.Minute

// Point is one sample.
type Point struct {
	At    time.Time `json:"at"`
	Value float64   `json:"value"`
}

// Series is one group/topic (or topic/metric) time series, oldest point first.
type Series struct {
	Group  string            `json:"group,omitempty"`
	Topic  string            `json:"topic,omitempty"`
	Metric string            `json:"metric,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Points []Point           `json:"points"`
}

// Last is the newest point (zero when the series is empty).
func (s Series) Last() Point {
	if len(s.Points) == 0 {
		return Point{}
	}
	return s.Points[len(s.Points)-1]
}

// Query asks for lag of one group and/or topic (empty: all). Start zero is an instant query at End
// (default now); otherwise a range from Start to End every Step.
type Query struct {
	Group string
	Topic string
	Start time.Time
	End   time.Time
	Step  time.Duration
}

// Instant reports whether q asks for the current value only.
func (q Query) Instant() bool { return q.Start.IsZero() }

// Result is one source's answer.
type Result struct {
	Source string `json:"source"`
	// Query is what was sent (PromQL, a Datadog query, a Confluent metric name), to reproduce it.
	Query string `json:"query"`
	// Step is the resolution actually used (0 for an instant query).
	StepSeconds int64    `json:"step_seconds,omitempty"`
	Series      []Series `json:"series"`
	Warnings    []string `json:"warnings,omitempty"`
}

// LagSource is one monitoring backend that can answer for consumer lag.
type LagSource interface {
	Name() string
	// Lag returns lag summed over partitions, one series per consumer group and topic.
	Lag(ctx context.Context, q Query) (Result, error)
}

// Sources names the backends Open knows.
var Sources = []string{"prometheus", "confluent_metrics", "datadog"}

// Open builds the named source from its config section, saying which key to set when it is absent.
func Open(m *config.Metrics, source string, now func() time.Time) (LagSource, error) {
	if now == nil {
		now = time.Now
	}
	switch source {
	case "prometheus":
		if m == nil || m.Prometheus == nil {
			return nil, fmt.Errorf("prometheus is not configured: set metrics.prometheus.url")
		}
		return NewPrometheus(m.Prometheus, now)
	case "confluent_metrics":
		if m == nil || m.ConfluentMetrics == nil {
			return nil, fmt.Errorf("the Confluent Cloud Metrics API is not configured: set metrics.confluent_metrics (api_key, api_secret, kafka_cluster_id)")
		}
		return NewConfluent(m.ConfluentMetrics, now)
	case "datadog":
		if m == nil || m.Datadog == nil {
			return nil, fmt.Errorf("datadog is not configured: set metrics.datadog (api_key, application_key, site)")
		}
		return NewDatadog(m.Datadog, now)
	}
	return nil, fmt.Errorf("unknown lag source %q: use brokers, %s", source, strings.Join(Sources, ", "))
}

// window resolves q against now: the end defaults to now, the step to one point a minute, raised so
// no series exceeds MaxPoints. It returns a warning when the step had to be raised.
func window(q Query, now time.Time, minStep time.Duration) (Query, string, error) {
	if q.End.IsZero() {
		q.End = now
	}
	if q.Instant() {
		return q, "", nil
	}
	if !q.Start.Before(q.End) {
		return q, "", fmt.Errorf("window start %s is not before its end %s", q.Start.Format(time.RFC3339), q.End.Format(time.RFC3339))
	}
	if q.Step < 0 {
		return q, "", fmt.Errorf("step must not be negative")
	}
	warn := ""
	if q.Step == 0 {
		q.Step = time.Minute
	}
	q.Step = max(q.Step, minStep)
	span := q.End.Sub(q.Start)
	if span/q.Step > MaxPoints {
		floor := (span + MaxPoints - 1) / MaxPoints
		stepped := floor.Round(time.Second)
		if stepped < floor {
			stepped += time.Second
		}
		warn = fmt.Sprintf("step raised from %s to %s to keep each series within %d points", q.Step, stepped, MaxPoints)
		q.Step = stepped
	}
	return q, warn, nil
}

// sortSeries orders series by group, topic and metric so answers are stable.
func sortSeries(ss []Series) {
	for _, s := range ss {
		sort.Slice(s.Points, func(i, j int) bool { return s.Points[i].At.Before(s.Points[j].At) })
	}
	sort.Slice(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Metric < b.Metric
	})
}

// latestOnly keeps the newest point of each series, for instant reads over a short range.
func latestOnly(ss []Series) {
	for i := range ss {
		if n := len(ss[i].Points); n > 1 {
			ss[i].Points = ss[i].Points[n-1:]
		}
	}
}
