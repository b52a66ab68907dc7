// Package config loads the one YAML file every Data Workers agent reads: strict decoding (an unknown
// key is an error naming the key and its line), ${VAR} and ${VAR:-default} expansion in values (never
// in keys, so a secret cannot inject structure), and validation whose messages say how to fix.
package config

import (
	"time"
)

// Config is the whole file. A nil section means "not configured": tools that need it say so and
// name the key instead of inventing data.
type Config struct {
	Store          Store           `yaml:"store"`
	Kafka          *Kafka          `yaml:"kafka"`
	SchemaRegistry *SchemaRegistry `yaml:"schema_registry"`
	Connect        *Connect        `yaml:"connect"`
	ConfluentCloud *ConfluentCloud `yaml:"confluent_cloud"`
	Warehouse      *Warehouse      `yaml:"warehouse"`
	DBT            *DBT            `yaml:"dbt"`
	Airflow        *Airflow        `yaml:"airflow"`
	Slack          *Slack          `yaml:"slack"`
	Metrics        *Metrics        `yaml:"metrics"`
	Lake           *Lake           `yaml:"lake"`
	Catalog        Catalog         `yaml:"catalog"`
	HTTP           *HTTP           `yaml:"http"`
	Domains        []Domain        `yaml:"domains"`
	Monitors       []Monitor       `yaml:"monitors"`
	// ActionClasses overrides, per action class, who executes it and how long an approval request
	// waits before escalating (see policy.go for the classes and their defaults).
	ActionClasses map[string]ActionClass `yaml:"action_classes"`

	// Source is where the configuration came from (a path, or "embedded:configs/local.yaml").
	Source string `yaml:"-"`
}

// Store is the shared database all five agents open: an embedded SQLite file by default, or one
// PostgreSQL database for a team (URL).
type Store struct {
	// Path of the SQLite file; default $DW_HOME/dw.db. With URL set, the receipts key is still kept
	// beside it, on each machine.
	Path string `yaml:"path"`
	// URL of a PostgreSQL store (postgres://user:password@host:5432/db?sslmode=verify-full); the
	// DW_STORE_URL environment variable overrides it. Empty: the SQLite file at Path.
	URL string `yaml:"url"`
	// BusyTimeout is how long a writer waits for another process's lock before failing.
	BusyTimeout time.Duration `yaml:"busy_timeout"`
}

// Kafka is a Kafka cluster reached with franz-go.
type Kafka struct {
	BootstrapServers []string      `yaml:"bootstrap_servers"`
	ClientID         string        `yaml:"client_id"`
	SASL             *SASL         `yaml:"sasl"`
	TLS              *TLS          `yaml:"tls"`
	Timeout          time.Duration `yaml:"timeout"`
	// MaxRecordBytes bounds one record a sample decodes (larger ones are counted, not decoded);
	// MaxSampleBytes bounds the bytes one sample fetches (fetching stops there).
	MaxRecordBytes int `yaml:"max_record_bytes"`
	MaxSampleBytes int `yaml:"max_sample_bytes"`
}

// SASL authentication for Kafka. Confluent Cloud uses PLAIN with an API key and secret.
type SASL struct {
	Mechanism string `yaml:"mechanism"` // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	Username  string `yaml:"username"`
	Password  string `yaml:"password"`
}

// TLS settings shared by Kafka and HTTP clients.
type TLS struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// SchemaRegistry is a Confluent Schema Registry REST endpoint.
type SchemaRegistry struct {
	URL      string        `yaml:"url"`
	Username string        `yaml:"username"` // Confluent Cloud: the Schema Registry API key
	Password string        `yaml:"password"` // Confluent Cloud: the Schema Registry API secret
	Timeout  time.Duration `yaml:"timeout"`
}

// Connect is a Kafka Connect REST endpoint.
type Connect struct {
	URL      string        `yaml:"url"`
	Username string        `yaml:"username"`
	Password string        `yaml:"password"`
	Timeout  time.Duration `yaml:"timeout"`
}

