// Package snowflake links the Snowflake driver (gosnowflake and its Arrow dependency) into a binary.
// It is imported only by the agents that query a warehouse, so the others start without the
// driver's weight; without it, warehouse.Open says the binary lacks the driver.
package snowflake

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	sf "github.com/snowflakedb/gosnowflake"

	"github.com/dataworkers/dw/pkg/warehouse"
)

func init() {
	warehouse.RegisterSnowflake(warehouse.SnowflakeDriver{Open: open, ErrorNumber: errorNumber})
}

// open sets the session parameters Snowflake honours for us: a server-side statement timeout,
// UTC, and a query tag so the account's QUERY_HISTORY shows what Data Workers ran. Snowflake has
// no read-only session; the role in the DSN must be a reader, and every statement we send is a
// single SELECT (custom SQL is checked by CheckReadOnlySQL and wrapped in a subquery).
func open(dsn string, timeout time.Duration) (*sql.DB, error) {
	cfg, err := sf.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("warehouse.dsn is not a valid gosnowflake DSN (user:password@account/DB/SCHEMA?warehouse=WH&role=ROLE): %w", err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]*string{}
	}
	set := func(k, v string) {
		if cfg.Params[k] == nil {
			cfg.Params[k] = &v
		}
	}
	set("STATEMENT_TIMEOUT_IN_SECONDS", strconv.Itoa(int((timeout+time.Second-1)/time.Second)))
	set("TIMEZONE", "UTC")
	set("QUERY_TAG", "data-workers")
	return sql.OpenDB(sf.NewConnector(sf.SnowflakeDriver{}, *cfg)), nil
}

func errorNumber(err error) (int, bool) {
	var sfe *sf.SnowflakeError
	if errors.As(err, &sfe) {
		return sfe.Number, true
	}
	return 0, false
}
