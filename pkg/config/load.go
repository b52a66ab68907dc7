package config

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// LookupEnv is how the loader reads environment variables; main passes os.LookupEnv, tests a map.
type LookupEnv func(string) (string, bool)

// Load reads the file at path, or the embedded default when path is empty.
func Load(path string, embedded []byte, embeddedName string, env LookupEnv) (*Config, error) {
	data, source := embedded, "embedded:"+embeddedName
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: read %s: %w (set --config or DW_CONFIG to an existing file)", path, err)
		}
		data, source = b, path
	}
	cfg, err := Parse(data, env)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", source, err)
	}
	cfg.Source = source
	return cfg, nil
}

// Parse decodes, expands, defaults and validates one YAML document.
func Parse(data []byte, env LookupEnv) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	cfg := &Config{}
	if root.Kind == 0 { // empty document
		return cfg, finish(cfg, env)
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if err := strictKeys(data, doc); err != nil {
		return nil, err
	}
	if err := expandNode(doc, env); err != nil {
		return nil, err
	}
	if err := doc.Decode(cfg); err != nil {
		return nil, fmt.Errorf("decode: %s", unquoteValues(err.Error()))
	}
	return cfg, finish(cfg, env)
}

func finish(cfg *Config, env LookupEnv) error {
	applyDefaults(cfg, env)
	return cfg.Validate()
}

// unquoteValues drops the values a YAML decoding error quotes in backticks ("cannot unmarshal
// !!str `…` into int"): the line and the expected type say what to fix.
func unquoteValues(msg string) string {
	var b strings.Builder
	for {
		start := strings.IndexByte(msg, '`')
		if start < 0 {
			break
		}
		end := strings.IndexByte(msg[start+1:], '`')
		if end < 0 {
			break
		}
		b.WriteString(msg[:start])
		b.WriteString("a value")
		msg = msg[start+1+end+1:]
	}
	b.WriteString(msg)
	return b.String()
}

