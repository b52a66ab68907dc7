package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// Datadog queries the Datadog metrics query API (GET /api/v1/query) with an API and an
// application key.
type Datadog struct {
	api *httpapi.Client
	cfg config.Datadog
	now func() time.Time
}

// datadogName is what a metric name or tag key may be; datadogValue what a tag value may be
// (Datadog tags hold no spaces or commas), so config and arguments cannot bend a query.
var (
	datadogName  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.]*$`)
	datadogValue = regexp.MustCompile(`^[a-zA-Z0-9_.:/-]+$`)
)

// NewDatadog builds a client for one site.
func NewDatadog(cfg *config.Datadog, now func() time.Time) (*Datadog, error) {
	for key, n := range map[string]string{"lag_metric": cfg.LagMetric, "group_tag": cfg.GroupTag, "topic_tag": cfg.TopicTag, "partition_tag": cfg.PartitionTag} {
		if !datadogName.MatchString(n) {
			return nil, fmt.Errorf("metrics.datadog.%s %q is not a Datadog metric or tag name", key, n)
		}
	}
	apiKey, appKey := cfg.APIKey, cfg.ApplicationKey
	auth := func(r *http.Request) {
		r.Header.Set("DD-API-KEY", apiKey)
		r.Header.Set("DD-APPLICATION-KEY", appKey)
	}
	api, err := httpapi.New("datadog", cfg.URL, "metrics.datadog", auth, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	return &Datadog{api: api, cfg: *cfg, now: now}, nil
}

// Name is the source name get_consumer_lag takes.
func (d *Datadog) Name() string { return "datadog" }

// LagQuery is the Datadog query: lag summed over partitions by group and topic, rolled up to step.
func (d *Datadog) LagQuery(group, topic string, step time.Duration) (string, error) {
	var scope []string
	for tag, v := range map[string]string{d.cfg.GroupTag: group, d.cfg.TopicTag: topic} {
		if v == "" {
			continue
		}
		if !datadogValue.MatchString(v) {
			return "", fmt.Errorf("%q cannot be a Datadog tag value (letters, digits and _ . : / - only)", v)
		}
		scope = append(scope, tag+":"+v)
	}
	if len(scope) == 0 {
		scope = []string{"*"}
	}
	slices.Sort(scope)
	return fmt.Sprintf("sum:%s{%s} by {%s,%s}.rollup(max, %d)", d.cfg.LagMetric, strings.Join(scope, ","), d.cfg.GroupTag, d.cfg.TopicTag,
		int64(step/time.Second)), nil
}

type datadogAnswer struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Series []struct {
		Metric    string               `json:"metric"`
		Scope     string               `json:"scope"`
		TagSet    []string             `json:"tag_set"`
		Interval  int64                `json:"interval"`
		Pointlist [][2]json.RawMessage `json:"pointlist"`
	} `json:"series"`
}

// Lag reads lag over the window; an instant read takes the newest point of the last minutes.
func (d *Datadog) Lag(ctx context.Context, q Query) (Result, error) {
	instant := q.Instant()
	if instant {
		end := q.End
		if end.IsZero() {
			end = d.now()
		}
		q = Query{Group: q.Group, Topic: q.Topic, Start: end.Add(-instantWindow), End: end, Step: time.Minute}
	}
	q, warn, err := window(q, d.now(), time.Second)
	if err != nil {
		return Result{}, err
	}
	query, err := d.LagQuery(q.Group, q.Topic, q.Step)
	if err != nil {
		return Result{}, err
	}
	res := Result{Source: d.Name(), Query: query}
	if warn != "" {
		res.Warnings = append(res.Warnings, warn)
	}
	v := url.Values{"from": {strconv.FormatInt(q.Start.Unix(), 10)}, "to": {strconv.FormatInt(q.End.Unix(), 10)}, "query": {query}}
	var ans datadogAnswer
	if err := d.api.Do(ctx, "GET", "/api/v1/query", v, nil, &ans); err != nil {
		return Result{}, err
	}
	if ans.Status != "ok" {
		return Result{}, fmt.Errorf("datadog: /api/v1/query %s: status %q: %s", query, ans.Status, ans.Error)
	}
	for _, s := range ans.Series {
		out := Series{Labels: map[string]string{}}
		for _, t := range s.TagSet {
			k, val, _ := strings.Cut(t, ":")
			out.Labels[k] = val
		}
		out.Group, out.Topic = out.Labels[d.cfg.GroupTag], out.Labels[d.cfg.TopicTag]
		for i, p := range s.Pointlist {
			var ms float64
			if err := json.Unmarshal(p[0], &ms); err != nil {
				return Result{}, fmt.Errorf("datadog: series %s point %d: time %s: %w", s.Scope, i, p[0], err)
			}
			var val *float64
			if err := json.Unmarshal(p[1], &val); err != nil {
				return Result{}, fmt.Errorf("datadog: series %s point %d: value %s: %w", s.Scope, i, p[1], err)
			}
			if val == nil { // a gap: no data in that rollup interval
				continue
			}
			out.Points = append(out.Points, Point{At: time.UnixMilli(int64(ms)).UTC(), Value: *val})
		}
		res.Series = append(res.Series, out)
	}
	sortSeries(res.Series)
	if instant {
		latestOnly(res.Series)
	} else {
		res.StepSeconds = int64(q.Step / time.Second)
	}
	return res, nil
}

// Ping validates the keys: /api/v1/validate checks the API key, and a one-minute query checks the
// application key and the timeseries_query permission.
func (d *Datadog) Ping(ctx context.Context) error {
	var ok struct {
		Valid bool `json:"valid"`
	}
	if err := d.api.Do(ctx, "GET", "/api/v1/validate", nil, nil, &ok); err != nil {
		return err
	}
	if !ok.Valid {
		return fmt.Errorf("datadog: /api/v1/validate: the API key is not valid (check metrics.datadog.api_key)")
	}
	now := d.now()
	v := url.Values{"from": {strconv.FormatInt(now.Add(-time.Minute).Unix(), 10)}, "to": {strconv.FormatInt(now.Unix(), 10)},
		"query": {"sum:" + d.cfg.LagMetric + "{*}"}}
	var ans datadogAnswer
	if err := d.api.Do(ctx, "GET", "/api/v1/query", v, nil, &ans); err != nil {
		return err
	}
	if ans.Status != "ok" {
		return fmt.Errorf("datadog: /api/v1/query: status %q: %s", ans.Status, ans.Error)
	}
	return nil
}
