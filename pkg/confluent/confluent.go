// Package confluent reads Confluent Cloud's REST APIs: Flink SQL statements (the regional Flink
// gateway, sql/v1) and Tableflow topics (api.confluent.cloud, tableflow/v1), with API-key basic
// auth, page_token paging, and the retries and error messages of pkg/httpapi. Read-only: stopping
// a statement or changing Tableflow is an owner's action.
package confluent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/connect"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// DefaultTimeout bounds each request when confluent_cloud.timeout is unset.
const DefaultTimeout = 15 * time.Second

// MaxPages bounds one listing: at page_size 100 that is 10,000 items.
const MaxPages = 100

// Client talks to one Confluent Cloud organization and environment.
type Client struct {
	cfg       *config.ConfluentCloud
	flink     *httpapi.Client // nil when flink_url is unset
	tableflow *httpapi.Client
}

// New builds a client; it does not connect.
func New(c *config.ConfluentCloud) (*Client, error) {
	if c == nil {
		return nil, errors.New("confluent cloud is not configured: add a confluent_cloud section (api_key, api_secret, environment_id; flink_url and organization_id for Flink; kafka_cluster_id for Tableflow)")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cl := &Client{cfg: c}
	if c.FlinkURL != "" {
		key, secret := c.FlinkAPIKey, c.FlinkAPISecret
		if key == "" && secret == "" { // the documented default: the Cloud API key
			key, secret = c.APIKey, c.APISecret
		}
		f, err := httpapi.New("confluent flink", c.FlinkURL, "confluent_cloud", httpapi.Basic(key, secret), timeout)
		if err != nil {
			return nil, err
		}
		f.URLKey = "confluent_cloud.flink_url"
		cl.flink = f
	}
	base := c.APIURL
	if base == "" {
		base = "https://api.confluent.cloud"
	}
	t, err := httpapi.New("confluent tableflow", base, "confluent_cloud", httpapi.Basic(c.APIKey, c.APISecret), timeout)
	if err != nil {
		return nil, err
	}
	t.URLKey = "confluent_cloud.api_url"
	cl.tableflow = t
	return cl, nil
}

// listMeta is the paging block of Confluent list answers: `next` is the URL of the next page,
// carrying page_token.
type listMeta struct {
	Next      string `json:"next"`
	TotalSize int    `json:"total_size"`
}

// nextToken extracts page_token from a metadata.next URL ("" when there is no next page).
func nextToken(next string) (string, error) {
	if next == "" {
		return "", nil
	}
	u, err := url.Parse(next)
	if err != nil {
		return "", fmt.Errorf("metadata.next %q is not a URL: %w", next, err)
	}
	return u.Query().Get("page_token"), nil
}

// Statement is a Flink SQL statement as sql/v1 returns it (docs/reference/backends.md, Flink statements).
type Statement struct {
	Name           string            `json:"name"`
	OrganizationID string            `json:"organization_id,omitempty"`
	EnvironmentID  string            `json:"environment_id,omitempty"`
	CreatedAt      *time.Time        `json:"created_at,omitempty"`
	UpdatedAt      *time.Time        `json:"updated_at,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	SQL            string            `json:"sql"`
	Properties     map[string]string `json:"properties,omitempty"`
	ComputePoolID  string            `json:"compute_pool_id,omitempty"`
	Principal      string            `json:"principal,omitempty"`
	Stopped        bool              `json:"stopped"`
	Phase          string            `json:"phase" jsonschema:"PENDING, RUNNING, COMPLETED, DELETING, FAILING, FAILED, STOPPING, STOPPED or DEGRADED"`
	Detail         string            `json:"detail,omitempty"`
	SQLKind        string            `json:"sql_kind,omitempty"`
	IsBounded      *bool             `json:"is_bounded,omitempty"`
	AppendOnly     *bool             `json:"is_append_only,omitempty"`
	// LatestOffsets maps a source topic to "partition:0,offset:23;partition:1,offset:65".
	LatestOffsets          map[string]string `json:"latest_offsets,omitempty"`
	LatestOffsetsTimestamp *time.Time        `json:"latest_offsets_timestamp,omitempty"`
	EndTime                *time.Time        `json:"end_time,omitempty"`
	Warnings               []string          `json:"warnings,omitempty"`
	// SQLWithheld says why SQL is empty: CREATE/ALTER CONNECTION and MODEL statements carry
	// provider credentials in their options.
	SQLWithheld string `json:"sql_withheld,omitempty"`
}

type wireStatement struct {
	Name           string `json:"name"`
	OrganizationID string `json:"organization_id"`
	EnvironmentID  string `json:"environment_id"`
	Metadata       struct {
		CreatedAt *time.Time        `json:"created_at"`
		UpdatedAt *time.Time        `json:"updated_at"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Statement     string            `json:"statement"`
		Properties    map[string]string `json:"properties"`
		ComputePoolID string            `json:"compute_pool_id"`
		Principal     string            `json:"principal"`
		Stopped       bool              `json:"stopped"`
	} `json:"spec"`
	Status struct {
		Phase    string `json:"phase"`
		Detail   string `json:"detail"`
		Warnings []struct {
			Message string `json:"message"`
		} `json:"warnings"`
		Traits struct {
			SQLKind      string `json:"sql_kind"`
			IsBounded    *bool  `json:"is_bounded"`
			IsAppendOnly *bool  `json:"is_append_only"`
		} `json:"traits"`
		LatestOffsets          map[string]string `json:"latest_offsets"`
		LatestOffsetsTimestamp *time.Time        `json:"latest_offsets_timestamp"`
		EndTime                *time.Time        `json:"end_time"`
	} `json:"status"`
}

