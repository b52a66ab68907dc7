package connections

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/promtest"
)

// monitoringAPIs answers each probe path with its documented shape, or "{}" when shapeless is set.
func monitoringAPIs(shapeless bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if shapeless {
			w.Write([]byte(`{}`))
			return
		}
		switch r.URL.Path {
		case "/api/v1/status/buildinfo":
			w.Write([]byte(`{"status":"success","data":{"version":"2.42.0"}}`))
		case "/v2/metrics/cloud/descriptors/metrics":
			if u, _, _ := r.BasicAuth(); u != "mkey" {
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"errors":[{"detail":"invalid API key"}]}`))
				return
			}
			w.Write([]byte(`{"data":[{"name":"io.confluent.kafka.server/received_bytes"}],"meta":{"pagination":{}}}`))
		case "/api/v1/validate":
			w.Write([]byte(`{"valid":true}`))
		case "/api/v1/query":
			if r.Header.Get("DD-APPLICATION-KEY") == "" {
				w.WriteHeader(http.StatusForbidden)
				return
			}
			w.Write([]byte(`{"status":"ok","series":[]}`))
		default:
			http.NotFound(w, r)
		}
	})
}

func monitoringConfig(t *testing.T, url string) *config.Config {
	t.Helper()
	y := "metrics:\n  prometheus:\n    url: " + url + "\n  confluent_metrics:\n    url: " + url + "\n    api_key: mkey\n    api_secret: msecret-123\n    kafka_cluster_id: lkc-1\n" +
		"  datadog:\n    url: " + url + "\n    api_key: dkey-1234\n    application_key: dapp-1234\n"
	cfg, err := config.Parse([]byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestMonitoringBackendsProbeTheDocumentedAnswer(t *testing.T) {
	good := httptest.NewServer(monitoringAPIs(false))
	defer good.Close()
	r := Check(context.Background(), "dw-test", monitoringConfig(t, good.URL), lazyStore(t), []Backend{Prometheus, ConfluentMetrics, Datadog})
	for _, s := range r.Backends {
		if !s.Configured || s.Reachable == nil || !*s.Reachable {
			t.Errorf("%s = %+v", s.Backend, s)
		}
	}
	bad := httptest.NewServer(monitoringAPIs(true))
	defer bad.Close()
	r = Check(context.Background(), "dw-test", monitoringConfig(t, bad.URL), lazyStore(t), []Backend{Prometheus, ConfluentMetrics, Datadog})
	if r.Healthy {
		t.Error("a server answering {} everywhere passed as healthy")
	}
	for _, s := range r.Backends {
		if s.Reachable == nil || *s.Reachable || s.Error == "" {
			t.Errorf("%s passed on a shapeless answer: %+v", s.Backend, s)
		}
	}
	r = Check(context.Background(), "dw-test", &config.Config{}, lazyStore(t), []Backend{Prometheus, ConfluentMetrics, Datadog})
	want := map[Backend]string{Prometheus: "metrics.prometheus", ConfluentMetrics: "metrics.confluent_metrics", Datadog: "metrics.datadog"}
	for _, s := range r.Backends {
		if s.Configured || s.ConfigKey != want[s.Backend] || !strings.HasPrefix(s.ConfigKey, "metrics.") {
			t.Errorf("unconfigured %s = %+v", s.Backend, s)
		}
	}
}

func TestPrometheusProbeAgainstARealServer(t *testing.T) {
	srv := promtest.Start(t, 0)
	cfg := monitoringConfig(t, srv.URL)
	r := Check(context.Background(), "dw-test", cfg, lazyStore(t), []Backend{Prometheus})
	if s := r.Backends[0]; s.Reachable == nil || !*s.Reachable {
		t.Fatalf("real prometheus = %+v", s)
	}
}

func TestABackendWithoutItsLinkedProbeSaysSo(t *testing.T) {
	r := Check(context.Background(), "dw-test", &config.Config{}, lazyStore(t), []Backend{Lake})
	if s := r.Backends[0]; s.Configured || s.Error != "no probe for this backend is linked into this agent" {
		t.Fatalf("lake without its probe = %+v", s)
	}
}
