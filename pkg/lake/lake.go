// Package lake reads Iceberg tables where they land (Tableflow's, or any writer's) through the
// Apache Iceberg Go library: the catalog (REST with OAuth client credentials, AWS Glue, a SQL
// catalog database, or a warehouse path), snapshots as load history, the schema each snapshot was
// written with, and manifest column metrics. A null rate or row count over recent data files comes
// from metadata alone where the metrics exist; only files without them are read.
package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/glue"   // registers "glue"
	_ "github.com/apache/iceberg-go/catalog/hadoop" // registers "hadoop"
	_ "github.com/apache/iceberg-go/catalog/rest"   // registers "rest"
	_ "github.com/apache/iceberg-go/catalog/sql"    // registers "sql"
	"github.com/apache/iceberg-go/table"
	_ "github.com/mattn/go-sqlite3" // the sql catalog's SQLite driver

	"github.com/dataworkers/dw/pkg/config"
)

// Lake is an open catalog.
type Lake struct {
	cat       catalog.Catalog
	namespace string
	kind      string
}

// Open connects to the configured catalog. Nothing is listed or loaded yet.
func Open(ctx context.Context, cfg *config.Lake) (*Lake, error) {
	if cfg == nil {
		return nil, fmt.Errorf("the lake is not configured: set lake.catalog (rest, glue, sql or hadoop) and its keys")
	}
	props := iceberg.Properties{"type": cfg.Catalog}
	for k, v := range cfg.Properties {
		props[k] = v
	}
	set := func(k, v string) {
		if v != "" {
			props[k] = v
		}
	}
	set("warehouse", cfg.Warehouse)
	switch cfg.Catalog {
	case "rest":
		set("uri", cfg.URI)
		if cfg.ClientID != "" {
			props["credential"] = cfg.ClientID + ":" + cfg.ClientSecret
		}
		set("token", cfg.Token)
		set("oauth2-server-uri", cfg.OAuth2ServerURI)
		set("scope", cfg.Scope)
	case "glue":
		set("glue.region", cfg.Region)
		set("glue.id", cfg.GlueCatalogID)
	case "sql":
		props["uri"] = cfg.URI
		props["sql.driver"] = "sqlite3"
		props["sql.dialect"] = "sqlite"
	}
	cat, err := catalog.Load(ctx, "dw", props)
	if err != nil {
		return nil, fmt.Errorf("lake: open the %s catalog: %s (check lake.catalog, lake.uri and lake.warehouse)", cfg.Catalog, scrub(err, cfg))
	}
	return &Lake{cat: cat, namespace: cfg.Namespace, kind: cfg.Catalog}, nil
}

// scrub keeps secrets a library error may echo out of our messages.
func scrub(err error, cfg *config.Lake) string {
	msg := err.Error()
	for _, s := range []string{cfg.ClientSecret, cfg.Token} {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return msg
}

// Close releases the catalog's resources.
func (l *Lake) Close() error {
	if c, ok := l.cat.(catalog.Closer); ok {
		return c.Close()
	}
	return nil
}

// Catalog exposes the catalog for writers in tests and tools that need more than reads.
func (l *Lake) Catalog() catalog.Catalog { return l.cat }

// Identifier turns an asset into a table identifier: tableflow:<topic> is the topic's table in the
// configured namespace, named as Tableflow names it (see TableflowName; Load also tries the topic's
// own name); iceberg:<namespace>.<table> names it in full.
func (l *Lake) Identifier(asset string) (table.Identifier, error) {
	switch {
	case strings.HasPrefix(asset, "tableflow:"):
		topic := strings.TrimPrefix(asset, "tableflow:")
		if topic == "" {
			return nil, fmt.Errorf("asset %q names no topic", asset)
		}
		if l.namespace == "" {
			return nil, fmt.Errorf("asset %s: set lake.namespace (Tableflow's namespace is the Kafka cluster id) or confluent_cloud.kafka_cluster_id", asset)
		}
		return table.Identifier{l.namespace, TableflowName(topic)}, nil
	case strings.HasPrefix(asset, "iceberg:"):
		parts := strings.Split(strings.TrimPrefix(asset, "iceberg:"), ".")
		for _, p := range parts {
			if p == "" {
				return nil, fmt.Errorf("asset %q: use iceberg:<namespace>.<table>", asset)
			}
		}
		if len(parts) < 2 {
			return nil, fmt.Errorf("asset %q: use iceberg:<namespace>.<table>", asset)
		}
		return table.Identifier(parts), nil
	}
	return nil, fmt.Errorf("asset %q is not a lake table: use tableflow:<topic> or iceberg:<namespace>.<table>", asset)
}

// TableflowName is the table Tableflow lands a topic in: the topic name with '-' turned into '_'.
func TableflowName(topic string) string { return strings.ReplaceAll(topic, "-", "_") }

// IsLakeAsset reports whether asset names a lake table.
func IsLakeAsset(asset string) bool {
	return strings.HasPrefix(asset, "tableflow:") || strings.HasPrefix(asset, "iceberg:")
}

// Load loads the table an asset names.
func (l *Lake) Load(ctx context.Context, asset string) (*table.Table, error) {
	id, err := l.Identifier(asset)
	if err != nil {
		return nil, err
	}
	t, err := l.cat.LoadTable(ctx, id)
	if topic, ok := strings.CutPrefix(asset, "tableflow:"); ok && errors.Is(err, catalog.ErrNoSuchTable) && topic != id[1] {
		// Another writer may keep the topic's own name.
		if t2, err2 := l.cat.LoadTable(ctx, table.Identifier{l.namespace, topic}); err2 == nil {
			return t2, nil
		}
	}
	if err != nil {
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return nil, fmt.Errorf("lake: no table %s in the %s catalog (for tableflow:, check lake.namespace)", strings.Join(id, "."), l.kind)
		}
		return nil, fmt.Errorf("lake: load %s: %w", strings.Join(id, "."), err)
	}
	return t, nil
}

// Tables lists the tables of a namespace (the configured one when empty).
func (l *Lake) Tables(ctx context.Context, namespace string) ([]table.Identifier, error) {
	if namespace == "" {
		namespace = l.namespace
	}
	if namespace == "" {
		return nil, fmt.Errorf("lake: no namespace to list: set lake.namespace")
	}
	var out []table.Identifier
	for id, err := range l.cat.ListTables(ctx, table.Identifier{namespace}) {
		if err != nil {
			return nil, fmt.Errorf("lake: list tables of %s: %w", namespace, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// Ping lists the top-level namespaces: read-only, and proof the catalog answers as one.
func (l *Lake) Ping(ctx context.Context) error {
	if _, err := l.cat.ListNamespaces(ctx, nil); err != nil {
		return fmt.Errorf("lake: list namespaces: %w", err)
	}
	return nil
}
