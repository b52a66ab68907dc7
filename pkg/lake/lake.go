// Package lake reads Iceberg tables where they land (Tableflow's, or any writer's): the catalog
// (REST with OAuth client credentials, AWS Glue, a SQL catalog database, or a warehouse path),
// snapshots as load history, the schema each snapshot was written with, and manifest column
// metrics. Metadata JSON, manifest lists and manifests (Avro, decoded by hamba/avro) are read by
// this package itself; iceberg-go gives only the file IO (local files and S3), because its root
// package's initialisers cost every start of the agents that link the lake. A null rate or row
// count over recent data files comes from metadata alone where the metrics exist; only files
// without them are read.
package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/config"
)

// Lake is an open catalog.
type Lake struct {
	cat       catalogClient
	cfg       *config.Lake
	namespace string
	kind      string
}

// Open connects to the configured catalog. Nothing is listed or loaded yet.
func Open(ctx context.Context, cfg *config.Lake) (*Lake, error) {
	if cfg == nil {
		return nil, fmt.Errorf("the lake is not configured: set lake.catalog (rest, glue, sql or hadoop) and its keys")
	}
	var (
		cat catalogClient
		err error
	)
	switch cfg.Catalog {
	case "rest":
		cat, err = openRESTCatalog(ctx, cfg)
	case "glue":
		cat, err = openGlueCatalog(ctx, cfg.Region, cfg.GlueCatalogID, cfg.Properties["glue.endpoint"])
	case "sql":
		cat, err = openSQLCatalog(ctx, cfg.URI, cfg.Properties["catalog_name"])
	case "hadoop":
		cat, err = openHadoopCatalog(ctx, cfg.Warehouse, fileProps(cfg, nil))
	default:
		return nil, fmt.Errorf("lake.catalog %q is not rest, glue, sql or hadoop", cfg.Catalog)
	}
	if err != nil {
		return nil, fmt.Errorf("lake: open the %s catalog: %s (check lake.catalog, lake.uri and lake.warehouse)", cfg.Catalog, scrub(err, cfg))
	}
	return &Lake{cat: cat, cfg: cfg, namespace: cfg.Namespace, kind: cfg.Catalog}, nil
}

// fileProps are the properties that open a table's files: lake.properties (s3.region,
// s3.endpoint, …) under what the catalog vends for the table.
func fileProps(cfg *config.Lake, vended map[string]string) map[string]string {
	props := map[string]string{}
	for k, v := range cfg.Properties {
		props[k] = v
	}
	if cfg.Warehouse != "" && cfg.Catalog != "rest" {
		props["warehouse"] = cfg.Warehouse
	}
	for k, v := range vended {
		props[k] = v
	}
	if cfg.Region != "" && props["s3.region"] == "" && props["client.region"] == "" {
		// lake.region (Glue's) is where the tables' buckets are too, unless told otherwise: an S3
		// client defaulting to us-east-1 gets a redirect it does not follow for a bucket elsewhere.
		props["client.region"] = cfg.Region
	}
	return props
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
func (l *Lake) Close() error { return l.cat.close() }

// Config is the configuration the lake was opened with (writers in tests open their own catalog
// from it).
func (l *Lake) Config() *config.Lake { return l.cfg }

// Identifier turns an asset into a table identifier: tableflow:<topic> is the topic's table in the
// configured namespace, named as Tableflow names it (see TableflowName; Load also tries the topic's
// own name); iceberg:<namespace>.<table> names it in full.
func (l *Lake) Identifier(asset string) ([]string, error) {
	switch {
	case strings.HasPrefix(asset, "tableflow:"):
		topic := strings.TrimPrefix(asset, "tableflow:")
		if topic == "" {
			return nil, fmt.Errorf("asset %q names no topic", asset)
		}
		if l.namespace == "" {
			return nil, fmt.Errorf("asset %s: set lake.namespace (Tableflow's namespace is the Kafka cluster id) or confluent_cloud.kafka_cluster_id", asset)
		}
		return []string{l.namespace, TableflowName(topic)}, nil
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
		return parts, nil
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
func (l *Lake) Load(ctx context.Context, asset string) (*Table, error) {
	id, err := l.Identifier(asset)
	if err != nil {
		return nil, err
	}
	t, err := l.load(ctx, id)
	if topic, ok := strings.CutPrefix(asset, "tableflow:"); ok && errors.Is(err, errNoSuchTable) && topic != id[1] {
		// Another writer may keep the topic's own name.
		if t2, err2 := l.load(ctx, []string{l.namespace, topic}); err2 == nil {
			return t2, nil
		}
	}
	if err != nil {
		if errors.Is(err, errNoSuchTable) {
			return nil, fmt.Errorf("lake: no table %s in the %s catalog (for tableflow:, check lake.namespace)", strings.Join(id, "."), l.kind)
		}
		return nil, fmt.Errorf("lake: load %s: %s", strings.Join(id, "."), scrub(err, l.cfg))
	}
	return t, nil
}

func (l *Lake) load(ctx context.Context, id []string) (*Table, error) {
	loc, meta, vended, err := l.cat.locate(ctx, id)
	if err != nil {
		return nil, err
	}
	props := fileProps(l.cfg, vended)
	if meta == nil {
		if loc == "" {
			return nil, fmt.Errorf("the catalog gives no metadata location")
		}
		fs, err := loadFS(ctx, props, loc)
		if err != nil {
			return nil, fmt.Errorf("open the file IO for %s: %w", loc, err)
		}
		if meta, err = readMetadata(fs, loc); err != nil {
			return nil, err
		}
	}
	return &Table{id: id, metadataLoc: loc, meta: meta, ioProps: props}, nil
}

// Tables lists the tables of a namespace (the configured one when empty).
func (l *Lake) Tables(ctx context.Context, namespace string) ([][]string, error) {
	if namespace == "" {
		namespace = l.namespace
	}
	if namespace == "" {
		return nil, fmt.Errorf("lake: no namespace to list: set lake.namespace")
	}
	out, err := l.cat.listTables(ctx, strings.Split(namespace, "."))
	if err != nil {
		return nil, fmt.Errorf("lake: list tables of %s: %s", namespace, scrub(err, l.cfg))
	}
	return out, nil
}

// Ping lists the top-level namespaces: read-only, and proof the catalog answers as one.
func (l *Lake) Ping(ctx context.Context) error {
	if _, err := l.cat.listNamespaces(ctx); err != nil {
		return fmt.Errorf("lake: list namespaces: %s", scrub(err, l.cfg))
	}
	return nil
}