// ConfluentCloud holds the Cloud APIs used for Flink statements and Tableflow.
type ConfluentCloud struct {
	// APIURL is the Confluent Cloud REST base (Tableflow), default https://api.confluent.cloud.
	APIURL    string `yaml:"api_url"`
	APIKey    string `yaml:"api_key"`
	APISecret string `yaml:"api_secret"`
	// FlinkURL is the regional Flink endpoint, e.g. https://flink.us-east-1.aws.confluent.cloud.
	FlinkURL       string        `yaml:"flink_url"`
	FlinkAPIKey    string        `yaml:"flink_api_key"`
	FlinkAPISecret string        `yaml:"flink_api_secret"`
	OrganizationID string        `yaml:"organization_id"`
	EnvironmentID  string        `yaml:"environment_id"`
	KafkaClusterID string        `yaml:"kafka_cluster_id"`
	ComputePoolID  string        `yaml:"compute_pool_id"`
	Timeout        time.Duration `yaml:"timeout"`
}

// Warehouse is the SQL engine the stream lands in.
type Warehouse struct {
	Engine string `yaml:"engine"` // sqlite, postgres or snowflake
	// DSN is the driver's data source name: a file path for sqlite, a postgres:// URL, or a
	// gosnowflake DSN (user:password@account/db/schema?warehouse=WH&role=R).
	DSN              string        `yaml:"dsn"`
	StatementTimeout time.Duration `yaml:"statement_timeout"`
	MaxSampleRows    int           `yaml:"max_sample_rows"`
	// MaxValueBytes bounds one value read (longer ones are cut with a marker); MaxResultBytes
	// bounds one result (rows past it are not read). Defaults fit a model's context.
	MaxValueBytes  int `yaml:"max_value_bytes"`
	MaxResultBytes int `yaml:"max_result_bytes"`
}

// DBT covers the local manifest and dbt Cloud.
type DBT struct {
	ManifestPath string    `yaml:"manifest_path"`
	Cloud        *DBTCloud `yaml:"cloud"`
}

// DBTCloud is the dbt Cloud Administrative API v2.
type DBTCloud struct {
	URL       string        `yaml:"url"` // default https://cloud.getdbt.com
	AccountID int64         `yaml:"account_id"`
	Token     string        `yaml:"token"`
	Timeout   time.Duration `yaml:"timeout"`
}

// Airflow is an Airflow REST API (v1 for Airflow 2, v2 for Airflow 3).
type Airflow struct {
	URL        string        `yaml:"url"`
	APIVersion string        `yaml:"api_version"` // v1 or v2
	Username   string        `yaml:"username"`
	Password   string        `yaml:"password"`
	Token      string        `yaml:"token"`
	Timeout    time.Duration `yaml:"timeout"`
}

// Slack is an incoming webhook for approval notifications.
type Slack struct {
	WebhookURL string `yaml:"webhook_url"`
}

// Catalog lists declarative catalog files (what has no API) and OpenLineage event locations.
type Catalog struct {
	Files       []string `yaml:"files"`
	OpenLineage []string `yaml:"openlineage"`
}

// Domain is a set of assets with named owners and an autonomy level.
type Domain struct {
	Name       string     `yaml:"name"`
	Assets     []string   `yaml:"assets"` // URN patterns, '*' matches any run of characters
	Owners     []string   `yaml:"owners"`
	Approvers  []Approver `yaml:"approvers"`
	Escalation []string   `yaml:"escalation"`
	Autonomy   string     `yaml:"autonomy"` // L0 … L4
}

// Approver is a named person who may decide on proposals. The token is stored only as its SHA-256.
type Approver struct {
	Name        string `yaml:"name"`
	Email       string `yaml:"email"`
	TokenSHA256 string `yaml:"token_sha256"`
}
