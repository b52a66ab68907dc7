package config

import (
	"strings"
	"time"
)

// Lake is the Iceberg catalog Tableflow (or any writer) lands tables in, read through the Apache
// Iceberg Go library for load history, schema history and column metrics without a warehouse.
type Lake struct {
	// Catalog is rest (Polaris, Snowflake Open Catalog, Unity, Tableflow's own), glue, sql (a
	// catalog database, e.g. SQLite) or hadoop (a warehouse path, local or object store).
	Catalog string `yaml:"catalog"`
	// URI is the REST catalog base, or the sql catalog's database (a SQLite file path).
	URI string `yaml:"uri"`
	// Warehouse is the REST catalog's warehouse name, or the root path of a hadoop or sql catalog
	// (file:///data/lake, s3://bucket/lake).
	Warehouse string `yaml:"warehouse"`
	// ClientID and ClientSecret are OAuth client credentials for a REST catalog; Token is a
	// bearer token instead. OAuth2ServerURI overrides the catalog's own token endpoint.
	ClientID        string `yaml:"client_id"`
	ClientSecret    string `yaml:"client_secret"`
	Token           string `yaml:"token"`
	OAuth2ServerURI string `yaml:"oauth2_server_uri"`
	Scope           string `yaml:"scope"`
	// Region and GlueCatalogID address an AWS Glue catalog (credentials from the AWS default chain).
	Region        string `yaml:"region"`
	GlueCatalogID string `yaml:"glue_catalog_id"`
	// Namespace holds the Tableflow tables: tableflow:<topic> is <namespace>.<topic>. Tableflow
	// names it after the Kafka cluster (default confluent_cloud.kafka_cluster_id).
	Namespace string `yaml:"namespace"`
	// Properties are passed to the catalog and its file IO as they are (s3.region, s3.endpoint, …).
	Properties map[string]string `yaml:"properties"`
	Timeout    time.Duration     `yaml:"timeout"`
}

func defaultLake(l *Lake, cc *ConfluentCloud, env LookupEnv) {
	if l == nil {
		return
	}
	l.Timeout = orDefault(l.Timeout)
	if l.Namespace == "" && cc != nil {
		l.Namespace = cc.KafkaClusterID
	}
	if l.Catalog == "sql" {
		l.URI = expandHome(l.URI, env)
	}
	if !strings.Contains(l.Warehouse, "://") && l.Catalog != "rest" {
		l.Warehouse = expandHome(l.Warehouse, env)
	}
}

func (c *Config) validateLake(add func(string, ...any)) {
	l := c.Lake
	if l == nil {
		return
	}
	switch l.Catalog {
	case "rest":
		checkURL(add, "lake.uri", l.URI, true)
		if (l.ClientID == "") != (l.ClientSecret == "") {
			add("lake: set both client_id and client_secret (OAuth client credentials) or neither")
		}
		if l.Token != "" && l.ClientID != "" {
			add("lake: set token or client_id/client_secret, not both")
		}
		checkURL(add, "lake.oauth2_server_uri", l.OAuth2ServerURI, false)
	case "glue":
		if l.Region == "" {
			add("lake.region: required for the glue catalog, e.g. us-east-1")
		}
	case "sql":
		if l.URI == "" {
			add("lake.uri: required for the sql catalog (the SQLite file holding the catalog)")
		}
		if l.Warehouse == "" {
			add("lake.warehouse: required for the sql catalog (where table files live, e.g. file:///data/lake)")
		}
	case "hadoop":
		if l.Warehouse == "" {
			add("lake.warehouse: required for the hadoop catalog (the warehouse root, e.g. /data/lake or s3://bucket/lake)")
		}
	default:
		add("lake.catalog: %q; use rest, glue, sql or hadoop", l.Catalog)
	}
	if l.Timeout < 0 {
		add("lake.timeout: must not be negative")
	}
}

func (c *Config) lakeSecrets() []secretValue {
	l := c.Lake
	if l == nil {
		return nil
	}
	var out []secretValue
	for key, v := range map[string]string{"lake.client_secret": l.ClientSecret, "lake.token": l.Token} {
		if len(v) >= 4 {
			out = append(out, secretValue{key, v})
		}
	}
	for k, v := range l.Properties {
		lk := strings.ToLower(k)
		if (strings.Contains(lk, "secret") || strings.Contains(lk, "token") || strings.Contains(lk, "password")) && len(v) >= 4 {
			out = append(out, secretValue{"lake.properties." + k, v})
		}
	}
	return out
}
