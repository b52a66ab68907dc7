package connections

import (
	"context"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/metrics"
)

// The monitoring backends lag history is read from.
const (
	Prometheus       Backend = "prometheus"
	ConfluentMetrics Backend = "confluent_metrics"
	Datadog          Backend = "datadog"
	// Lake is the Iceberg catalog the stream lands in.
	Lake Backend = "lake"
)

// probeSpec is how one backend outside the core switch is probed; check is nil when unconfigured.
type probeSpec struct {
	key      string
	endpoint string
	timeout  time.Duration
	check    func(context.Context) error
}

// monitoringProbe probes a monitoring backend through the same client the lag tools use, so a
// pass means the documented answer came back, not merely that something listened.
func monitoringProbe(cfg *config.Config, b Backend) (probeSpec, bool) {
	m := cfg.Metrics
	switch b {
	case Prometheus:
		spec := probeSpec{key: "metrics.prometheus"}
		if m == nil || m.Prometheus == nil {
			return spec, true
		}
		p := m.Prometheus
		spec.endpoint, spec.timeout = p.URL, p.Timeout
		spec.check = func(ctx context.Context) error {
			c, err := metrics.NewPrometheus(p, time.Now)
			if err != nil {
				return err
			}
			return c.Ping(ctx)
		}
		return spec, true
	case ConfluentMetrics:
		spec := probeSpec{key: "metrics.confluent_metrics"}
		if m == nil || m.ConfluentMetrics == nil {
			return spec, true
		}
		c := m.ConfluentMetrics
		spec.endpoint, spec.timeout = c.URL, c.Timeout
		spec.check = func(ctx context.Context) error {
			cl, err := metrics.NewConfluent(c, time.Now)
			if err != nil {
				return err
			}
			return cl.Ping(ctx)
		}
		return spec, true
	case Datadog:
		spec := probeSpec{key: "metrics.datadog"}
		if m == nil || m.Datadog == nil {
			return spec, true
		}
		d := m.Datadog
		spec.endpoint, spec.timeout = d.URL, d.Timeout
		spec.check = func(ctx context.Context) error {
			cl, err := metrics.NewDatadog(d, time.Now)
			if err != nil {
				return err
			}
			return cl.Ping(ctx)
		}
		return spec, true
	case Lake:
		spec := probeSpec{key: "lake"}
		if cfg.Lake == nil {
			return spec, true
		}
		lc := cfg.Lake
		spec.endpoint, spec.timeout = lc.Catalog+": "+lakeEndpoint(lc), lc.Timeout
		spec.check = func(ctx context.Context) error {
			l, err := lake.Open(ctx, lc)
			if err != nil {
				return err
			}
			defer l.Close()
			return l.Ping(ctx)
		}
		return spec, true
	}
	return probeSpec{}, false
}

// lakeEndpoint is where a lake catalog points, without credentials.
func lakeEndpoint(l *config.Lake) string {
	switch l.Catalog {
	case "rest":
		return l.URI
	case "glue":
		return "glue " + l.Region
	}
	return l.Warehouse
}
