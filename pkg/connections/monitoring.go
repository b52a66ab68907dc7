package connections

import (
	"context"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/metrics"
)

// The monitoring backends lag history is read from.
const (
	Prometheus       Backend = "prometheus"
	ConfluentMetrics Backend = "confluent_metrics"
	Datadog          Backend = "datadog"
	// Lake is the Iceberg catalog the stream lands in; its probe is in pkg/connections/lakeprobe.
	Lake Backend = "lake"
)

// ProbeSpec is how one backend outside the core switch is probed: the config key that configures
// it, where it points (without credentials), the probe's timeout, and the check (nil when the
// backend is not configured).
type ProbeSpec struct {
	Key      string
	Endpoint string
	Timeout  time.Duration
	Check    func(context.Context) error
}

// Probe is a backend's probe supplied by an agent's wiring, for backends whose client only the
// agents that use it should link.
type Probe struct {
	Backend Backend
	Spec    func(*config.Config) ProbeSpec
}

// linkedProbe finds b among the probes an agent passed in.
func linkedProbe(cfg *config.Config, b Backend, probes []Probe) (ProbeSpec, bool) {
	for _, p := range probes {
		if p.Backend == b {
			return p.Spec(cfg), true
		}
	}
	return ProbeSpec{}, false
}

// monitoringProbe probes a monitoring backend through the same client the lag tools use, so a
// pass means the documented answer came back, not merely that something listened.
func monitoringProbe(cfg *config.Config, b Backend) (ProbeSpec, bool) {
	m := cfg.Metrics
	switch b {
	case Prometheus:
		spec := ProbeSpec{Key: "metrics.prometheus"}
		if m == nil || m.Prometheus == nil {
			return spec, true
		}
		p := m.Prometheus
		spec.Endpoint, spec.Timeout = p.URL, p.Timeout
		spec.Check = func(ctx context.Context) error {
			c, err := metrics.NewPrometheus(p, time.Now)
			if err != nil {
				return err
			}
			return c.Ping(ctx)
		}
		return spec, true
	case ConfluentMetrics:
		spec := ProbeSpec{Key: "metrics.confluent_metrics"}
		if m == nil || m.ConfluentMetrics == nil {
			return spec, true
		}
		c := m.ConfluentMetrics
		spec.Endpoint, spec.Timeout = c.URL, c.Timeout
		spec.Check = func(ctx context.Context) error {
			cl, err := metrics.NewConfluent(c, time.Now)
			if err != nil {
				return err
			}
			return cl.Ping(ctx)
		}
		return spec, true
	case Datadog:
		spec := ProbeSpec{Key: "metrics.datadog"}
		if m == nil || m.Datadog == nil {
			return spec, true
		}
		d := m.Datadog
		spec.Endpoint, spec.Timeout = d.URL, d.Timeout
		spec.Check = func(ctx context.Context) error {
			cl, err := metrics.NewDatadog(d, time.Now)
			if err != nil {
				return err
			}
			return cl.Ping(ctx)
		}
		return spec, true
	}
	return ProbeSpec{}, false
}