// ParseStatement decodes one sql/v1 Statement object as the Confluent Cloud API serves it (the
// shape GetStatement reads), with the same credential masking.
func ParseStatement(raw []byte) (Statement, error) {
	var w wireStatement
	if err := json.Unmarshal(raw, &w); err != nil {
		return Statement{}, fmt.Errorf("flink statement: %w", err)
	}
	return w.statement(), nil
}

func (w wireStatement) statement() Statement {
	s := Statement{Name: w.Name, OrganizationID: w.OrganizationID, EnvironmentID: w.EnvironmentID,
		CreatedAt: w.Metadata.CreatedAt, UpdatedAt: w.Metadata.UpdatedAt, Labels: w.Metadata.Labels,
		SQL: w.Spec.Statement, Properties: w.Spec.Properties, ComputePoolID: w.Spec.ComputePoolID, Principal: w.Spec.Principal,
		Stopped: w.Spec.Stopped, Phase: w.Status.Phase, Detail: w.Status.Detail, SQLKind: w.Status.Traits.SQLKind,
		IsBounded: w.Status.Traits.IsBounded, AppendOnly: w.Status.Traits.IsAppendOnly, LatestOffsets: w.Status.LatestOffsets,
		LatestOffsetsTimestamp: w.Status.LatestOffsetsTimestamp, EndTime: w.Status.EndTime}
	for _, wn := range w.Status.Warnings {
		if wn.Message != "" {
			s.Warnings = append(s.Warnings, wn.Message)
		}
	}
	s.Properties = maskProperties(s.Properties)
	if kind := credentialStatement(s.SQL, s.SQLKind); kind != "" {
		s.SQL = ""
		s.SQLWithheld = "a " + kind + " statement carries credentials in its options: its SQL text is withheld; the Confluent Cloud console shows it to the owner"
	}
	return s
}

// maskProperties hides sql.secrets.* values and secret-named properties (statement properties
// can carry credentials that CREATE MODEL / CONNECTION statements reference).
func maskProperties(props map[string]string) map[string]string {
	if props == nil {
		return nil
	}
	out := make(map[string]string, len(props))
	for k, v := range props {
		if v != "" && (strings.HasPrefix(strings.ToLower(k), "sql.secrets.") || connect.IsSecretKey(k)) {
			v = "[redacted]"
		}
		out[k] = v
	}
	return out
}

