// Package connect reads a Kafka Connect cluster through its REST API (apache/kafka
// connect/runtime/.../rest/entities): connectors with their status and config, and the topic and
// table lineage their configs declare. Read-only: restarts and offsets are owner-only actions.
package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// ErrNotConfigured is returned when the connect section is missing.
var ErrNotConfigured = errors.New("kafka connect is not configured: set connect.url (and connect.username/password if the workers need basic auth) for self-managed workers, or confluent_cloud.environment_id and kafka_cluster_id for Confluent Cloud managed connectors")

// DefaultTimeout bounds each request when connect.timeout is unset.
const DefaultTimeout = 10 * time.Second

// Client talks to one Connect cluster: self-managed workers, or Confluent Cloud's managed
// connectors of one Kafka cluster (the Connect v1 API, the same entities under a longer path).
type Client struct {
	api *httpapi.Client
	// prefix is "" for workers, /connect/v1/environments/{env}/clusters/{lkc} for Confluent Cloud.
	prefix string
	cloud  bool
}

// FromConfig picks self-managed Connect when connect.url is set, else Confluent Cloud's managed
// connectors when confluent_cloud names an environment and Kafka cluster.
func FromConfig(cfg *config.Config) (*Client, error) {
	if cfg.Connect != nil {
		return New(cfg.Connect)
	}
	if cc := cfg.ConfluentCloud; cc != nil && cc.EnvironmentID != "" && cc.KafkaClusterID != "" {
		return NewCloud(cc)
	}
	return nil, ErrNotConfigured
}

// NewCloud reads the managed connectors of confluent_cloud.kafka_cluster_id with the Cloud API key.
func NewCloud(cc *config.ConfluentCloud) (*Client, error) {
	if cc == nil || cc.EnvironmentID == "" || cc.KafkaClusterID == "" {
		return nil, ErrNotConfigured
	}
	timeout := cc.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	base := cc.APIURL
	if base == "" {
		base = "https://api.confluent.cloud"
	}
	api, err := httpapi.New("confluent connect", base, "confluent_cloud", httpapi.Basic(cc.APIKey, cc.APISecret), timeout)
	if err != nil {
		return nil, err
	}
	api.URLKey = "confluent_cloud.api_url"
	return &Client{api: api, cloud: true,
		prefix: "/connect/v1/environments/" + url.PathEscape(cc.EnvironmentID) + "/clusters/" + url.PathEscape(cc.KafkaClusterID)}, nil
}

// New builds a client; it does not connect.
func New(c *config.Connect) (*Client, error) {
	if c == nil {
		return nil, ErrNotConfigured
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	api, err := httpapi.New("kafka connect", c.URL, "connect", httpapi.Basic(c.Username, c.Password), timeout)
	if err != nil {
		return nil, err
	}
	return &Client{api: api}, nil
}

// TaskState is one task's state.
type TaskState struct {
	ID       int    `json:"id"`
	State    string `json:"state" jsonschema:"UNASSIGNED, RUNNING, PAUSED, FAILED, RESTARTING or STOPPED"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty" jsonschema:"The failure's stack trace, when FAILED"`
}

// ConnectorState is the connector's own state.
type ConnectorState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// Status is GET /connectors/{name}/status.
type Status struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskState    `json:"tasks"`
	Type      string         `json:"type" jsonschema:"source, sink or unknown"`
}

// Info is GET /connectors/{name}.
type Info struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []struct {
		Connector string `json:"connector"`
		Task      int    `json:"task"`
	} `json:"tasks"`
	Type string `json:"type"`
}

// Connector is a connector with its status and what its config says it reads and writes.
type Connector struct {
	Name        string      `json:"name"`
	Type        string      `json:"type"`
	Class       string      `json:"class,omitempty"`
	State       string      `json:"state"`
	WorkerID    string      `json:"worker_id,omitempty"`
	Trace       string      `json:"trace,omitempty"`
	Tasks       []TaskState `json:"tasks"`
	FailedTasks int         `json:"failed_tasks"`
	// Healthy is true when the connector and every task are RUNNING.
	Healthy bool    `json:"healthy"`
	Lineage Lineage `json:"lineage"`
	// Config is the connector config with secret-looking values replaced by "[redacted]".
	Config map[string]string `json:"config,omitempty"`
}

