package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	_ "github.com/mattn/go-sqlite3" // the sql catalog's SQLite driver
)

// sqlCatalog reads a SQL catalog database (the layout Iceberg's JDBC catalog, PyIceberg and
// iceberg-go share: iceberg_tables with one row per table and its metadata_location).
type sqlCatalog struct {
	db   *sql.DB
	name string // catalog_name the rows are kept under
}

func openSQLCatalog(ctx context.Context, path, name string) (*sqlCatalog, error) {
	if path == "" {
		return nil, fmt.Errorf("set lake.uri to the sql catalog's SQLite database file")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no sql catalog database at %s (lake.uri): %w", path, err)
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return nil, err
	}
	c := &sqlCatalog{db: db, name: name}
	if c.name == "" {
		// One catalog in the database (the usual case) needs no name in the config.
		rows, err := db.QueryContext(ctx, `SELECT DISTINCT catalog_name FROM iceberg_tables ORDER BY 1`)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("read iceberg_tables of %s: %w", path, err)
		}
		names, err := scanStrings(rows)
		if err != nil {
			db.Close()
			return nil, err
		}
		switch len(names) {
		case 0:
			c.name = "dw"
		case 1:
			c.name = names[0]
		default:
			db.Close()
			return nil, fmt.Errorf("%s holds catalogs %s: set lake.properties.catalog_name to one", path, strings.Join(names, ", "))
		}
	}
	return c, nil
}

func (c *sqlCatalog) locate(ctx context.Context, id []string) (string, *Metadata, map[string]string, error) {
	var loc sql.NullString
	err := c.db.QueryRowContext(ctx, `SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?`,
		c.name, strings.Join(id[:len(id)-1], "."), id[len(id)-1]).Scan(&loc)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !loc.Valid) {
		return "", nil, nil, errNoSuchTable
	}
	if err != nil {
		return "", nil, nil, fmt.Errorf("sql catalog: %w", err)
	}
	return loc.String, nil, nil, nil
}

func (c *sqlCatalog) listTables(ctx context.Context, namespace []string) ([][]string, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT table_name FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND metadata_location IS NOT NULL ORDER BY 1`,
		c.name, strings.Join(namespace, "."))
	if err != nil {
		return nil, fmt.Errorf("sql catalog: %w", err)
	}
	names, err := scanStrings(rows)
	out := make([][]string, len(names))
	for i, n := range names {
		out[i] = append(append([]string{}, namespace...), n)
	}
	return out, err
}

func (c *sqlCatalog) listNamespaces(ctx context.Context) ([][]string, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT DISTINCT table_namespace FROM iceberg_tables WHERE catalog_name = ? ORDER BY 1`, c.name)
	if err != nil {
		return nil, fmt.Errorf("sql catalog: %w", err)
	}
	names, err := scanStrings(rows)
	out := make([][]string, len(names))
	for i, n := range names {
		out[i] = strings.Split(n, ".")
	}
	return out, err
}

func (c *sqlCatalog) close() error { return c.db.Close() }

func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
