package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migrations are numbered SQL files, NNNN_name.sql, applied in order, each once: SQLite's in
// migrations/, PostgreSQL's in migrations/postgres/. A package that owns tables adds its file to
// both, under the same number, creating the same tables, columns, indexes and constraints; the
// number is the only coordination needed (TestMigrationsPairAcrossEngines and
// TestMigratedSchemasMatchAcrossEngines check the pairs).
//
//go:embed migrations/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// migrationDir is where the dialect's migrations live inside migrationFiles.
func migrationDir(d Dialect) string {
	if d == PostgreSQL {
		return "migrations/postgres"
	}
	return "migrations"
}

// migrateLockKey is the PostgreSQL advisory lock held while migrations run ("dw-migr"), so five
// agents starting together on several machines migrate exactly once.
const migrateLockKey int64 = 0x64772d6d69677200

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate applies what is missing inside one write transaction (IMMEDIATE on SQLite; on PostgreSQL
// holding the migration advisory lock as well as the write lock, and DDL is transactional there),
// so when five processes start at once the first does the work and the others wait, then find
// nothing left to do.
func (s *Store) migrate(ctx context.Context) error {
	migs, err := loadMigrations(migrationFiles, migrationDir(s.dialect))
	if err != nil {
		return err
	}
	latest := 0
	if len(migs) > 0 {
		latest = migs[len(migs)-1].version
	}
	// Fast path: an up-to-date store needs no write lock (cheap start-up for every agent).
	if n, err := s.appliedCount(ctx); err == nil && n == len(migs) {
		if v, err := s.SchemaVersion(ctx); err == nil && v == latest {
			return nil
		}
	}
	return s.Write(ctx, func(tx *sql.Tx) error {
		if s.dialect == PostgreSQL {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, migrateLockKey); err != nil {
				return fmt.Errorf("take the migration lock: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TEXT NOT NULL)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		applied := map[int]bool{}
		rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("read schema versions: %w", err)
		}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return err
			}
			applied[v] = true
		}
		rows.Close()
		known := map[int]bool{}
		for _, m := range migs {
			known[m.version] = true
		}
		for v := range applied {
			if !known[v] {
				return fmt.Errorf("schema version %d is newer than this binary knows (latest %d): update Data Workers before using this store", v, latest)
			}
		}
		// Apply every missing migration in order, not only those above the highest applied: a
		// branch that adds 0003 after a store already has 0005 still gets it.
		for _, m := range migs {
			if applied[m.version] {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, Timestamp(time.Now())); err != nil {
				return fmt.Errorf("record migration %d: %w", m.version, err)
			}
		}
		return nil
	})
}

// SchemaVersion is the highest applied migration (0 for a new file).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.DB.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		if isUndefinedTable(err) {
			return 0, nil
		}
		return 0, err
	}
	return v, nil
}

// LatestSchemaVersion is the version this binary migrates to (the same on both engines).
func LatestSchemaVersion() int {
	migs, err := loadMigrations(migrationFiles, migrationDir(SQLite))
	if err != nil || len(migs) == 0 {
		return 0
	}
	return migs[len(migs)-1].version
}

func (s *Store) appliedCount(ctx context.Context) (int, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n)
	return n, err
}
