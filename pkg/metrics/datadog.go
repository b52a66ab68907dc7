package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// Datadog queries Datadog's metrics with an API and an application key: the timeseries query
// API (POST /api/v2/query/timeseries, the documented one), and the older GET /api/v1/query when
// a site or proxy answers v2 with 404 or 405.
type Datadog struct {
	api *httpapi.Client
	cfg config.Datadog
	now func() time.Time
	// v1Only is set once v2 was found missing, so later reads go straight to v1.
	v1Only atomic.Bool
}

// datadogName is what a metric name or tag key may be; datadogValue what a tag value may be
// (Datadog tags hold no spaces or commas), so config and arguments cannot bend a query.
var (
	datadogName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.]*$`) })
	datadogValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_.:/-]+$`) })
)

// NewDatadog builds a client for one site.
func NewDatadog(cfg *config.Datadog, now func() time.Time) (*Datadog, error) {
	for key, n := range map[string]string{"lag_metric": cfg.LagMetric, "group_tag": cfg.GroupTag, "topic_tag": cfg.TopicTag, "partition_tag": cfg.PartitionTag} {
		if !datadogName().MatchString(n) {
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
		if !datadogValue().MatchString(v) {
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
	series, api, err := d.query(ctx, query, q.Start, q.End, q.Step)
	if err != nil {
		return Result{}, err
	}
	if api == "v1" {
		res.Warnings = append(res.Warnings, "read through Datadog's v1 /api/v1/query: the site answered /api/v2/query/timeseries with 404 or 405")
	}
	res.Series = series
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
	_, _, err := d.query(ctx, "sum:"+d.cfg.LagMetric+"{*}", now.Add(-time.Minute), now, time.Minute)
	return err
}

// query runs one metrics query over [from, to) at step: v2 first, v1 when v2 is not there. api
// names the one that answered.
func (d *Datadog) query(ctx context.Context, query string, from, to time.Time, step time.Duration) (series []Series, api string, err error) {
	if !d.v1Only.Load() {
		series, err = d.queryV2(ctx, query, from, to, step)
		if !v2Missing(err) {
			return series, "v2", err
		}
		d.v1Only.Store(true)
	}
	series, err = d.queryV1(ctx, query, from, to)
	return series, "v1", err
}

// v2Missing reports whether err says the v2 endpoint itself is not served.
func v2Missing(err error) bool {
	var e *httpapi.Error
	return errors.As(err, &e) && (e.StatusCode == http.StatusNotFound || e.StatusCode == http.StatusMethodNotAllowed)
}

// datadogV2Request is the documented body of POST /api/v2/query/timeseries: one metrics query,
// named, returned by a formula of its name; from, to and interval in epoch milliseconds.
type datadogV2Request struct {
	Data struct {
		Type       string `json:"type"`
		Attributes struct {
			From     int64              `json:"from"`
			To       int64              `json:"to"`
			Interval int64              `json:"interval,omitempty"`
			Queries  []datadogV2Query   `json:"queries"`
			Formulas []datadogV2Formula `json:"formulas"`
		} `json:"attributes"`
	} `json:"data"`
}

type datadogV2Query struct {
	DataSource string `json:"data_source"`
	Query      string `json:"query"`
	Name       string `json:"name"`
}

type datadogV2Formula struct {
	Formula string `json:"formula"`
}

// datadogV2Answer: series[i] (its group_tags) goes with values[i], each value with times[j]; a
// null value is an interval without data.
type datadogV2Answer struct {
	Data *struct {
		Attributes struct {
			Series []struct {
				GroupTags  []string `json:"group_tags"`
				QueryIndex int      `json:"query_index"`
			} `json:"series"`
			Times  []int64      `json:"times"`
			Values [][]*float64 `json:"values"`
		} `json:"attributes"`
	} `json:"data"`
	Errors json.RawMessage `json:"errors"`
}

func (d *Datadog) queryV2(ctx context.Context, query string, from, to time.Time, step time.Duration) ([]Series, error) {
	var body datadogV2Request
	body.Data.Type = "timeseries_request"
	a := &body.Data.Attributes
	a.From, a.To, a.Interval = from.UnixMilli(), to.UnixMilli(), step.Milliseconds()
	a.Queries = []datadogV2Query{{DataSource: "metrics", Query: query, Name: "lag"}}
	a.Formulas = []datadogV2Formula{{Formula: "lag"}}
	var ans datadogV2Answer
	if err := d.api.Do(ctx, http.MethodPost, "/api/v2/query/timeseries", nil, body, &ans); err != nil {
		return nil, err
	}
	return d.seriesV2(query, ans)
}

// seriesV2 pairs each v2 series with its value list and the times, leaving out nulls (gaps).
func (d *Datadog) seriesV2(query string, ans datadogV2Answer) ([]Series, error) {
	hasErrors := len(ans.Errors) > 0 && string(ans.Errors) != "null" && string(ans.Errors) != `""`
	if ans.Data == nil {
		if hasErrors {
			return nil, fmt.Errorf("datadog: /api/v2/query/timeseries %s: %s", query, ans.Errors)
		}
		return nil, fmt.Errorf("datadog: /api/v2/query/timeseries %s: the answer has no data (not a timeseries response; check metrics.datadog.url)", query)
	}
	at := ans.Data.Attributes
	if len(at.Series) == 0 && hasErrors {
		return nil, fmt.Errorf("datadog: /api/v2/query/timeseries %s: %s", query, ans.Errors)
	}
	if len(at.Values) != len(at.Series) {
		return nil, fmt.Errorf("datadog: /api/v2/query/timeseries %s: %d series but %d value lists", query, len(at.Series), len(at.Values))
	}
	out := make([]Series, 0, len(at.Series))
	for i, sr := range at.Series {
		if len(at.Values[i]) != len(at.Times) {
			return nil, fmt.Errorf("datadog: /api/v2/query/timeseries %s: series %d has %d values for %d times", query, i, len(at.Values[i]), len(at.Times))
		}
		s := d.seriesOf(sr.GroupTags)
		for j, v := range at.Values[i] {
			if v != nil {
				s.Points = append(s.Points, Point{At: time.UnixMilli(at.Times[j]).UTC(), Value: *v})
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func (d *Datadog) queryV1(ctx context.Context, query string, from, to time.Time) ([]Series, error) {
	v := url.Values{"from": {strconv.FormatInt(from.Unix(), 10)}, "to": {strconv.FormatInt(to.Unix(), 10)}, "query": {query}}
	var ans datadogAnswer
	if err := d.api.Do(ctx, http.MethodGet, "/api/v1/query", v, nil, &ans); err != nil {
		return nil, err
	}
	if ans.Status != "ok" {
		return nil, fmt.Errorf("datadog: /api/v1/query %s: status %q: %s", query, ans.Status, ans.Error)
	}
	var out []Series
	for _, s := range ans.Series {
		series := d.seriesOf(s.TagSet)
		for i, p := range s.Pointlist {
			var ms float64
			if err := json.Unmarshal(p[0], &ms); err != nil {
				return nil, fmt.Errorf("datadog: series %s point %d: time %s: %w", s.Scope, i, p[0], err)
			}
			var val *float64
			if err := json.Unmarshal(p[1], &val); err != nil {
				return nil, fmt.Errorf("datadog: series %s point %d: value %s: %w", s.Scope, i, p[1], err)
			}
			if val == nil { // a gap: no data in that rollup interval
				continue
			}
			series.Points = append(series.Points, Point{At: time.UnixMilli(int64(ms)).UTC(), Value: *val})
		}
		out = append(out, series)
	}
	return out, nil
}

// seriesOf starts a series from its "key:value" tags.
func (d *Datadog) seriesOf(tags []string) Series {
	out := Series{Labels: map[string]string{}}
	for _, t := range tags {
		k, val, _ := strings.Cut(t, ":")
		out.Labels[k] = val
	}
	out.Group, out.Topic = out.Labels[d.cfg.GroupTag], out.Labels[d.cfg.TopicTag]
	return out
}
