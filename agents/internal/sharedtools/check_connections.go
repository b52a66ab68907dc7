// Package sharedtools holds the tool adapters every agent serves the same way.
package sharedtools

import (
	"context"

	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

type checkConnectionsParams struct{}

// CheckConnections reports the backends this agent uses: configured or not (and under which key),
// reachable or not, with latency and the error; plus the shared store's engine and version, its
// location (a PostgreSQL URL without its password) and schema version.
// probes supplies the probes of heavy backends (pkg/connections/lakeprobe) that only the agents
// using them link.
func CheckConnections(env *mcpkit.Env, probes []connections.Probe, backends ...connections.Backend) mcpkit.Tool {
	return mcpkit.Read("check_connections",
		"Report which backends this agent uses, whether each is configured (and the config key that configures it), "+
			"whether it answers (latency, error), and the shared store's engine (SQLite or PostgreSQL) and version, "+
			"location (a PostgreSQL URL without its password) and schema version. "+
			"Call this first when a tool says a backend is unreachable or not configured.",
		func(ctx context.Context, _ checkConnectionsParams) (connections.Report, error) {
			return connections.Check(ctx, env.Agent, env.Config, env.Store, backends, probes...), nil
		})
}
