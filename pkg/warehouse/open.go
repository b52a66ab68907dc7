// Package warehouse runs read-only SQL against the engine the stream lands in: SQLite (the embedded
// default), PostgreSQL (pgx) and Snowflake (gosnowflake, linked by importing pkg/warehouse/snowflake).
package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/dataworkers/dw/pkg/config"
)

// ErrNotConfigured is returned when the warehouse section is missing.
var ErrNotConfigured = errors.New("warehouse is not configured: add a warehouse section (engine, dsn) to the config")

// Open opens a connection pool to the configured warehouse; nothing is sent until first use.
// SQLite files are opened read-only and must exist: a missing file is a clear error, never an
// empty database created by accident.
func Open(c *config.Warehouse) (*sql.DB, error) {
	if c == nil {
		return nil, ErrNotConfigured
	}
	switch c.Engine {
	case "sqlite":
		if _, err := os.Stat(c.DSN); err != nil {
			return nil, fmt.Errorf("warehouse file %s: %w (load data into it, or set warehouse.dsn)", c.DSN, err)
		}
		// Each connection keeps its last 64 statements compiled (go-sqlite3's statement cache): a
		// check repeats the same few texts every run, and compiling one costs about as much as
		// running it over a small index range.
		dsn := "file:" + (&url.URL{Path: c.DSN}).EscapedPath() + "?mode=ro&_query_only=true&_busy_timeout=5000&_stmt_cache_size=64"
		return sql.OpenDB(sqliteConnector{dsn: dsn, driver: &sqlite3.SQLiteDriver{ConnectHook: limitLength}}), nil
	case "postgres":
		return sql.Open("pgx", c.DSN)
	case "snowflake":
		return openSnowflake(c.DSN, c.StatementTimeout)
	}
	return nil, fmt.Errorf("warehouse.engine %q is not supported; use sqlite, postgres or snowflake", c.Engine)
}

// SnowflakeDriver is how Snowflake sessions are opened and Snowflake's errors recognised. It is
// registered by pkg/warehouse/snowflake, which only the agents that query a warehouse import, so
// gosnowflake and its Arrow dependency stay out of the other binaries.
type SnowflakeDriver struct {
	// Open opens a pool whose sessions carry the statement timeout server-side.
	Open func(dsn string, timeout time.Duration) (*sql.DB, error)
	// ErrorNumber is Snowflake's error number when err is a Snowflake error.
	ErrorNumber func(err error) (int, bool)
}

// snowflakeDriver is set once, at init, like database/sql's own driver registry.
var snowflakeDriver *SnowflakeDriver

// RegisterSnowflake makes the Snowflake engine available to Open and NewDB.
func RegisterSnowflake(d SnowflakeDriver) { snowflakeDriver = &d }

// ErrNoSnowflakeDriver says the binary was built without the Snowflake driver.
var ErrNoSnowflakeDriver = errors.New("warehouse.engine is snowflake, but this binary is built without the Snowflake driver: only the agents that query the warehouse link it")

func openSnowflake(dsn string, timeout time.Duration) (*sql.DB, error) {
	if snowflakeDriver == nil {
		return nil, ErrNoSnowflakeDriver
	}
	if timeout <= 0 {
		timeout = 60 * time.Second // the default of warehouse.statement_timeout
	}
	return snowflakeDriver.Open(dsn, timeout)
}

func snowflakeErrorNumber(err error) (int, bool) {
	if snowflakeDriver == nil {
		return 0, false
	}
	return snowflakeDriver.ErrorNumber(err)
}

// sqliteConnector opens SQLite connections through a driver of our own (no global registration)
// whose connect hook caps the length of every string or blob the engine builds.
type sqliteConnector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c sqliteConnector) Driver() driver.Driver                        { return c.driver }

// limitLength makes SQLite refuse (SQLITE_TOOBIG) to build a value over MaxEngineValue bytes, so
// randomblob(1e9) or a huge group_concat fails in the engine instead of filling memory.
func limitLength(conn *sqlite3.SQLiteConn) error {
	conn.SetLimit(sqlite3.SQLITE_LIMIT_LENGTH, MaxEngineValue)
	return nil
}

// Ping opens the warehouse and checks that it answers a query within ctx.
func Ping(ctx context.Context, c *config.Warehouse) error {
	db, err := Open(c)
	if err != nil {
		return err
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("warehouse (%s): %w", c.Engine, err)
	}
	return nil
}