// Lineage is what a connector's config says about the data it moves.
type Lineage struct {
	Topics      []string `json:"topics,omitempty"`
	TopicsRegex string   `json:"topics_regex,omitempty"`
	// Tables maps topic → target table for sinks that declare it (Snowflake topic2table.map, JDBC
	// table.name.format) or whose naming rule is exact (the Snowflake sink's name for an unmapped
	// topic), fully qualified when the config names the database and schema.
	Tables map[string]string `json:"tables,omitempty"`
	// ActiveTopics is what the worker reports the connector has used (KIP-558), when available.
	ActiveTopics []string `json:"active_topics,omitempty"`
}

// ListConnectors returns every connector with status and info, using ?expand=status&expand=info
// (Kafka 2.3+, KIP-465). An older worker that ignores expand is read connector by connector.
func (c *Client) ListConnectors(ctx context.Context) ([]Connector, error) {
	var raw json.RawMessage
	q := url.Values{"expand": {"status", "info"}}
	if c.cloud {
		q = url.Values{"expand": {"info,status,id"}} // the Cloud API's documented form
	}
	if err := c.get(ctx, "/connectors", q, &raw); err != nil {
		return nil, err
	}
	var expanded map[string]struct {
		Status *Status `json:"status"`
		Info   *Info   `json:"info"`
	}
	out := []Connector{}
	if err := json.Unmarshal(raw, &expanded); err == nil {
		for name, e := range expanded {
			if e.Status == nil || e.Info == nil {
				continue
			}
			out = append(out, build(name, *e.Status, *e.Info))
		}
		if len(out) == len(expanded) {
			sortByName(out)
			return out, nil
		}
		out = out[:0]
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		if len(expanded) == 0 {
			return nil, fmt.Errorf("kafka connect: GET /connectors: unexpected answer (neither a name list nor an expanded map): %.200s", raw)
		}
		for n := range expanded {
			names = append(names, n)
		}
	}
	for _, n := range names {
		conn, err := c.Get(ctx, n)
		if err != nil {
			if httpapi.IsNotFound(err) {
				continue // deleted between the listing and this read
			}
			return nil, err
		}
		out = append(out, conn)
	}
	sortByName(out)
	return out, nil
}

// Get returns one connector's status and config.
func (c *Client) Get(ctx context.Context, name string) (Connector, error) {
	st, err := c.Status(ctx, name)
	if err != nil {
		return Connector{}, err
	}
	var info Info
	if err := c.get(ctx, "/connectors/"+escape(name), nil, &info); err != nil {
		return Connector{}, c.notFound(name, err)
	}
	return build(name, st, info), nil
}

// Status reads GET /connectors/{name}/status.
func (c *Client) Status(ctx context.Context, name string) (Status, error) {
	if strings.TrimSpace(name) == "" {
		return Status{}, errors.New("connector name is empty: list_connectors shows the names")
	}
	var st Status
	if err := c.get(ctx, "/connectors/"+escape(name)+"/status", nil, &st); err != nil {
		return Status{}, c.notFound(name, err)
	}
	return st, nil
}

// ActiveTopics reads GET /connectors/{name}/topics (KIP-558). A worker with topic tracking
// disabled or older than 2.5 answers an error; callers fall back to the config's topics.
func (c *Client) ActiveTopics(ctx context.Context, name string) ([]string, error) {
	var out map[string]struct {
		Topics []string `json:"topics"`
	}
	if err := c.get(ctx, "/connectors/"+escape(name)+"/topics", nil, &out); err != nil {
		return nil, err
	}
	return out[name].Topics, nil
}

// rebalanceRetries is how often a 409 is retried: a worker answers 409 while the group rebalances
// or its config is stale ("Cannot complete request momentarily"), which clears within seconds.
const rebalanceRetries = 3

// get reads path, retrying a 409 (rebalance) with a short pause; pkg/httpapi already retries 429,
// 5xx and network failures.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	var err error
	for attempt := 0; ; attempt++ {
		err = c.api.Do(ctx, "GET", c.prefix+path, q, nil, out)
		var he *httpapi.Error
		if !errors.As(err, &he) || he.StatusCode != http.StatusConflict || attempt == rebalanceRetries {
			break
		}
		t := time.NewTimer(time.Duration(attempt+1) * c.api.Backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (the Connect cluster was rebalancing)", err)
		case <-t.C:
		}
	}
	var he *httpapi.Error
	if errors.As(err, &he) && he.StatusCode == http.StatusConflict {
		return fmt.Errorf("%w (the Connect cluster is rebalancing; try again shortly)", err)
	}
	return err
}

