package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// Prometheus queries the Prometheus HTTP API (/api/v1/query and /api/v1/query_range).
type Prometheus struct {
	api *httpapi.Client
	cfg config.Prometheus
	now func() time.Time
}

var (
	promMetricName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`) })
	promLabelName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`) })
)

// NewPrometheus builds a client; names of the metric and labels are checked so a query cannot be
// bent by config.
func NewPrometheus(cfg *config.Prometheus, now func() time.Time) (*Prometheus, error) {
	if !promMetricName().MatchString(cfg.LagMetric) {
		return nil, fmt.Errorf("metrics.prometheus.lag_metric %q is not a Prometheus metric name", cfg.LagMetric)
	}
	for key, l := range map[string]string{"group_label": cfg.GroupLabel, "topic_label": cfg.TopicLabel, "partition_label": cfg.PartitionLabel} {
		if !promLabelName().MatchString(l) {
			return nil, fmt.Errorf("metrics.prometheus.%s %q is not a Prometheus label name", key, l)
		}
	}
	auth := httpapi.Basic(cfg.Username, cfg.Password)
	if cfg.BearerToken != "" {
		auth = httpapi.Bearer(cfg.BearerToken)
	}
	api, err := httpapi.New("prometheus", cfg.URL, "metrics.prometheus", auth, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	return &Prometheus{api: api, cfg: *cfg, now: now}, nil
}

// Name is the source name get_consumer_lag takes.
func (p *Prometheus) Name() string { return "prometheus" }

// LagExpr is the PromQL for lag summed over partitions by group and topic.
func (p *Prometheus) LagExpr(group, topic string) string {
	var sel []string
	if group != "" {
		sel = append(sel, p.cfg.GroupLabel+"="+promString(group))
	}
	if topic != "" {
		sel = append(sel, p.cfg.TopicLabel+"="+promString(topic))
	}
	return fmt.Sprintf("sum by (%s, %s) (%s{%s})", p.cfg.GroupLabel, p.cfg.TopicLabel, p.cfg.LagMetric, strings.Join(sel, ","))
}

// promString quotes a label value as a PromQL string literal.
func promString(s string) string { return strconv.Quote(s) }

// Lag answers an instant or range query for consumer lag.
func (p *Prometheus) Lag(ctx context.Context, q Query) (Result, error) {
	q, warn, err := window(q, p.now(), time.Second)
	if err != nil {
		return Result{}, err
	}
	expr := p.LagExpr(q.Group, q.Topic)
	res := Result{Source: p.Name(), Query: expr}
	if warn != "" {
		res.Warnings = append(res.Warnings, warn)
	}
	series, warnings, err := p.Query(ctx, expr, q)
	if err != nil {
		return Result{}, err
	}
	res.Warnings = append(res.Warnings, warnings...)
	for i := range series {
		series[i].Group = series[i].Labels[p.cfg.GroupLabel]
		series[i].Topic = series[i].Labels[p.cfg.TopicLabel]
	}
	if !q.Instant() {
		res.StepSeconds = int64(q.Step / time.Second)
	}
	sortSeries(series)
	res.Series = series
	return res, nil
}

// promAnswer is the envelope every Prometheus API answer shares.
type promAnswer struct {
	Status    string   `json:"status"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Data      struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  promSample        `json:"value"`
			Values []promSample      `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// promSample is the [unix seconds, "value"] pair Prometheus encodes samples as.
type promSample struct {
	At    time.Time
	Value float64
	Set   bool
}

func (s *promSample) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil || len(pair) != 2 {
		return fmt.Errorf("sample %s is not [time, \"value\"]", b)
	}
	var ts float64
	if err := json.Unmarshal(pair[0], &ts); err != nil {
		return fmt.Errorf("sample time %s: %w", pair[0], err)
	}
	var v string
	if err := json.Unmarshal(pair[1], &v); err != nil {
		return fmt.Errorf("sample value %s is not a string", pair[1])
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return fmt.Errorf("sample value %q: %w", v, err)
	}
	sec := int64(ts)
	s.At = time.Unix(sec, int64((ts-float64(sec))*1e9)).UTC().Round(time.Millisecond)
	s.Value, s.Set = f, true
	return nil
}

// Query runs any PromQL expression, instant (q.Start zero) or over a range.
func (p *Prometheus) Query(ctx context.Context, expr string, q Query) ([]Series, []string, error) {
	v := url.Values{"query": {expr}}
	path := "/api/v1/query"
	if q.Instant() {
		if !q.End.IsZero() {
			v.Set("time", promTime(q.End))
		}
	} else {
		path = "/api/v1/query_range"
		v.Set("start", promTime(q.Start))
		v.Set("end", promTime(q.End))
		v.Set("step", strconv.FormatFloat(q.Step.Seconds(), 'f', -1, 64))
	}
	var ans promAnswer
	if err := p.api.Do(ctx, "GET", path, v, nil, &ans); err != nil {
		return nil, nil, err
	}
	if ans.Status != "success" {
		return nil, nil, fmt.Errorf("prometheus: %s %s: status %q: %s %s", path, expr, ans.Status, ans.ErrorType, ans.Error)
	}
	switch ans.Data.ResultType {
	case "vector", "matrix":
	default:
		return nil, nil, fmt.Errorf("prometheus: %s: result type %q, want a vector or matrix (is %q a series query?)", path, ans.Data.ResultType, expr)
	}
	var out []Series
	for _, r := range ans.Data.Result {
		s := Series{Labels: r.Metric}
		if r.Value.Set {
			s.Points = append(s.Points, Point{At: r.Value.At, Value: r.Value.Value})
		}
		for _, sm := range r.Values {
			s.Points = append(s.Points, Point{At: sm.At, Value: sm.Value})
		}
		out = append(out, s)
	}
	return out, ans.Warnings, nil
}

// Ping asks the build-info endpoint, which every Prometheus-compatible API serves without side effects.
func (p *Prometheus) Ping(ctx context.Context) error {
	var ans struct {
		Status string `json:"status"`
		Data   struct {
			Version string `json:"version"`
		} `json:"data"`
	}
	if err := p.api.Do(ctx, "GET", "/api/v1/status/buildinfo", nil, nil, &ans); err != nil {
		return err
	}
	if ans.Status != "success" {
		return fmt.Errorf("prometheus: /api/v1/status/buildinfo: status %q, not the documented success envelope", ans.Status)
	}
	return nil
}

func promTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64)
}
