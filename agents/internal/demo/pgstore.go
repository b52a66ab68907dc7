package demo

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"github.com/dataworkers/dw/pkg/store"
)

// demoSchema is the PostgreSQL schema a run keeps its store in: a run empties only this schema,
// never the rest of the database the URL names.
const demoSchema = "dw_demo"

// freshPGStore empties the demo's own schema in the PostgreSQL database at raw and returns the URL
// the agents use, which puts the store in that schema.
func freshPGStore(ctx context.Context, raw string) (string, error) {
	if !store.IsPostgresURL(raw) {
		return "", fmt.Errorf("demo: DW_STORE_URL %s: want postgres://…", store.RedactURL(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("demo: DW_STORE_URL %s: %w", store.RedactURL(raw), err)
	}
	db, err := sql.Open("pgx", raw)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `DROP SCHEMA IF EXISTS `+demoSchema+` CASCADE; CREATE SCHEMA `+demoSchema); err != nil {
		return "", fmt.Errorf("demo: prepare schema %s in %s: %v", demoSchema, store.RedactURL(raw), err)
	}
	q := u.Query()
	q.Set("search_path", demoSchema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
