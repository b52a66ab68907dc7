// Package lakeprobe probes the lake's Iceberg catalog for check_connections. It is apart from
// pkg/connections so that iceberg-go and the cloud SDKs behind it are linked only into the agents
// that read the lake.
package lakeprobe

import (
	"context"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/lake"
)

// Probe opens the configured catalog and lists its namespaces, through the same client the lake
// tools use.
var Probe = connections.Probe{Backend: connections.Lake, Spec: spec}

func spec(cfg *config.Config) connections.ProbeSpec {
	s := connections.ProbeSpec{Key: "lake"}
	lc := cfg.Lake
	if lc == nil {
		return s
	}
	s.Endpoint, s.Timeout = lc.Catalog+": "+endpoint(lc), lc.Timeout
	s.Check = func(ctx context.Context) error {
		l, err := lake.Open(ctx, lc)
		if err != nil {
			return err
		}
		defer l.Close()
		return l.Ping(ctx)
	}
	return s
}

// endpoint is where a lake catalog points, without credentials.
func endpoint(l *config.Lake) string {
	switch l.Catalog {
	case "rest":
		return l.URI
	case "glue":
		return "glue " + l.Region
	}
	return l.Warehouse
}
