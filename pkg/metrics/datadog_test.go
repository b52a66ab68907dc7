package metrics_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/metrics"
)

// datadogFixture answers as Datadog documents it: POST /api/v2/query/timeseries (a
// timeseries_request with from, to and interval in epoch milliseconds, answered by series'
// group_tags beside value lists aligned with times, nulls for gaps), GET /api/v1/query (from/to in
// epoch seconds, series whose pointlist holds [epoch milliseconds, value or null] pairs) and
// /api/v1/validate; both keys in DD-API-KEY and DD-APPLICATION-KEY. noV2 makes v2 a 404, as a
// site or proxy without it would.
type datadogFixture struct {
	queries []string
	paths   []string
	noV2    bool
}

func (f *datadogFixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	if r.URL.Path == "/api/v2/query/timeseries" {
		f.serveV2(w, r)
		return
	}
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

func (f *datadogFixture) serveV2(w http.ResponseWriter, r *http.Request) {
	if f.noV2 {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"errors":["Not Found"]}`))
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("DD-API-KEY") != "dd-api-key-1" || r.Header.Get("DD-APPLICATION-KEY") != "dd-app-key-1" {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"errors":["Forbidden"]}`))
		return
	}
	var body struct {
		Data struct {
			Type       string `json:"type"`
			Attributes struct {
				From, To, Interval int64
				Queries            []struct{ DataSource, Query, Name string } `json:"queries"`
				Formulas           []struct{ Formula string }                 `json:"formulas"`
			} `json:"attributes"`
		} `json:"data"`
	}
	a := &body.Data.Attributes
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Data.Type != "timeseries_request" || a.From == 0 || a.To <= a.From ||
		len(a.Queries) != 1 || a.Queries[0].Query == "" || len(a.Formulas) != 1 || a.Formulas[0].Formula != a.Queries[0].Name {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"errors":["Invalid timeseries request: data.attributes.from, to and queries are required"]}`))
		return
	}
	f.queries = append(f.queries, a.Queries[0].Query)
	if strings.Contains(a.Queries[0].Query, "{*}") && !strings.Contains(a.Queries[0].Query, " by ") {
		w.Write([]byte(`{"data":{"type":"timeseries_response","attributes":{"series":[],"times":[],"values":[]}}}`))
		return
	}
	w.Write([]byte(`{"data":{"id":"0","type":"timeseries_response","attributes":{
 "series":[{"group_tags":["consumer_group:sink-lake","topic:events-hourly"],"query_index":0,"unit":null}],
 "times":[1796047200000,1796047260000,1796047320000,1796050800000],
 "values":[[20.0,null,25.0,22.0]]}}}`))
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
	for _, noV2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "v2 timeseries", true: "v1 fallback"}[noV2], func(t *testing.T) { testDatadogLag(t, noV2) })
	}
}

func testDatadogLag(t *testing.T, noV2 bool) {
	f := &datadogFixture{noV2: noV2}
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
	if fellBack := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "/api/v1/query") }); fellBack != noV2 {
		t.Fatalf("warnings %v (v2 missing: %v)", res.Warnings, noV2)
	}
	if err := src.(*metrics.Datadog).Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Once v2 is found missing, v1 is asked directly.
	if v2Calls := slices.Index(f.paths, "POST /api/v2/query/timeseries"); noV2 && strings.Count(strings.Join(f.paths, "\n"), "/api/v2/") != 1 || !noV2 && v2Calls < 0 {
		t.Fatalf("requests = %v", f.paths)
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

// TestDatadogV2ErrorsAreClear: a v2 400 carries Datadog's message; an answer whose value lists do
// not line up with its series or times is refused, not half read.
func TestDatadogV2ErrorsAreClear(t *testing.T) {
	answer := `{"errors":["Error parsing query: unexpected token"]}`
	status := http.StatusBadRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	src := datadogSource(t, srv.URL, "dd-api-key-1")
	q := metrics.Query{Start: time.UnixMilli(1796047200000), End: time.UnixMilli(1796050800000), Step: time.Minute}
	if _, err := src.Lag(context.Background(), q); err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "unexpected token") {
		t.Fatalf("400 err = %v", err)
	}
	status = http.StatusOK
	answer = `{"data":{"attributes":{"series":[{"group_tags":["topic:t"]}],"times":[1796047200000,1796047260000],"values":[[1]]}}}`
	if _, err := src.Lag(context.Background(), q); err == nil || !strings.Contains(err.Error(), "1 values for 2 times") {
		t.Fatalf("misaligned err = %v", err)
	}
}