// typoOf quotes an unknown key only when it is a near miss of a known one (" \"storee\" (did
// you mean store?)"): anything else may be any text of whatever file was named as the config —
// a password file's line, a key — and is not repeated.
func typoOf(key string, known []string) string {
	if len(key) > 40 {
		return ""
	}
	for _, k := range known {
		if editDistance(key, k) <= 2 {
			return fmt.Sprintf(" %q (did you mean %s?)", key, k)
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func sortedKeys(m map[string]reflect.Type) []string {
	return slices.Sorted(maps.Keys(m))
}

func joinPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

func displayPath(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

// expandNode replaces ${VAR} and ${VAR:-default} in scalar values. Keys are never expanded.
func expandNode(n *yaml.Node, env LookupEnv) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if err := expandNode(n.Content[i], env); err != nil {
				return err
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			if err := expandNode(c, env); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return nil
		}
		v, err := Expand(n.Value, env)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		n.Value = v
		if n.Style == 0 {
			n.Tag = "" // let a plain scalar re-resolve (e.g. "${PORT}" → int)
		}
	}
	return nil
}

// Expand substitutes ${VAR} and ${VAR:-default}; "$$" is a literal "$". An unset variable without a
// default is an error, so a missing secret fails at start instead of connecting with an empty one.
func Expand(s string, env LookupEnv) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '{' {
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		expr := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("invalid variable name %q in ${%s}", name, expr)
		}
		val, ok := env(name)
		switch {
		case ok && val != "":
			b.WriteString(val)
		case hasDef:
			b.WriteString(def)
		case ok:
			// set but empty, no default: keep empty
		default:
			return "", fmt.Errorf("environment variable %s is not set (export it, or write ${%s:-default})", name, name)
		}
		i += 2 + end
	}
	return b.String(), nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// Home is DW_HOME, defaulting to ~/.dataworkers.
func Home(env LookupEnv) string {
	if h, ok := env("DW_HOME"); ok && h != "" {
		return expandHome(h, env)
	}
	return expandHome("~/.dataworkers", env)
}

func expandHome(p string, env LookupEnv) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, _ := env("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return p
}

const defaultTimeout = 10 * time.Second

func applyDefaults(c *Config, env LookupEnv) {
	if c.Store.Path == "" {
		c.Store.Path = filepath.Join(Home(env), "dw.db")
	}
	c.Store.Path = expandHome(c.Store.Path, env)
	if u, ok := env("DW_STORE_URL"); ok && u != "" {
		c.Store.URL = u
	}
	if c.Store.BusyTimeout == 0 {
		c.Store.BusyTimeout = 15 * time.Second
	}
	if k := c.Kafka; k != nil {
		k.Timeout = orDefault(k.Timeout)
		if k.ClientID == "" {
			k.ClientID = "data-workers"
		}
	}
	if r := c.SchemaRegistry; r != nil {
		r.Timeout = orDefault(r.Timeout)
	}
	if k := c.Connect; k != nil {
		k.Timeout = orDefault(k.Timeout)
	}
	if cc := c.ConfluentCloud; cc != nil {
		cc.Timeout = orDefault(cc.Timeout)
		if cc.APIURL == "" {
			cc.APIURL = "https://api.confluent.cloud"
		}
		if cc.FlinkAPIKey == "" && cc.FlinkAPISecret == "" {
			cc.FlinkAPIKey, cc.FlinkAPISecret = cc.APIKey, cc.APISecret
		}
	}
	if w := c.Warehouse; w != nil {
		if w.StatementTimeout == 0 {
			w.StatementTimeout = 60 * time.Second
		}
		if w.MaxSampleRows == 0 {
			w.MaxSampleRows = 20
		}
		if w.Engine == "sqlite" {
			w.DSN = expandHome(w.DSN, env)
		}
	}
	if d := c.DBT; d != nil {
		d.ManifestPath = expandHome(d.ManifestPath, env)
		if dc := d.Cloud; dc != nil {
			dc.Timeout = orDefault(dc.Timeout)
			if dc.URL == "" {
				dc.URL = "https://cloud.getdbt.com"
			}
		}
	}
	if a := c.Airflow; a != nil {
		a.Timeout = orDefault(a.Timeout)
		if a.APIVersion == "" {
			a.APIVersion = "v2"
		}
	}
	defaultMetrics(c.Metrics, c.ConfluentCloud)
	defaultLake(c.Lake, c.ConfluentCloud, env)
	for i, f := range c.Catalog.Files {
		c.Catalog.Files[i] = expandHome(f, env)
	}
	for i, f := range c.Catalog.OpenLineage {
		c.Catalog.OpenLineage[i] = expandHome(f, env)
	}
}

func orDefault(d time.Duration) time.Duration {
	if d == 0 {
		return defaultTimeout
	}
	return d
}

// Secrets returns every secret value in the configuration, so output and logs can be scrubbed of them.
func (c *Config) Secrets() []string {
	var out []string
	for _, s := range c.secretValues() {
		out = append(out, s.value)
	}
	return out
}

// SecretWarnings names, by config key and never by value, each secret that is short (under 8
// bytes) or made only of letters. Such a secret is still scrubbed from every output — a successful
// result can carry a backend's error text holding it — so any name containing it (a URN such as
// job:airflow/…, a URL, a table) is shown with [redacted]; the server logs these at start.
func (c *Config) SecretWarnings() []string {
	var out []string
	for _, s := range c.secretValues() {
		if len(s.value) >= 8 && strings.IndexFunc(s.value, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			continue
		}
		msg := fmt.Sprintf("config %s: the secret is short or a plain word; it is scrubbed from all output, so names that contain it (URNs, URLs, tables) show [redacted]: use a longer, random secret", s.key)
		if !slices.Contains(out, msg) {
			out = append(out, msg)
		}
	}
	return out
}

type secretValue struct{ key, value string }

// secretValues lists the configured secrets with the config key each came from.
func (c *Config) secretValues() []secretValue {
	var out []secretValue
	add := func(key string, vals ...string) {
		for _, v := range vals {
			if len(v) >= 4 { // shorter values would scrub ordinary words
				out = append(out, secretValue{key, v})
			}
		}
	}
	add("store.url", dsnSecrets(c.Store.URL)...)
	if k := c.Kafka; k != nil && k.SASL != nil {
		add("kafka.sasl.password", k.SASL.Password)
	}
	if r := c.SchemaRegistry; r != nil {
		add("schema_registry.password", r.Password)
	}
	if k := c.Connect; k != nil {
		add("connect.password", k.Password)
	}
	if cc := c.ConfluentCloud; cc != nil {
		add("confluent_cloud.api_secret", cc.APISecret)
		add("confluent_cloud.flink_api_secret", cc.FlinkAPISecret)
	}
	if w := c.Warehouse; w != nil {
		add("warehouse.dsn", dsnSecrets(w.DSN)...)
	}
	if d := c.DBT; d != nil && d.Cloud != nil {
		add("dbt.cloud.token", d.Cloud.Token)
	}
	if a := c.Airflow; a != nil {
		add("airflow.password", a.Password)
		add("airflow.token", a.Token)
	}
	if s := c.Slack; s != nil {
		add("slack.webhook_url", s.WebhookURL)
	}
	out = append(out, c.metricsSecrets()...)
	out = append(out, c.lakeSecrets()...)
	return out
}

// dsnSecrets finds the secrets a warehouse DSN can carry: the password of user:password@host forms
// (postgres URLs, gosnowflake), password= in PostgreSQL keyword DSNs, and password, token,
// privateKey or passcode query parameters (gosnowflake, pgx).
func dsnSecrets(dsn string) []string {
	var out []string
	rest := dsn
	if _, after, ok := strings.Cut(rest, "://"); ok {
		rest = after
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			out = append(out, pw)
		}
	}
	secretKey := func(k string) bool {
		switch strings.ToLower(k) {
		case "password", "token", "privatekey", "passcode", "private_key_passphrase", "sslpassword":
			return true
		}
		return false
	}
	if _, q, ok := strings.Cut(dsn, "?"); ok {
		if vals, err := url.ParseQuery(q); err == nil {
			for k, vs := range vals {
				if secretKey(k) {
					out = append(out, vs...)
				}
			}
		}
	}
	for _, f := range strings.Fields(dsn) { // keyword DSN: host=… user=… password=…
		if k, v, ok := strings.Cut(f, "="); ok && secretKey(k) {
			out = append(out, strings.Trim(v, "'"))
		}
	}
	return out
}

