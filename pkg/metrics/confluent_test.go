package metrics_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/metrics"
)

// confluentFixture answers /v2/metrics/cloud/query as the Metrics API v2 documents it: Basic auth
// with a Cloud API key, a JSON body naming one aggregation, a flat data list with the group_by
// labels beside timestamp and value, and pagination by page_token.
type confluentFixture struct {
	t        *testing.T
	requests []map[string]any
	tokens   []string
}

func (f *confluentFixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != "MKEY" || p != "msecret-1234" {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"errors":[{"status":"401","detail":"invalid API key"}]}`))
		return
	}
	if r.URL.Path == "/v2/metrics/cloud/descriptors/metrics" {
		w.Write([]byte(`{"data":[{"name":"io.confluent.kafka.server/received_bytes","type":"COUNTER_INT64"}],"meta":{"pagination":{"page_size":1}}}`))
		return
	}
	if r.Method != "POST" || r.URL.Path != "/v2/metrics/cloud/query" {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"errors":[{"status":"400","detail":"malformed body"}]}`))
		return
	}
	f.requests = append(f.requests, body)
	f.tokens = append(f.tokens, r.URL.Query().Get("page_token"))
	metric := body["aggregations"].([]any)[0].(map[string]any)["metric"].(string)
	if body["granularity"] == "PT1M" && strings.HasPrefix(body["intervals"].([]any)[0].(string), "2026-11-20") {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"errors":[{"status":"400","detail":"interval exceeds retention"}]}`))
		return
	}
	switch {
	case metric == metrics.ConfluentLagMetric && r.URL.Query().Get("page_token") == "":
		w.Write([]byte(`{"data":[
 {"timestamp":"2026-11-29T14:00:00Z","value":12.0,"metric.consumer_group_id":"sink-lake","metric.topic":"events-hourly"},
 {"timestamp":"2026-11-29T14:01:00Z","value":15.0,"metric.consumer_group_id":"sink-lake","metric.topic":"events-hourly"},
 {"timestamp":"2026-11-29T14:00:00Z","value":3.0,"metric.consumer_group_id":"audit","metric.topic":"events-hourly"}
],"meta":{"pagination":{"page_size":3,"next_page_token":"UGFnZTI="}}}`))
	case metric == metrics.ConfluentLagMetric:
		w.Write([]byte(`{"data":[
 {"timestamp":"2026-11-29T14:02:00Z","value":9000.0,"metric.consumer_group_id":"sink-lake","metric.topic":"events-hourly"}
],"meta":{"pagination":{"page_size":3}}}`))
	default:
		w.Write([]byte(`{"data":[{"timestamp":"2026-11-29T14:00:00Z","value":2048.0,"metric.topic":"events-hourly"}],"meta":{"pagination":{"page_size":1000}}}`))
	}
}

func confluentConfig(t *testing.T, url, secret string) *config.Metrics {
	t.Helper()
	y := "confluent_cloud:\n  api_key: CKEY\n  api_secret: csecret-9876\n  kafka_cluster_id: lkc-abc123\nmetrics:\n  confluent_metrics:\n    url: " + url +
		"\n    api_key: MKEY\n    api_secret: " + secret + "\n"
	cfg, err := config.Parse([]byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Metrics
}

func TestConfluentMetricsLagHistoryPagesAndFilters(t *testing.T) {
	f := &confluentFixture{t: t}
	srv := httptest.NewServer(f)
	defer srv.Close()
	now := func() time.Time { return time.Date(2026, 11, 29, 14, 5, 0, 0, time.UTC) }
	src, err := metrics.Open(confluentConfig(t, srv.URL, "msecret-1234"), "confluent_metrics", now)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := src.Lag(ctx, metrics.Query{Topic: "events-hourly", Start: now().Add(-time.Hour), End: now(), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 2 || f.tokens[1] != "UGFnZTI=" {
		t.Fatalf("want two pages, the second by page_token: %v", f.tokens)
	}
	req := f.requests[0]
	if req["granularity"] != "PT1M" || req["limit"].(float64) != 1000 {
		t.Fatalf("request = %v", req)
	}
	if iv := req["intervals"].([]any)[0]; iv != "2026-11-29T13:05:00Z/2026-11-29T14:05:00Z" {
		t.Fatalf("interval = %v", iv)
	}
	filter, _ := json.Marshal(req["filter"])
	if !strings.Contains(string(filter), `"field":"resource.kafka.id","op":"EQ","value":"lkc-abc123"`) ||
		!strings.Contains(string(filter), `"field":"metric.topic","op":"EQ","value":"events-hourly"`) || !strings.Contains(string(filter), `"op":"AND"`) {
		t.Fatalf("filter = %s", filter)
	}
	if gb, _ := json.Marshal(req["group_by"]); string(gb) != `["metric.consumer_group_id","metric.topic"]` {
		t.Fatalf("group_by = %s", gb)
	}
	if len(res.Series) != 2 || res.Series[1].Group != "sink-lake" || len(res.Series[1].Points) != 3 || res.Series[1].Last().Value != 9000 {
		t.Fatalf("series = %+v", res.Series)
	}
	if res.StepSeconds != 60 {
		t.Fatalf("step = %d", res.StepSeconds)
	}
	onset := metrics.AroundOnset(res.Series[1], time.Date(2026, 11, 29, 14, 2, 0, 0, time.UTC))
	if onset.Verdict != "rising" {
		t.Fatalf("onset = %+v", onset)
	}

	// A two-day window at a one-minute step uses the finest granularity the API allows for it.
	f.requests = nil
	if _, err := src.Lag(ctx, metrics.Query{Group: "sink-lake", Start: now().Add(-48 * time.Hour), End: now(), Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if g := f.requests[0]["granularity"]; g != "PT15M" {
		t.Fatalf("granularity for 48h = %v", g)
	}

	// An instant read takes the newest point of the recent window, per series.
	inst, err := src.Lag(ctx, metrics.Query{Group: "sink-lake"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range inst.Series {
		if len(s.Points) != 1 {
			t.Fatalf("instant series %+v has %d points", s, len(s.Points))
		}
	}

	// Throughput per topic: received and sent bytes and records, one series each.
	tp, err := src.(*metrics.Confluent).Throughput(ctx, "events-hourly", metrics.Query{Start: now().Add(-time.Hour), End: now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.Series) != 4 || tp.Series[0].Metric == "" || tp.Series[0].Topic != "events-hourly" {
		t.Fatalf("throughput = %+v", tp.Series)
	}
	if err := src.(*metrics.Confluent).Ping(ctx); err != nil {
		t.Fatal(err)
	}

	// The API's own error comes back with the status and its detail.
	_, err = src.Lag(ctx, metrics.Query{Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 20, 1, 0, 0, 0, time.UTC)})
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "interval exceeds retention") {
		t.Fatalf("400 err = %v", err)
	}
}

func TestConfluentMetricsBadKeyNamesTheConfigKey(t *testing.T) {
	srv := httptest.NewServer(&confluentFixture{t: t})
	defer srv.Close()
	src, err := metrics.Open(confluentConfig(t, srv.URL, "wrong-secret"), "confluent_metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Lag(context.Background(), metrics.Query{})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "metrics.confluent_metrics") || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("401 err = %v", err)
	}
	if err := src.(*metrics.Confluent).Ping(context.Background()); err == nil {
		t.Fatal("ping with a bad key passed")
	}
}

func TestConfluentMetricsInheritsTheCloudKeyAndCluster(t *testing.T) {
	y := "confluent_cloud:\n  api_key: CKEY\n  api_secret: csecret-9876\n  kafka_cluster_id: lkc-abc123\nmetrics:\n  confluent_metrics: {}\n"
	cfg, err := config.Parse([]byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cm := cfg.Metrics.ConfluentMetrics
	if cm.APIKey != "CKEY" || cm.KafkaClusterID != "lkc-abc123" || cm.URL != "https://api.telemetry.confluent.cloud" {
		t.Fatalf("defaults = %+v", cm)
	}
	if _, err := config.Parse([]byte("metrics:\n  confluent_metrics: {}\n"), func(string) (string, bool) { return "", false }); err == nil ||
		!strings.Contains(err.Error(), "kafka_cluster_id") || !strings.Contains(err.Error(), "api_key") {
		t.Fatalf("missing keys err = %v", err)
	}
}
