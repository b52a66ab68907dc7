package demo

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
)

// The people of the story.
const (
	Approver      = "maya.okafor"
	ApproverEmail = "maya.okafor@example.com"
	ApproverRole  = "streaming platform owner"
	BillingOwner  = "billing-data@example.com"
)

// newToken makes the approver's secret; only its SHA-256 goes into the config.
func newToken() (token, sum string, err error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(b)
	h := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(h[:]), nil
}

func q(s string) string { return strconv.Quote(s) }

// standInCatalog is the demo's own catalog file. The scenario's dbt manifest was compiled for
// Snowflake, so its source usage.usage_hourly names ANALYTICS.USAGE.USAGE_HOURLY; in the demo the
// SQLite table stands in for it, and this file says so, as a team declares what no API reports.
const standInCatalog = `# Written by ./start-agent.sh demo: the demo's SQLite warehouse stands in for Snowflake.
version: 1
edges:
  - from: "warehouse:sqlite/main.usage_hourly"
    to: "dbt:source.billing.usage.usage_hourly"
    kind: materializes
    transformation: "the demo's SQLite table stands in for ANALYTICS.USAGE.USAGE_HOURLY, which dbt source usage.usage_hourly reads"
`

// writeConfig writes the demo's configuration: every section points at a loopback peer, the
// SQLite warehouse and the scenario's catalog; one domain policy names the approver.
func writeConfig(path string, p *Peers, a *Artifacts, storePath, warehousePath string, lake *config.Lake, tokenSHA string) error {
	standIn := filepath.Join(filepath.Dir(path), "stand-in.catalog.yaml")
	if err := os.WriteFile(standIn, []byte(standInCatalog), 0o600); err != nil {
		return err
	}
	cc := p.Confluent.Config()
	var b strings.Builder
	fmt.Fprintf(&b, `# Data Workers demo configuration, written by ./start-agent.sh demo. Every backend is a stand-in
# listening on 127.0.0.1 for the length of the run; the warehouse is a SQLite file.
store:
  path: %s
  busy_timeout: 15s

kafka:
  bootstrap_servers: [%s]
  client_id: dw-demo
  timeout: 5s

schema_registry:
  url: %s
  timeout: 5s

connect:
  url: %s
  timeout: 5s

confluent_cloud:
  api_url: %s
  api_key: %s
  api_secret: %s
  flink_url: %s
  flink_api_key: %s
  flink_api_secret: %s
  organization_id: %s
  environment_id: %s
  kafka_cluster_id: %s
  timeout: 5s

warehouse:
  engine: sqlite
  dsn: %s
  statement_timeout: 30s
  max_sample_rows: 5

dbt:
  manifest_path: %s
  cloud:
    url: %s
    account_id: %d
    token: %s
    timeout: 5s

airflow:
  url: %s
  api_version: v2
  username: %s
  password: %s
  timeout: 5s

catalog:
  files: [%s, %s, %s]

# Tableflow's Iceberg tables: a SQL catalog on SQLite over a local warehouse directory.
lake:
  catalog: %s
  uri: %s
  warehouse: %s
  namespace: %s
  timeout: 10s

# One owner approves for the whole billing path; the billing data owner is copied.
domains:
  - name: billing
    assets: ["warehouse:*", "dbt:*", "job:airflow/*", "bi:*", "sink:*"]
    owners: [%s]
    approvers:
      - name: %s
        email: %s
        token_sha256: %s
    autonomy: L2
  - name: streaming
    assets: ["kafka:*", "schema:*", "flink:*", "tableflow:*"]
    owners: [%s]
    approvers:
      - name: %s
        email: %s
        token_sha256: %s
    autonomy: L4
`,
		q(storePath), q(p.Kafka.BootstrapServers[0]), q(p.Registry.URL), q(p.Connect.URL),
		q(cc.APIURL), q(confluenttest.APIKey), q(confluenttest.APISecret), q(cc.FlinkURL), q(confluenttest.FlinkKey), q(confluenttest.FlinkSecret),
		q(confluenttest.Org), q(confluenttest.Env), q(confluenttest.Cluster),
		q(warehousePath), q(a.Manifest), q(p.DBT.URL), DBTAccount, q(dbtToken),
		q(p.Airflow.URL), q(p.Airflow.User), q(p.Airflow.Password),
		q(a.Streaming), q(a.Catalog), q(standIn),
		q(lake.Catalog), q(lake.URI), q(lake.Warehouse), q(lake.Namespace),
		q(BillingOwner), q(Approver), q(ApproverEmail), q(tokenSHA),
		q(BillingOwner), q(Approver), q(ApproverEmail), q(tokenSHA))
	return os.WriteFile(path, []byte(b.String()), 0o600)
}
