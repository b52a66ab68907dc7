package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/metrics"
)

// datadogFixture answers GET /api/v1/query and /api/v1/validate as Datadog documents them: the two
// keys in DD-API-KEY and DD-APPLICATION-KEY, from/to in epoch seconds, and series whose pointlist
// holds [epoch milliseconds, value or null] pairs.
type datadogFixture struct{ queries []string }

func (f *datadogFixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("DD-API-KEY") != "dd-api-key-1" {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"errors":["Forbidden"]}`))
		return
	}
	if r.URL.Path == "/api/v1/validate" {
		w.Write([]byte(`{"valid":true}`))
		return
	}
	if r.Header.Get("DD-APPLICATION-KEY") != "dd-app-key-1" {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"errors":["Forbidden"]}`))
		return
	}
	q := r.URL.Query()
	if r.URL.Path != "/api/v1/query" || q.Get("from") == "" || q.Get("to") == "" || q.Get("query") == "" {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"errors":["from, to and query are required"]}`))
		return
	}
	f.queries = append(f.queries, q.Get("query"))
	if strings.Contains(q.Get("query"), "{*}") && !strings.Contains(q.Get("query"), " by ") {
		w.Write([]byte(`{"status":"ok","res_type":"time_series","series":[]}`))
		return
	}
	w.Write([]byte(`{"status":"ok","res_type":"time_series","query":"x","from_date":1796047200000,"to_date":1796050800000,"series":[
 {"metric":"kafka.consumer_lag","scope":"consumer_group:sink-lake,topic:events-hourly","tag_set":["consumer_group:sink-lake","topic:events-hourly"],"interval":60,
  "pointlist":[[1796047200000,20.0],[1796047260000,null],[1796047320000,25.0],[1796050800000,22.0]]}
]}`))
}

func datadogSource(t *testing.T, url, apiKey string) metrics.LagSource {
	t.Helper()
	y := "metrics:\n  datadog:\n    url: " + url + "\n    api_key: " + apiKey + "\n    application_key: dd-app-key-1\n"
	cfg, err := config.Parse([]byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	src, err := metrics.Open(cfg.Metrics, "datadog", func() time.Time { return time.UnixMilli(1796050800000) })
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestDatadogLagHistoryWithGapsAndKeys(t *testing.T) {
	f := &datadogFixture{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	src := datadogSource(t, srv.URL, "dd-api-key-1")
	end := time.UnixMilli(1796050800000)
	res, err := src.Lag(context.Background(), metrics.Query{Group: "sink-lake", Topic: "events-hourly", Start: end.Add(-time.Hour), End: end, Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := "sum:kafka.consumer_lag{consumer_group:sink-lake,topic:events-hourly} by {consumer_group,topic}.rollup(max, 60)"
	if f.queries[0] != want || res.Query != want {
		t.Fatalf("query = %s\nwant    %s", f.queries[0], want)
	}
	if len(res.Series) != 1 || len(res.Series[0].Points) != 3 || res.Series[0].Group != "sink-lake" || res.Series[0].Topic != "events-hourly" {
		t.Fatalf("series (the null point is a gap) = %+v", res.Series)
	}
	if o := metrics.AroundOnset(res.Series[0], end.Add(-30*time.Minute)); o.Verdict != "normal" {
		t.Fatalf("onset = %+v", o)
	}
	if err := src.(*metrics.Datadog).Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A tag value that would change the query is refused before any request.
	if _, err := src.Lag(context.Background(), metrics.Query{Group: "a} by {host"}); err == nil || !strings.Contains(err.Error(), "tag value") {
		t.Fatalf("injection err = %v", err)
	}
}

func TestDatadogForbiddenSaysWhichKeyToCheck(t *testing.T) {
	srv := httptest.NewServer(&datadogFixture{})
	defer srv.Close()
	src := datadogSource(t, srv.URL, "dd-api-key-wrong")
	_, err := src.Lag(context.Background(), metrics.Query{})
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "Forbidden") || strings.Contains(err.Error(), "dd-api-key-wrong") {
		t.Fatalf("403 err = %v", err)
	}
}

func TestDatadogSiteSetsTheAPIBase(t *testing.T) {
	cfg, err := config.Parse([]byte("metrics:\n  datadog:\n    site: datadoghq.eu\n    api_key: k1234567\n    application_key: a1234567\n"),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metrics.Datadog.URL != "https://api.datadoghq.eu" {
		t.Fatalf("url = %s", cfg.Metrics.Datadog.URL)
	}
	if _, err := config.Parse([]byte("metrics:\n  datadog:\n    api_key: k1234567\n"), func(string) (string, bool) { return "", false }); err == nil ||
		!strings.Contains(err.Error(), "application_key") {
		t.Fatalf("missing app key err = %v", err)
	}
	if _, err := config.Parse([]byte("metrics:\n  datadog:\n    apikey: x\n"), func(string) (string, bool) { return "", false }); err == nil ||
		!strings.Contains(err.Error(), `unknown key "apikey"`) {
		t.Fatalf("unknown key err = %v", err)
	}
}
