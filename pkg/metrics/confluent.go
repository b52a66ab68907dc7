package metrics

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// Confluent queries the Confluent Cloud Metrics API v2 (POST /v2/metrics/cloud/query).
type Confluent struct {
	api     *httpapi.Client
	cluster string
	now     func() time.Time
}

// The Metrics API's series names for the Kafka server dataset.
const (
	ConfluentLagMetric       = "io.confluent.kafka.server/consumer_lag_offsets"
	ConfluentReceivedBytes   = "io.confluent.kafka.server/received_bytes"
	ConfluentSentBytes       = "io.confluent.kafka.server/sent_bytes"
	ConfluentReceivedRecords = "io.confluent.kafka.server/received_records"
	ConfluentSentRecords     = "io.confluent.kafka.server/sent_records"
)

// confluentPageLimit is the API's largest page; confluentMaxPages bounds one answer.
const (
	confluentPageLimit = 1000
	confluentMaxPages  = 20
)

// confluentGranularities are the API's granularities, finest first, with the longest interval
// each may be queried over.
var confluentGranularities = []granularity{
	{"PT1M", time.Minute, 6 * time.Hour},
	{"PT5M", 5 * time.Minute, 24 * time.Hour},
	{"PT15M", 15 * time.Minute, 4 * 24 * time.Hour},
	{"PT30M", 30 * time.Minute, 7 * 24 * time.Hour},
	{"PT1H", time.Hour, 0},
	{"PT4H", 4 * time.Hour, 0},
	{"PT6H", 6 * time.Hour, 0},
	{"PT12H", 12 * time.Hour, 0},
	{"P1D", 24 * time.Hour, 0},
}

type granularity struct {
	iso     string
	step    time.Duration
	maxSpan time.Duration // 0: no limit
}

// NewConfluent builds a client authenticated with a Cloud API key.
func NewConfluent(cfg *config.ConfluentMetrics, now func() time.Time) (*Confluent, error) {
	api, err := httpapi.New("confluent metrics", cfg.URL, "metrics.confluent_metrics", httpapi.Basic(cfg.APIKey, cfg.APISecret), cfg.Timeout)
	if err != nil {
		return nil, err
	}
	return &Confluent{api: api, cluster: cfg.KafkaClusterID, now: now}, nil
}

// Name is the source name get_consumer_lag takes.
func (c *Confluent) Name() string { return "confluent_metrics" }

// Lag reads consumer_lag_offsets summed by group and topic. An instant read takes the newest point
// of the last few minutes: the API publishes with a delay.
func (c *Confluent) Lag(ctx context.Context, q Query) (Result, error) {
	filters := []confluentFilter{}
	if q.Group != "" {
		filters = append(filters, confluentFilter{Field: "metric.consumer_group_id", Op: "EQ", Value: q.Group})
	}
	if q.Topic != "" {
		filters = append(filters, confluentFilter{Field: "metric.topic", Op: "EQ", Value: q.Topic})
	}
	return c.query(ctx, ConfluentLagMetric, q, []string{"metric.consumer_group_id", "metric.topic"}, filters)
}

