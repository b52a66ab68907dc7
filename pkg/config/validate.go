package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// Validate checks every section and returns all problems at once, each naming its key and the fix.
func (c *Config) Validate() error {
	var p ProblemList
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }

	if c.Store.Path == "" {
		add("store.path: empty; set it to a writable file path, e.g. ~/.dataworkers/dw.db")
	}
	if u := c.Store.URL; u != "" {
		if pu, err := url.Parse(u); err != nil || pu.Scheme != "postgres" && pu.Scheme != "postgresql" {
			// Never quote the value: it may hold a password.
			add("store.url: want postgres://user:password@host:5432/database (or unset it, and DW_STORE_URL, for the local SQLite file)")
		}
	}
	if c.Store.BusyTimeout < 0 {
		add("store.busy_timeout: must not be negative")
	}
	if k := c.Kafka; k != nil {
		if len(k.BootstrapServers) == 0 {
			add(`kafka.bootstrap_servers: required when the kafka section is present, e.g. ["pkc-xxxx.us-east-1.aws.confluent.cloud:9092"]`)
		}
		for i, s := range k.BootstrapServers {
			if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
				add("kafka.bootstrap_servers[%d]: %q is not host:port", i, s)
			}
		}
		if s := k.SASL; s != nil {
			switch strings.ToUpper(s.Mechanism) {
			case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
			default:
				add("kafka.sasl.mechanism: %q is not supported; use PLAIN (Confluent Cloud), SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)
			}
			if s.Username == "" || s.Password == "" {
				add("kafka.sasl: username and password are required (Confluent Cloud: the cluster API key and secret, e.g. ${KAFKA_API_SECRET})")
			}
		}
		if k.Timeout < 0 {
			add("kafka.timeout: must not be negative")
		}
		if k.MaxRecordBytes < 0 || k.MaxRecordBytes > 64<<20 {
			add("kafka.max_record_bytes: must be between 1 and 67108864 (64 MiB)")
		}
		if k.MaxSampleBytes < 0 || k.MaxSampleBytes > 256<<20 {
			add("kafka.max_sample_bytes: must be between 1 and 268435456 (256 MiB)")
		}
	}
	if r := c.SchemaRegistry; r != nil {
		checkURL(add, "schema_registry.url", r.URL, true)
		if (r.Username == "") != (r.Password == "") {
			add("schema_registry: set both username and password (the Schema Registry API key and secret) or neither")
		}
	}
	if k := c.Connect; k != nil {
		checkURL(add, "connect.url", k.URL, true)
		if (k.Username == "") != (k.Password == "") {
			add("connect: set both username and password or neither")
		}
	}
	if cc := c.ConfluentCloud; cc != nil {
		checkURL(add, "confluent_cloud.api_url", cc.APIURL, true)
		checkURL(add, "confluent_cloud.flink_url", cc.FlinkURL, false)
		if cc.APIKey == "" || cc.APISecret == "" {
			add("confluent_cloud: api_key and api_secret are required (a Cloud API key, e.g. ${CONFLUENT_CLOUD_API_SECRET})")
		}
		if cc.FlinkURL != "" && (cc.OrganizationID == "" || cc.EnvironmentID == "") {
			add("confluent_cloud: organization_id and environment_id are required with flink_url")
		}
	}
	if w := c.Warehouse; w != nil {
		switch w.Engine {
		case "sqlite", "postgres", "snowflake":
		default:
			add("warehouse.engine: %q is not supported; use sqlite, postgres or snowflake", w.Engine)
		}
		if w.DSN == "" {
			add("warehouse.dsn: required (a file path for sqlite, postgres://user@host:5432/db, or a gosnowflake DSN)")
		}
		if w.StatementTimeout < 0 {
			add("warehouse.statement_timeout: must not be negative")
		}
		if w.MaxSampleRows < 0 || w.MaxSampleRows > 1000 {
			add("warehouse.max_sample_rows: must be between 1 and 1000")
		}
		if w.MaxValueBytes < 0 || w.MaxValueBytes > 16<<20 {
			add("warehouse.max_value_bytes: must be between 1 and 16777216 (16 MiB)")
		}
		if w.MaxResultBytes < 0 || w.MaxResultBytes > 64<<20 {
			add("warehouse.max_result_bytes: must be between 1 and 67108864 (64 MiB)")
		}
	}
	if d := c.DBT; d != nil && d.Cloud != nil {
		checkURL(add, "dbt.cloud.url", d.Cloud.URL, true)
		if d.Cloud.AccountID <= 0 {
			add("dbt.cloud.account_id: required (the number in https://cloud.getdbt.com/deploy/<account_id>/…)")
		}
		if d.Cloud.Token == "" {
			add("dbt.cloud.token: required (a service token, e.g. ${DBT_CLOUD_TOKEN})")
		}
	}
	if a := c.Airflow; a != nil {
		checkURL(add, "airflow.url", a.URL, true)
		if a.APIVersion != "v1" && a.APIVersion != "v2" {
			add("airflow.api_version: %q; use v1 (Airflow 2) or v2 (Airflow 3)", a.APIVersion)
		}
		if a.Token == "" && (a.Username == "" || a.Password == "") {
			add("airflow: set token, or username and password")
		}
	}
	if s := c.Slack; s != nil {
		checkURL(add, "slack.webhook_url", s.WebhookURL, true)
	}
	seen := map[string]bool{}
	for i, d := range c.Domains {
		key := fmt.Sprintf("domains[%d]", i)
		if d.Name == "" {
			add("%s.name: required", key)
		} else if seen[d.Name] {
			add("%s.name: %q is used twice; domain names must be unique", key, d.Name)
		}
		seen[d.Name] = true
		if len(d.Assets) == 0 {
			add("%s.assets: list at least one asset URN pattern, e.g. \"warehouse:*USAGE*\"", key)
		}
		if !autonomyRE().MatchString(d.Autonomy) {
			add("%s.autonomy: %q; use one of L0 (manual), L1 (observe), L2 (propose), L3 (act reversibly), L4 (gate)", key, d.Autonomy)
		}
		for j, a := range d.Approvers {
			akey := fmt.Sprintf("%s.approvers[%d]", key, j)
			if a.Name == "" {
				add("%s.name: required", akey)
			}
			if b, err := hex.DecodeString(a.TokenSHA256); a.TokenSHA256 != "" && (err != nil || len(b) != 32) {
				add("%s.token_sha256: must be 64 hex characters (printf %%s \"$TOKEN\" | sha256sum)", akey)
			}
		}
	}
	c.validateMetrics(add)
	c.validateLake(add)
	c.validateMonitors(add)
	c.validateActionClasses(add)
	c.validateHTTP(add)
	return p.err()
}

var autonomyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^L[0-4]$`) })

func checkURL(add func(string, ...any), key, raw string, required bool) {
	if raw == "" {
		if required {
			add("%s: required", key)
		}
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("%s: %q is not an http(s) URL", key, redactURL(raw))
		return
	}
	if u.User != nil {
		add("%s: put credentials in username/password, not in the URL", key)
	}
}

// redactURL drops user info so a mistyped URL with a password is never echoed.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}