// credentialStatement names the statement kind ("CREATE MODEL", "ALTER CONNECTION", …) when sql
// creates or alters a connection or model, whose WITH/SET options hold API keys and secrets;
// "" otherwise. It reads only the leading keywords (comments and whitespace skipped) and the
// API's sql_kind trait. pkg/sqlparse's lexer is unexported, so the leading words are read here.
func credentialStatement(sql, sqlKind string) string {
	k := strings.ToUpper(sqlKind)
	for _, obj := range []string{"CONNECTION", "MODEL"} {
		if strings.Contains(k, obj) {
			return strings.ReplaceAll(k, "_", " ")
		}
	}
	words := leadingWords(sql, 6)
	if len(words) < 2 || words[0] != "CREATE" && words[0] != "ALTER" {
		return ""
	}
	for _, w := range words[1:] {
		switch w {
		case "OR", "REPLACE", "TEMPORARY", "TEMP", "SYSTEM":
			continue
		case "CONNECTION", "MODEL":
			return words[0] + " " + w
		}
		return ""
	}
	return ""
}

// leadingWords returns up to n leading bare words of sql, upper-cased, skipping whitespace and
// -- / /* */ comments; it stops at the first character that is neither.
func leadingWords(sql string, n int) []string {
	var words []string
	i := 0
	for i < len(sql) && len(words) < n {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return words
			}
			i += end + 4
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			start := i
			for i < len(sql) && (sql[i] == '_' || sql[i] >= 'a' && sql[i] <= 'z' || sql[i] >= 'A' && sql[i] <= 'Z' || sql[i] >= '0' && sql[i] <= '9') {
				i++
			}
			words = append(words, strings.ToUpper(sql[start:i]))
		default:
			return words
		}
	}
	return words
}

// StatementFilter narrows a statement listing.
type StatementFilter struct {
	// ComputePoolID limits to one pool (default confluent_cloud.compute_pool_id).
	ComputePoolID string
	// Phase keeps statements in this phase (checked here; the API has no phase filter).
	Phase string
	// LabelSelector is passed through, e.g. "team=billing".
	LabelSelector string
	// Limit stops after this many matching statements (0 = all, bounded by MaxPages).
	Limit int
}

func (c *Client) flinkClient() (*httpapi.Client, error) {
	if c.flink == nil {
		return nil, errors.New("confluent flink is not configured: set confluent_cloud.flink_url (e.g. https://flink.us-east-1.aws.confluent.cloud), organization_id and environment_id")
	}
	if c.cfg.OrganizationID == "" || c.cfg.EnvironmentID == "" {
		return nil, errors.New("confluent flink needs confluent_cloud.organization_id and confluent_cloud.environment_id")
	}
	return c.flink, nil
}

func (c *Client) statementsPath() string {
	return "/sql/v1/organizations/" + url.PathEscape(c.cfg.OrganizationID) + "/environments/" + url.PathEscape(c.cfg.EnvironmentID) + "/statements"
}

// ListStatements follows page_token through every page (at most MaxPages).
func (c *Client) ListStatements(ctx context.Context, f StatementFilter) ([]Statement, error) {
	api, err := c.flinkClient()
	if err != nil {
		return nil, err
	}
	pool := f.ComputePoolID
	if pool == "" {
		pool = c.cfg.ComputePoolID
	}
	out := []Statement{}
	token := ""
	for page := 0; ; page++ {
		if page == MaxPages {
			return out, fmt.Errorf("confluent flink: more than %d pages of statements; narrow with compute_pool_id or a label selector", MaxPages)
		}
		q := url.Values{"page_size": {"100"}}
		if pool != "" {
			q.Set("spec.compute_pool_id", pool)
		}
		if f.LabelSelector != "" {
			q.Set("label_selector", f.LabelSelector)
		}
		if token != "" {
			q.Set("page_token", token)
		}
		var resp struct {
			Metadata listMeta        `json:"metadata"`
			Data     []wireStatement `json:"data"`
		}
		if err := api.Do(ctx, "GET", c.statementsPath(), q, nil, &resp); err != nil {
			return nil, c.explain(err, "statements")
		}
		for _, w := range resp.Data {
			s := w.statement()
			if f.Phase != "" && !strings.EqualFold(s.Phase, f.Phase) {
				continue
			}
			out = append(out, s)
			if f.Limit > 0 && len(out) >= f.Limit {
				return out, nil
			}
		}
		next, err := nextToken(resp.Metadata.Next)
		if err != nil {
			return nil, fmt.Errorf("confluent flink: %w", err)
		}
		if next == "" || next == token {
			return out, nil
		}
		token = next
	}
}