// Throughput reads received and sent bytes and records of topic (every topic when empty), one
// series per topic and metric.
func (c *Confluent) Throughput(ctx context.Context, topic string, q Query) (Result, error) {
	var filters []confluentFilter
	if topic != "" {
		filters = append(filters, confluentFilter{Field: "metric.topic", Op: "EQ", Value: topic})
	}
	var all Result
	for _, m := range []string{ConfluentReceivedBytes, ConfluentSentBytes, ConfluentReceivedRecords, ConfluentSentRecords} {
		r, err := c.query(ctx, m, q, []string{"metric.topic"}, filters)
		if err != nil {
			return Result{}, err
		}
		all.Source, all.StepSeconds = r.Source, r.StepSeconds
		all.Query = joinNonEmpty(all.Query, r.Query)
		all.Series = append(all.Series, r.Series...)
		all.Warnings = append(all.Warnings, r.Warnings...)
	}
	sortSeries(all.Series)
	return all, nil
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

type confluentFilter struct {
	Field   string            `json:"field,omitempty"`
	Op      string            `json:"op"`
	Value   any               `json:"value,omitempty"`
	Filters []confluentFilter `json:"filters,omitempty"`
}

type confluentRequest struct {
	Aggregations []struct {
		Metric string `json:"metric"`
	} `json:"aggregations"`
	Filter      confluentFilter `json:"filter"`
	Granularity string          `json:"granularity"`
	GroupBy     []string        `json:"group_by"`
	Intervals   []string        `json:"intervals"`
	Limit       int             `json:"limit"`
}

type confluentAnswer struct {
	Data []map[string]any `json:"data"`
	Meta struct {
		Pagination struct {
			PageSize      int    `json:"page_size"`
			NextPageToken string `json:"next_page_token"`
		} `json:"pagination"`
	} `json:"meta"`
}

func (c *Confluent) query(ctx context.Context, metric string, q Query, groupBy []string, filters []confluentFilter) (Result, error) {
	instant := q.Instant()
	if instant {
		end := q.End
		if end.IsZero() {
			end = c.now()
		}
		q = Query{Group: q.Group, Topic: q.Topic, Start: end.Add(-instantWindow), End: end, Step: time.Minute}
	}
	q, warn, err := window(q, c.now(), time.Minute)
	if err != nil {
		return Result{}, err
	}
	gran, gwarn := confluentGranularity(q.Step, q.End.Sub(q.Start))
	res := Result{Source: c.Name(), Query: metric + " @" + gran.iso}
	for _, w := range []string{warn, gwarn} {
		if w != "" {
			res.Warnings = append(res.Warnings, w)
		}
	}
	var req confluentRequest
	req.Aggregations = append(req.Aggregations, struct {
		Metric string `json:"metric"`
	}{metric})
	req.Filter = confluentFilter{Op: "AND", Filters: append([]confluentFilter{{Field: "resource.kafka.id", Op: "EQ", Value: c.cluster}}, filters...)}
	req.Granularity = gran.iso
	req.GroupBy = groupBy
	// The API truncates interval ends to the granularity; ask from a boundary so points line up.
	req.Intervals = []string{q.Start.UTC().Truncate(gran.step).Format(time.RFC3339) + "/" + q.End.UTC().Format(time.RFC3339)}
	req.Limit = confluentPageLimit

	bySeries := map[string]*Series{}
	token := ""
	for page := 0; ; page++ {
		if page == confluentMaxPages {
			res.Warnings = append(res.Warnings, fmt.Sprintf("stopped after %d pages of %d points; narrow the window, the group or the topic", confluentMaxPages, confluentPageLimit))
			break
		}
		var v url.Values
		if token != "" {
			v = url.Values{"page_token": {token}}
		}
		var ans confluentAnswer
		if err := c.api.Do(ctx, "POST", "/v2/metrics/cloud/query", v, req, &ans); err != nil {
			return Result{}, err
		}
		for i, row := range ans.Data {
			p, labels, err := confluentPoint(row)
			if err != nil {
				return Result{}, fmt.Errorf("confluent metrics: %s: data[%d]: %w", metric, i, err)
			}
			key := fmt.Sprint(labels["metric.consumer_group_id"], "\x00", labels["metric.topic"])
			s := bySeries[key]
			if s == nil {
				s = &Series{Group: labels["metric.consumer_group_id"], Topic: labels["metric.topic"], Labels: labels}
				if metric != ConfluentLagMetric {
					s.Metric = metric
				}
				bySeries[key] = s
			}
			s.Points = append(s.Points, p)
		}
		token = ans.Meta.Pagination.NextPageToken
		if token == "" {
			break
		}
	}
	for _, s := range bySeries {
		res.Series = append(res.Series, *s)
	}
	sortSeries(res.Series)
	if instant {
		latestOnly(res.Series)
	} else {
		res.StepSeconds = int64(gran.step / time.Second)
	}
	return res, nil
}

// confluentPoint reads one flat data row: timestamp, value and the group_by labels.
func confluentPoint(row map[string]any) (Point, map[string]string, error) {
	ts, ok := row["timestamp"].(string)
	if !ok {
		return Point{}, nil, fmt.Errorf("no timestamp")
	}
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return Point{}, nil, fmt.Errorf("timestamp %q: %w", ts, err)
	}
	v, ok := row["value"].(float64)
	if !ok {
		return Point{}, nil, fmt.Errorf("value %v is not a number", row["value"])
	}
	labels := map[string]string{}
	for k, val := range row {
		if s, ok := val.(string); ok && k != "timestamp" {
			labels[k] = s
		}
	}
	return Point{At: at.UTC(), Value: v}, labels, nil
}

// confluentGranularity picks the finest granularity at least step whose interval limit covers span.
func confluentGranularity(step, span time.Duration) (g granularity, warn string) {
	for _, c := range confluentGranularities {
		if c.step >= step && (c.maxSpan == 0 || span <= c.maxSpan) {
			if c.step != step {
				warn = fmt.Sprintf("granularity %s (the API's finest for a %s window at step %s)", c.iso, span, step)
			}
			return c, warn
		}
	}
	last := confluentGranularities[len(confluentGranularities)-1]
	return last, fmt.Sprintf("granularity %s (the API's coarsest)", last.iso)
}

// Ping lists one metric descriptor: read-only and allowed to any key that may query.
func (c *Confluent) Ping(ctx context.Context) error {
	var ans struct {
		Data []struct {
			Name string `json:"name"`
		} `json:"data"`
	}
	if err := c.api.Do(ctx, "GET", "/v2/metrics/cloud/descriptors/metrics", url.Values{"resource_type": {"kafka"}, "page_size": {"1"}}, nil, &ans); err != nil {
		return err
	}
	if ans.Data == nil {
		return fmt.Errorf("confluent metrics: descriptors answer has no data list (is metrics.confluent_metrics.url the Metrics API?)")
	}
	return nil
}