// Redactor returns a function that replaces every configured secret in s with "[redacted]".
func (c *Config) Redactor() func(string) string {
	return c.NewRedactor().Redact
}

// NewRedactor returns a Redactor over the configured secrets; secrets known only at run time (the
// receipts key once it is loaded) are added to it with Add.
func (c *Config) NewRedactor() *Redactor {
	return &Redactor{secrets: c.Secrets()}
}

// Redactor replaces known secrets with "[redacted]". It is safe for concurrent use: tools run
// concurrently and a secret may be added while another call is being scrubbed.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string
}

// Add makes s a secret from now on. Values shorter than 4 bytes are ignored, as in the config,
// because they would scrub ordinary words.
func (r *Redactor) Add(s string) {
	if len(s) < 4 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.secrets, s) {
		r.secrets = append(r.secrets, s)
	}
}

// Redact returns s with every secret replaced by "[redacted]".
func (r *Redactor) Redact(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

// ProblemList is a validation failure listing every problem found, each saying how to fix it.
type ProblemList []string

func (p ProblemList) Error() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d problem(s):", len(p))
	for _, s := range p {
		b.WriteString("\n  - ")
		b.WriteString(s)
	}
	return b.String()
}

func (p ProblemList) err() error {
	if len(p) == 0 {
		return nil
	}
	return p
}