// GetStatement reads one statement by name.
func (c *Client) GetStatement(ctx context.Context, name string) (Statement, error) {
	api, err := c.flinkClient()
	if err != nil {
		return Statement{}, err
	}
	if strings.TrimSpace(name) == "" {
		return Statement{}, errors.New("statement name is empty: list_flink_statements shows the names")
	}
	var w wireStatement
	if err := api.Do(ctx, "GET", c.statementsPath()+"/"+url.PathEscape(name), nil, nil, &w); err != nil {
		if httpapi.IsNotFound(err) {
			return Statement{}, fmt.Errorf("flink statement %q not found in environment %s (list_flink_statements shows the names): %w", name, c.cfg.EnvironmentID, err)
		}
		return Statement{}, c.explain(err, "statement "+name)
	}
	return w.statement(), nil
}

// explain adds what a 401/403/404 on a listing means here.
func (c *Client) explain(err error, what string) error {
	var he *httpapi.Error
	if !errors.As(err, &he) {
		return err
	}
	switch he.StatusCode {
	case 401:
		return fmt.Errorf("%w; the API key must be a Cloud (or Flink region) API key for this organization", err)
	case 403:
		return fmt.Errorf("%w; grant the key's principal read access to %s in environment %s", err, what, c.cfg.EnvironmentID)
	case 404:
		return fmt.Errorf("%w; check confluent_cloud.organization_id, environment_id and kafka_cluster_id", err)
	}
	return err
}

// CatalogSync is one catalog integration's sync state for a Tableflow topic.
type CatalogSync struct {
	CatalogIntegrationID string `json:"catalog_integration_id"`
	CatalogType          string `json:"catalog_type"`
	SyncStatus           string `json:"sync_status" jsonschema:"PENDING, SYNCED, FAILED or DISCONNECTED"`
	ErrorMessage         string `json:"error_message,omitempty"`
}

// FailingFormat is a table format Tableflow cannot currently write.
type FailingFormat struct {
	Format       string `json:"format"`
	ErrorMessage string `json:"error_message"`
}

// TableflowTopic is a Tableflow-enabled topic (docs/reference/backends.md, Tableflow topics).
type TableflowTopic struct {
	// Topic is spec.display_name: the Kafka topic name.
	Topic          string          `json:"topic"`
	EnvironmentID  string          `json:"environment_id,omitempty"`
	KafkaClusterID string          `json:"kafka_cluster_id,omitempty"`
	TableFormats   []string        `json:"table_formats"`
	Suspended      bool            `json:"suspended"`
	StorageKind    string          `json:"storage_kind,omitempty" jsonschema:"Managed, ByobAws, AzureDataLakeStorageGen2 or GoogleCloudStorage"`
	TablePath      string          `json:"table_path,omitempty"`
	BucketName     string          `json:"bucket_name,omitempty"`
	RetentionMS    string          `json:"retention_ms,omitempty"`
	Phase          string          `json:"phase" jsonschema:"PENDING, RUNNING or FAILED"`
	ErrorMessage   string          `json:"error_message,omitempty"`
	CatalogSync    []CatalogSync   `json:"catalog_sync"`
	FailingFormats []FailingFormat `json:"failing_table_formats,omitempty"`
	CreatedAt      *time.Time      `json:"created_at,omitempty"`
	UpdatedAt      *time.Time      `json:"updated_at,omitempty"`
	// Healthy is phase RUNNING, not suspended, no failing format and no failed catalog sync.
	Healthy bool `json:"healthy"`
}

type wireTableflow struct {
	Metadata struct {
		CreatedAt *time.Time `json:"created_at"`
		UpdatedAt *time.Time `json:"updated_at"`
	} `json:"metadata"`
	Spec struct {
		DisplayName  string   `json:"display_name"`
		Suspended    bool     `json:"suspended"`
		TableFormats []string `json:"table_formats"`
		Environment  struct {
			ID string `json:"id"`
		} `json:"environment"`
		KafkaCluster struct {
			ID string `json:"id"`
		} `json:"kafka_cluster"`
		Storage struct {
			Kind       string `json:"kind"`
			TablePath  string `json:"table_path"`
			BucketName string `json:"bucket_name"`
		} `json:"storage"`
		Config struct {
			RetentionMS string `json:"retention_ms"`
		} `json:"config"`
	} `json:"spec"`
	Status struct {
		Phase               string          `json:"phase"`
		ErrorMessage        string          `json:"error_message"`
		CatalogSyncStatuses []CatalogSync   `json:"catalog_sync_statuses"`
		FailingTableFormats []FailingFormat `json:"failing_table_formats"`
	} `json:"status"`
}

