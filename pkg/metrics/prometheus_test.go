package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/promtest"
	"github.com/dataworkers/dw/pkg/metrics"
)

// exporter serves kafka-exporter's lag gauges for two partitions of one group, and one other group.
type exporter struct{ p0, p1 atomic.Int64 }

func (e *exporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP kafka_consumergroup_lag Approximate lag of a consumer group on a topic partition\n# TYPE kafka_consumergroup_lag gauge\n")
	fmt.Fprintf(w, "kafka_consumergroup_lag{consumergroup=\"sink-lake\",topic=\"events-hourly\",partition=\"0\"} %d\n", e.p0.Load())
	fmt.Fprintf(w, "kafka_consumergroup_lag{consumergroup=\"sink-lake\",topic=\"events-hourly\",partition=\"1\"} %d\n", e.p1.Load())
	fmt.Fprintf(w, "kafka_consumergroup_lag{consumergroup=\"audit\",topic=\"events-hourly\",partition=\"0\"} 7\n")
}

func TestPrometheusInstantAndRangeLagFromARealServer(t *testing.T) {
	exp := &exporter{}
	exp.p0.Store(10)
	exp.p1.Store(5)
	target := httptest.NewServer(exp)
	defer target.Close()
	srv := promtest.Start(t, time.Second, strings.TrimPrefix(target.URL, "http://"))

	cfg := &config.Metrics{Prometheus: &config.Prometheus{URL: srv.URL}}
	parsePrometheus(t, cfg)
	src, err := metrics.Open(cfg, "prometheus", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := src.(*metrics.Prometheus)
	ctx := context.Background()
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	start := time.Now().Add(-time.Second)
	waitLag := func(want float64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			res, err := src.Lag(ctx, metrics.Query{Group: "sink-lake"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Series) == 1 && res.Series[0].Last().Value == want {
				s := res.Series[0]
				if s.Group != "sink-lake" || s.Topic != "events-hourly" || len(s.Points) != 1 {
					t.Fatalf("instant series = %+v", s)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("instant lag never reached %v: %+v", want, res)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitLag(15)
	time.Sleep(2 * time.Second) // a few scrapes before the onset
	onset := time.Now()
	exp.p0.Store(3000)
	exp.p1.Store(1000)
	waitLag(4000)
	time.Sleep(1500 * time.Millisecond)

	res, err := src.Lag(ctx, metrics.Query{Topic: "events-hourly", Start: start, End: time.Now(), Step: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.StepSeconds != 1 || !strings.Contains(res.Query, `topic="events-hourly"`) {
		t.Fatalf("range result = %+v", res)
	}
	if len(res.Series) != 2 || res.Series[0].Group != "audit" || res.Series[1].Group != "sink-lake" {
		t.Fatalf("want the audit and sink-lake series, got %+v", res.Series)
	}
	lake := res.Series[1]
	if first := lake.Points[0].Value; first != 15 || lake.Last().Value != 4000 || len(lake.Points) < 3 {
		t.Fatalf("sink-lake points = %+v", lake.Points)
	}
	around := metrics.AroundOnset(lake, onset)
	if around.Verdict != "rising" || around.BeforeMax != 15 || around.AfterMax != 4000 {
		t.Fatalf("around onset = %+v", around)
	}
	if a := metrics.AroundOnset(res.Series[0], onset); a.Verdict != "normal" || !strings.Contains(a.Summary, "normal through the onset") {
		t.Fatalf("audit around onset = %+v", a)
	}

	// A window longer than MaxPoints steps gets a coarser step, and says so.
	wide, err := src.Lag(ctx, metrics.Query{Group: "sink-lake", Start: time.Now().Add(-48 * time.Hour), End: time.Now(), Step: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if wide.StepSeconds < 48*3600/metrics.MaxPoints || len(wide.Warnings) == 0 || !strings.Contains(wide.Warnings[0], "step raised") {
		t.Fatalf("wide = step %d warnings %v", wide.StepSeconds, wide.Warnings)
	}

	// A query Prometheus rejects comes back with its own explanation.
	_, _, err = p.Query(ctx, "sum(", metrics.Query{})
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "parse error") {
		t.Fatalf("bad PromQL err = %v", err)
	}
	// A window that ends before it starts is refused before any request.
	if _, err := src.Lag(ctx, metrics.Query{Start: time.Now(), End: time.Now().Add(-time.Hour)}); err == nil || !strings.Contains(err.Error(), "not before") {
		t.Fatalf("backwards window err = %v", err)
	}
}

// parsePrometheus runs cfg through the config loader's defaults, as the agents get it.
func parsePrometheus(t *testing.T, m *config.Metrics) {
	t.Helper()
	y := "metrics:\n  prometheus:\n    url: " + m.Prometheus.URL + "\n"
	if m.Prometheus.Series != "" {
		y += "    series: " + m.Prometheus.Series + "\n"
	}
	cfg, err := config.Parse([]byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	*m = *cfg.Metrics
}

func TestPrometheusConfluentExportNamesAndBadConfig(t *testing.T) {
	cfg := &config.Metrics{Prometheus: &config.Prometheus{URL: "http://127.0.0.1:1", Series: "confluent"}}
	parsePrometheus(t, cfg)
	src, err := metrics.Open(cfg, "prometheus", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := src.(*metrics.Prometheus).LagExpr("g\"x", "t")
	want := `sum by (consumer_group_id, topic) (confluent_kafka_server_consumer_lag_offsets{consumer_group_id="g\"x",topic="t"})`
	if got != want {
		t.Fatalf("expr = %s\nwant %s", got, want)
	}
	cfg.Prometheus.GroupLabel = "group) or vector(1"
	if _, err := metrics.Open(cfg, "prometheus", nil); err == nil || !strings.Contains(err.Error(), "group_label") {
		t.Fatalf("bad label err = %v", err)
	}
	if _, err := metrics.Open(nil, "prometheus", nil); err == nil || !strings.Contains(err.Error(), "metrics.prometheus.url") {
		t.Fatalf("unconfigured err = %v", err)
	}
	if _, err := metrics.Open(cfg, "graphite", nil); err == nil || !strings.Contains(err.Error(), "brokers") {
		t.Fatalf("unknown source err = %v", err)
	}
}
