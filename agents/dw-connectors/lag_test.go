package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

// TestConsumerLagFromMonitoring reads lag history through the Datadog timeseries query API (a
// loopback fixture of its documented v2 shape) and checks the tool's window arguments and errors.
func TestConsumerLagFromMonitoring(t *testing.T) {
	var gotQuery, gotFrom string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("DD-API-KEY") != "dd-api-key-1" || r.Header.Get("DD-APPLICATION-KEY") != "dd-app-key-1" {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"errors":["Forbidden"]}`))
			return
		}
		var body struct {
			Data struct {
				Attributes struct {
					From    int64 `json:"from"`
					Queries []struct {
						Query string `json:"query"`
					} `json:"queries"`
				} `json:"attributes"`
			} `json:"data"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/api/v2/query/timeseries" || json.NewDecoder(r.Body).Decode(&body) != nil || len(body.Data.Attributes.Queries) != 1 {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"errors":["want a timeseries_request"]}`))
			return
		}
		gotQuery, gotFrom = body.Data.Attributes.Queries[0].Query, strconv.FormatInt(body.Data.Attributes.From/1000, 10)
		w.Write([]byte(`{"data":{"type":"timeseries_response","attributes":{"series":[{"group_tags":["consumer_group:rollup","topic:api-usage"],"query_index":0}],
 "times":[1796047200000,1796050800000],"values":[[4.0,12.0]]}}}`))
	}))
	defer srv.Close()
	env := mcpkittest.Env(t, "dw-connectors")
	env.Config.Metrics = &config.Metrics{Datadog: &config.Datadog{URL: srv.URL, APIKey: "dd-api-key-1", ApplicationKey: "dd-app-key-1",
		LagMetric: "kafka.consumer_lag", GroupTag: "consumer_group", TopicTag: "topic", PartitionTag: "partition", Timeout: 5 * time.Second}}
	var lag consumerLagResult
	if msg := mcpkittest.Call(t, tool(t, env, "get_consumer_lag"), map[string]any{"group": "rollup", "source": "datadog", "since": "6h", "step": "5m"}, &lag); msg != "" {
		t.Fatal(msg)
	}
	if lag.Source != "datadog" || lag.TotalLag != 12 || lag.TotalGroups != 1 || lag.History == nil || len(lag.History.Series[0].Points) != 2 {
		t.Fatalf("lag = %+v", lag)
	}
	if !strings.Contains(gotQuery, "consumer_group:rollup") || !strings.Contains(gotQuery, "rollup(max, 300)") {
		t.Fatalf("query = %s", gotQuery)
	}
	if want := env.Now().Add(-6 * time.Hour).Unix(); gotFrom != strconv.FormatInt(want, 10) {
		t.Fatalf("from = %s, want %d", gotFrom, want)
	}
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"source": "prometheus"}, "metrics.prometheus.url"},
		{map[string]any{"source": "graphite"}, "unknown lag source"},
		{map[string]any{"since": "1h"}, "need a monitoring source"},
		{map[string]any{"source": "datadog", "step": "fast"}, "positive duration"},
		{map[string]any{"source": "datadog", "until": "1h"}, "until needs since"},
		{map[string]any{"source": "datadog", "throughput": true}, "confluent_metrics only"},
	}
	for _, c := range cases {
		if msg := mcpkittest.Call(t, tool(t, env, "get_consumer_lag"), c.args, nil); !strings.Contains(msg, c.want) {
			t.Errorf("%v: message %q, want it to mention %q", c.args, msg, c.want)
		}
	}
}