func (w wireTableflow) topic() TableflowTopic {
	t := TableflowTopic{Topic: w.Spec.DisplayName, EnvironmentID: w.Spec.Environment.ID, KafkaClusterID: w.Spec.KafkaCluster.ID,
		TableFormats: w.Spec.TableFormats, Suspended: w.Spec.Suspended, StorageKind: w.Spec.Storage.Kind, TablePath: w.Spec.Storage.TablePath,
		BucketName: w.Spec.Storage.BucketName, RetentionMS: w.Spec.Config.RetentionMS, Phase: w.Status.Phase, ErrorMessage: w.Status.ErrorMessage,
		CatalogSync: w.Status.CatalogSyncStatuses, FailingFormats: w.Status.FailingTableFormats, CreatedAt: w.Metadata.CreatedAt, UpdatedAt: w.Metadata.UpdatedAt}
	if t.TableFormats == nil {
		t.TableFormats = []string{} // as the API answered: no format is reported, none is assumed
	}
	if t.CatalogSync == nil {
		t.CatalogSync = []CatalogSync{}
	}
	t.Healthy = t.Phase == "RUNNING" && !t.Suspended && len(t.FailingFormats) == 0
	for _, s := range t.CatalogSync {
		if s.SyncStatus == "FAILED" || s.SyncStatus == "DISCONNECTED" {
			t.Healthy = false
		}
	}
	return t
}

func (c *Client) tableflowScope() (url.Values, error) {
	if c.cfg.EnvironmentID == "" || c.cfg.KafkaClusterID == "" {
		return nil, errors.New("confluent tableflow needs confluent_cloud.environment_id and confluent_cloud.kafka_cluster_id (Tableflow topics are listed per cluster)")
	}
	return url.Values{"environment": {c.cfg.EnvironmentID}, "spec.kafka_cluster": {c.cfg.KafkaClusterID}}, nil
}

// ListTableflowTopics follows page_token through every page (at most MaxPages).
func (c *Client) ListTableflowTopics(ctx context.Context) ([]TableflowTopic, error) {
	scope, err := c.tableflowScope()
	if err != nil {
		return nil, err
	}
	out := []TableflowTopic{}
	token := ""
	for page := 0; ; page++ {
		if page == MaxPages {
			return out, fmt.Errorf("confluent tableflow: more than %d pages of topics", MaxPages)
		}
		q := url.Values{"page_size": {"100"}}
		for k, v := range scope {
			q[k] = v
		}
		if token != "" {
			q.Set("page_token", token)
		}
		var resp struct {
			Metadata listMeta        `json:"metadata"`
			Data     []wireTableflow `json:"data"`
		}
		if err := c.tableflow.Do(ctx, "GET", "/tableflow/v1/tableflow-topics", q, nil, &resp); err != nil {
			return nil, c.explain(err, "Tableflow topics")
		}
		for _, w := range resp.Data {
			out = append(out, w.topic())
		}
		next, err := nextToken(resp.Metadata.Next)
		if err != nil {
			return nil, fmt.Errorf("confluent tableflow: %w", err)
		}
		if next == "" || next == token {
			return out, nil
		}
		token = next
	}
}

// GetTableflowTopic reads one Tableflow topic by its Kafka topic name.
func (c *Client) GetTableflowTopic(ctx context.Context, topic string) (TableflowTopic, error) {
	scope, err := c.tableflowScope()
	if err != nil {
		return TableflowTopic{}, err
	}
	var w wireTableflow
	if err := c.tableflow.Do(ctx, "GET", "/tableflow/v1/tableflow-topics/"+url.PathEscape(topic), scope, nil, &w); err != nil {
		if httpapi.IsNotFound(err) {
			return TableflowTopic{}, fmt.Errorf("topic %q has no Tableflow in cluster %s (list_tableflow_topics shows the enabled topics): %w", topic, c.cfg.KafkaClusterID, err)
		}
		return TableflowTopic{}, c.explain(err, "Tableflow topic "+topic)
	}
	return w.topic(), nil
}