func (c *Client) notFound(name string, err error) error {
	if httpapi.IsNotFound(err) {
		return fmt.Errorf("connector %q not found on kafka connect (list_connectors shows the names): %w", name, err)
	}
	return err
}

// escape makes a connector name one path segment: names may hold spaces, slashes and '?'.
func escape(name string) string { return url.PathEscape(name) }

func build(name string, st Status, info Info) Connector {
	if st.Name == "" {
		st.Name = name
	}
	typ := st.Type
	if typ == "" {
		typ = info.Type
	}
	c := Connector{Name: st.Name, Type: typ, Class: info.Config["connector.class"], State: st.Connector.State,
		WorkerID: st.Connector.WorkerID, Trace: st.Connector.Trace, Tasks: st.Tasks, Lineage: ConfigLineage(info.Config),
		Config: Redact(info.Config)}
	if c.Tasks == nil {
		c.Tasks = []TaskState{}
	}
	c.Healthy = c.State == "RUNNING"
	for _, t := range c.Tasks {
		if t.State == "FAILED" {
			c.FailedTasks++
		}
		if t.State != "RUNNING" {
			c.Healthy = false
		}
	}
	return c
}

func sortByName(cs []Connector) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
}

// ConfigLineage reads the documented lineage keys of a connector config: sink `topics` /
// `topics.regex`, source `kafka.topic` / `topic` / `topic.prefix`, Snowflake
// `snowflake.topic2table.map` with `snowflake.database.name` and `snowflake.schema.name`.
func ConfigLineage(cfg map[string]string) Lineage {
	var l Lineage
	for _, key := range []string{"topics", "kafka.topic", "topic"} {
		for _, t := range splitList(cfg[key]) {
			l.Topics = appendUnique(l.Topics, t)
		}
	}
	l.TopicsRegex = strings.TrimSpace(cfg["topics.regex"])
	db, schema := strings.TrimSpace(cfg["snowflake.database.name"]), strings.TrimSpace(cfg["snowflake.schema.name"])
	qualify := func(table string) string {
		if strings.Contains(table, ".") || db == "" || schema == "" {
			return table
		}
		return db + "." + schema + "." + table
	}
	if m := cfg["snowflake.topic2table.map"]; m != "" {
		l.Tables = map[string]string{}
		for _, pair := range splitList(m) {
			topic, table, ok := strings.Cut(pair, ":")
			topic, table = strings.TrimSpace(topic), strings.TrimSpace(table)
			if !ok || topic == "" || table == "" {
				continue
			}
			l.Tables[topic] = qualify(table)
			l.Topics = appendUnique(l.Topics, topic)
		}
	}
	// The Snowflake sink names an unmapped topic's table by its own rule (SnowflakeTableName).
	if strings.Contains(strings.ToLower(cfg["connector.class"]), "snowflake") && db != "" && schema != "" {
		for _, t := range l.Topics {
			if _, ok := l.Tables[t]; ok {
				continue
			}
			name, ok := SnowflakeTableName(t)
			if !ok {
				continue
			}
			if l.Tables == nil {
				l.Tables = map[string]string{}
			}
			l.Tables[t] = qualify(name)
		}
	}
	// JDBC sinks: table.name.format with ${topic}.
	if f := strings.TrimSpace(cfg["table.name.format"]); f != "" && len(l.Topics) > 0 {
		if l.Tables == nil {
			l.Tables = map[string]string{}
		}
		for _, t := range l.Topics {
			if _, ok := l.Tables[t]; !ok {
				l.Tables[t] = strings.ReplaceAll(f, "${topic}", t)
			}
		}
	}
	return l
}

// SnowflakeTableName is the table the Snowflake Kafka connector (Utils.generateValidName) creates
// for a topic without a topic2table entry: a topic that is a valid identifier
// (^[_a-zA-Z][_$a-zA-Z0-9]+$) is used as is; otherwise ".*" is removed, every invalid character
// (per UTF-16 code unit, the first also may not be a digit) becomes "_", and "_" plus
// Math.abs(topic.hashCode()) is appended. ok is false when the connector itself would fail.
func SnowflakeTableName(topic string) (name string, ok bool) {
	if topic == "" {
		return "", false
	}
	if validSnowflakeIdent(topic) {
		return topic, true
	}
	hash := javaAbs(javaHashCode(topic))
	units := utf16.Encode([]rune(strings.ReplaceAll(topic, ".*", "")))
	if len(units) == 0 {
		return "", false // Java's substring(0, 1) throws: the connector rejects the topic
	}
	var b strings.Builder
	i := 0
	if c := units[0]; c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		b.WriteByte(byte(c))
		i = 1
	} else {
		b.WriteByte('_')
	}
	for ; i < len(units); i++ {
		c := units[i]
		if c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(byte(c))
		} else {
			b.WriteByte('_')
		}
	}
	b.WriteByte('_')
	b.WriteString(strconv.FormatInt(int64(hash), 10))
	return b.String(), true
}

