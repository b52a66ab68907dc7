// Package warehousetest opens the loopback warehouse peers of pkg/internal (a throwaway
// PostgreSQL cluster, the Snowflake REST stand-in) to the test layers outside pkg/, such as the
// end-to-end scenarios under agents/internal. It only forwards: the peers live in pkg/internal.
package warehousetest

import (
	"testing"

	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/internal/sftest"
)

// Postgres is a running throwaway PostgreSQL cluster (pgtest.Cluster).
type Postgres = pgtest.Cluster

// SharedPostgres is one cluster for the whole test binary; call StopSharedPostgres from TestMain.
// Skipped when the server binaries are missing, except under CI=true.
func SharedPostgres(t testing.TB) *Postgres { return pgtest.Shared(t) }

// StopSharedPostgres stops the shared cluster if one was started.
func StopSharedPostgres() { pgtest.StopShared() }

// Snowflake is the Snowflake REST stand-in and its query and result types (see sftest).
type (
	Snowflake       = sftest.Server
	SnowflakeQuery  = sftest.Query
	SnowflakeResult = sftest.Result
	SnowflakeColumn = sftest.Column
)

// StartSnowflake serves the stand-in on 127.0.0.1 until the test ends; answer decides each
// query's result.
func StartSnowflake(t testing.TB, answer func(SnowflakeQuery) SnowflakeResult) *Snowflake {
	return sftest.Start(t, answer)
}