// validSnowflakeIdent is the connector's isValidSnowflakeObjectIdentifier: ASCII, at least two
// characters, not starting with a digit or '$'.
func validSnowflakeIdent(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c == '$' || c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// javaHashCode is Java's String.hashCode: s[0]*31^(n-1) + … + s[n-1] over UTF-16 code units,
// wrapping in 32 bits.
func javaHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaAbs is Math.abs(int): MinInt32 stays negative.
func javaAbs(h int32) int32 {
	if h < 0 {
		return -h // wraps for MinInt32, as in Java
	}
	return h
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// IsSecretKey says whether a config key names a secret: passwords, secrets, Schema Registry
// basic.auth.user.info, keystore and truststore contents, private keys, tokens, credentials and
// SASL JAAS configs. Keystore/truststore locations and types are paths and names, not secrets.
func IsSecretKey(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	for _, w := range []string{"password", "passwd", "passphrase", "secret", "user.info", "userinfo", "token", "credential",
		"sasl.jaas.config", "private.key", "privatekey", "api.key", "apikey"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	if k == "pwd" || strings.HasSuffix(k, ".pwd") || k == "key" || strings.HasSuffix(k, ".key") {
		return true
	}
	if strings.Contains(k, "keystore") || strings.Contains(k, "truststore") {
		return !strings.HasSuffix(k, ".location") && !strings.HasSuffix(k, ".type")
	}
	return false
}

// Redact hides values whose keys look like secrets, and the userinfo and password-like
// parameters of URL values (connection.url, connection.uri, …): Connect only masks
// PASSWORD-typed configs it knows about, and plugins are not consistent.
func Redact(cfg map[string]string) map[string]string {
	if cfg == nil {
		return nil
	}
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		switch {
		case v == "":
		case IsSecretKey(k):
			v = redacted
		default:
			v = RedactURL(v)
		}
		out[k] = v
	}
	return out
}

const redacted = "[redacted]"

// RedactURL strips what a URL-like value carries as secrets: the userinfo of scheme://user:pass@host
// (also behind a jdbc: prefix), Oracle's jdbc:oracle:thin:user/pass@host, and the values of
// secret-named parameters after '?', '&' or ';' (password=…, sqlserver's ;password=…).
// Other values are returned unchanged.
func RedactURL(v string) string {
	lower := strings.ToLower(v)
	if i := strings.Index(lower, "jdbc:oracle:thin:"); i >= 0 {
		rest := v[i+len("jdbc:oracle:thin:"):]
		if at := strings.LastIndex(rest, "@"); at > 0 {
			v = v[:i+len("jdbc:oracle:thin:")] + redacted + rest[at:]
		}
	} else if i := strings.Index(v, "://"); i >= 0 {
		start := i + 3
		end := len(v)
		// Up to the parameters, not the first '/': a raw password may hold one. An '@' in a
		// path then over-redacts, which is the safe side.
		if j := strings.IndexAny(v[start:], "?;#"); j >= 0 {
			end = start + j
		}
		if at := strings.LastIndex(v[start:end], "@"); at >= 0 {
			v = v[:start] + redacted + v[start+at:]
		}
	}
	if !strings.ContainsAny(v, "?;&") || !strings.Contains(v, "=") {
		return v
	}
	// Parameters: each segment after a '?', '&' or ';' is name=value.
	var b strings.Builder
	seg := 0
	inParams := false
	flush := func(end int) {
		part := v[seg:end]
		if name, _, ok := strings.Cut(part, "="); ok && inParams && IsSecretKey(name) {
			part = name + "=" + redacted
		}
		b.WriteString(part)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '?' || c == '&' || c == ';' {
			flush(i)
			b.WriteByte(c)
			seg = i + 1
			inParams = true
		}
	}
	flush(len(v))
	return b.String()
}
