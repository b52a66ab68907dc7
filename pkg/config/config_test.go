package config

import (
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/configs"
)

func env(m map[string]string) LookupEnv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestEmbeddedDefaultLoadsWithoutExternalServices(t *testing.T) {
	cfg, err := Load("", configs.Local, configs.LocalName, env(map[string]string{"HOME": "/home/ann"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.Path != "/home/ann/.dataworkers/dw.db" {
		t.Errorf("store path = %q", cfg.Store.Path)
	}
	if cfg.Warehouse == nil || cfg.Warehouse.Engine != "sqlite" || cfg.Warehouse.DSN != "/home/ann/.dataworkers/warehouse.db" {
		t.Errorf("warehouse = %+v", cfg.Warehouse)
	}
	if cfg.Kafka != nil || cfg.SchemaRegistry != nil || cfg.Connect != nil || cfg.ConfluentCloud != nil {
		t.Error("the embedded default must not configure external services")
	}
	if cfg.Source != "embedded:configs/local.yaml" {
		t.Errorf("source = %q", cfg.Source)
	}
}

func TestDWHomeMovesTheStore(t *testing.T) {
	cfg, err := Load("", configs.Local, configs.LocalName, env(map[string]string{"DW_HOME": "/srv/dw"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.Path != "/srv/dw/dw.db" {
		t.Errorf("store path = %q", cfg.Store.Path)
	}
}

func TestExampleConfigDocumentsEverySectionAndParses(t *testing.T) {
	vars := map[string]string{}
	for _, k := range []string{"KAFKA_API_KEY", "KAFKA_API_SECRET", "SR_API_KEY", "SR_API_SECRET", "CONFLUENT_CLOUD_API_KEY",
		"CONFLUENT_CLOUD_API_SECRET", "SNOWFLAKE_PASSWORD", "DBT_CLOUD_TOKEN", "SLACK_WEBHOOK_URL", "AIRFLOW_TOKEN"} {
		vars[k] = "secret-" + strings.ToLower(k)
	}
	vars["SLACK_WEBHOOK_URL"] = "https://hooks.slack.com/services/T0/B0/xyz123"
	cfg, err := Load("../../configs/confluent-cloud.example.yaml", nil, "", env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kafka == nil || cfg.SchemaRegistry == nil || cfg.Connect == nil || cfg.ConfluentCloud == nil || cfg.Warehouse == nil ||
		cfg.DBT == nil || cfg.DBT.Cloud == nil || cfg.Airflow == nil || cfg.Slack == nil || len(cfg.Catalog.Files) == 0 || len(cfg.Domains) == 0 {
		t.Fatalf("example must fill every section: %+v", cfg)
	}
	if cfg.ConfluentCloud.FlinkAPIKey != "secret-confluent_cloud_api_key" {
		t.Errorf("flink key should default to the cloud key, got %q", cfg.ConfluentCloud.FlinkAPIKey)
	}
	redact := cfg.Redactor()
	msg := redact("login failed for secret-kafka_api_secret and secret-snowflake_password at https://hooks.slack.com/services/T0/B0/xyz123")
	if strings.Contains(msg, "secret-") || strings.Contains(msg, "xyz123") {
		t.Errorf("secrets left in %q", msg)
	}
}

func TestUnknownKeyNamesKeyPathAndLine(t *testing.T) {
	_, err := Parse([]byte("store:\n  path: /tmp/x.db\nkafka:\n  bootstrap_servers: [\"a:9092\"]\n  sasl:\n    mechansim: PLAIN\n"), env(nil))
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"line 6", `"mechansim"`, "kafka.sasl", "mechanism"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestExpansion(t *testing.T) {
	e := env(map[string]string{"A": "1", "EMPTY": ""})
	cases := []struct {
		in, want, err string
	}{
		{"x${A}y", "x1y", ""},
		{"${B:-def}", "def", ""},
		{"${EMPTY:-def}", "def", ""},
		{"${EMPTY}", "", ""},
		{"$$A and $5", "$A and $5", ""},
		{"${B}", "", "B is not set"},
		{"${A", "", "unterminated"},
		{"${1X}", "", "invalid variable name"},
	}
	for _, c := range cases {
		got, err := Expand(c.in, e)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Expand(%q) error = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestExpandedValuesKeepTheirTypesAndCannotInjectStructure(t *testing.T) {
	doc := "store:\n  path: /tmp/x.db\n  busy_timeout: ${BT}\nslack:\n  webhook_url: \"${HOOK}\"\n"
	cfg, err := Parse([]byte(doc), env(map[string]string{"BT": "3s", "HOOK": "https://h.example/x\nkafka: {}"}))
	if err == nil {
		// The value is one string; it must never become a kafka section.
		if cfg.Kafka != nil {
			t.Fatal("an environment value injected a section")
		}
	}
	cfg, err = Parse([]byte(doc), env(map[string]string{"BT": "3s", "HOOK": "https://h.example/x"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.BusyTimeout != 3*time.Second {
		t.Errorf("busy_timeout = %v", cfg.Store.BusyTimeout)
	}
}

func TestValidationListsEveryProblemWithItsFix(t *testing.T) {
	doc := `
kafka:
  bootstrap_servers: ["nohost"]
  sasl: {mechanism: GSSAPI}
  max_record_bytes: -1
  max_sample_bytes: 999999999
schema_registry:
  url: "ftp://x"
warehouse:
  engine: oracle
airflow:
  url: https://af
  api_version: v9
domains:
  - name: billing
    autonomy: L7
    approvers: [{name: ann, token_sha256: abc}]
`
	_, err := Parse([]byte(doc), env(nil))
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{
		`kafka.bootstrap_servers[0]: "nohost" is not host:port`,
		"kafka.sasl.mechanism",
		"kafka.sasl: username and password are required",
		"kafka.max_record_bytes: must be between 1 and",
		"kafka.max_sample_bytes: must be between 1 and",
		"schema_registry.url",
		"warehouse.engine",
		"warehouse.dsn: required",
		"airflow.api_version",
		"airflow: set token",
		"domains[0].assets",
		"domains[0].autonomy",
		"domains[0].approvers[0].token_sha256",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestMissingFileSaysHowToFix(t *testing.T) {
	_, err := Load("/nonexistent/dw.yaml", nil, "", env(nil))
	if err == nil || !strings.Contains(err.Error(), "DW_CONFIG") {
		t.Errorf("err = %v", err)
	}
}

func TestURLWithCredentialsIsRefusedWithoutEchoingThem(t *testing.T) {
	_, err := Parse([]byte("connect:\n  url: \"https://bob:hunter22@connect:8083\"\n"), env(nil))
	if err == nil || strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "username/password") {
		t.Errorf("err = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(string(configs.Local))
	f.Add("kafka:\n  bootstrap_servers: [a:1]\n")
	f.Add("domains: [{name: x, assets: ['*'], autonomy: L2}]")
	f.Add("store: [1,2]")
	f.Fuzz(func(t *testing.T, doc string) {
		_, _ = Parse([]byte(doc), env(map[string]string{"HOME": "/h"})) // must not panic
	})
}

func TestWarehouseDSNSecretsAreRedactedInEveryForm(t *testing.T) {
	for _, dsn := range []string{
		"postgres://bob:hunter2secret@db:5432/x",
		"host=db user=bob password=hunter2secret dbname=x",
		"postgres://bob@db/x?sslmode=require&password=hunter2secret",
		"bob@org-acct/DB?authenticator=SNOWFLAKE_JWT&privateKey=hunter2secret",
		"bob:hunter2secret@org-acct/DB/SCHEMA?warehouse=W",
	} {
		c := &Config{Warehouse: &Warehouse{Engine: "postgres", DSN: dsn}}
		if got := c.Redactor()("connect failed: " + dsn); strings.Contains(got, "hunter2secret") {
			t.Errorf("%q leaks: %q", dsn, got)
		}
	}
}

func TestRedactorAddScrubsRuntimeSecrets(t *testing.T) {
	r := (&Config{}).NewRedactor()
	key := "2597e547aa00bb11cc22dd33ee44ff5566778899aabbccddeeff001122334455"
	if got := r.Redact("avro: unknown type: " + key); !strings.Contains(got, key) {
		t.Fatalf("nothing added yet, want text unchanged, got %q", got)
	}
	r.Add(key)
	r.Add(key)  // twice is once
	r.Add("ab") // too short to be a secret: would scrub ordinary words
	for _, msg := range []string{"avro: unknown type: " + key, key + key} {
		got := r.Redact(msg)
		if strings.Contains(got, key) || !strings.Contains(got, "[redacted]") {
			t.Errorf("Redact(%q) = %q", msg, got)
		}
	}
	if got := r.Redact("about abc"); got != "about abc" {
		t.Errorf("short value was treated as a secret: %q", got)
	}
}

// Keys inside maps are checked too: a misspelt key under one action class is an error with its path and line.
func TestUnknownKeyInsideAMapNamesItsPathAndLine(t *testing.T) {
	_, err := Parse([]byte("store:\n  path: /tmp/x.db\naction_classes:\n  pause_job:\n    expires: 2h\n"), env(nil))
	if err == nil {
		t.Fatal("a misspelt key under action_classes.pause_job was accepted")
	}
	for _, want := range []string{"line 5", `"expires"`, "action_classes.pause_job", "known keys: executor, expiry"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// In a list of structs, the item's index is in the path.
	_, err = Parse([]byte("domains:\n  - name: a\n    assets: [\"job:*\"]\n  - name: b\n    autonomyy: L2\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "line 5") || !strings.Contains(err.Error(), "domains[1]") || !strings.Contains(err.Error(), `"autonomyy"`) {
		t.Fatalf("err = %v", err)
	}
	// A ${VAR} in a number field is not a key problem: it expands, then decodes.
	if _, err := Parse([]byte("store:\n  path: /tmp/x.db\n  busy_timeout: ${T}\n"), env(map[string]string{"T": "5s"})); err != nil {
		t.Fatalf("expanded value refused: %v", err)
	}
}

func TestStoreURLComesFromTheEnvironmentAndItsPasswordIsASecret(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "DW_STORE_URL" {
			return "postgres://dw:team-s3cret-pw@db.internal:5432/dw", true
		}
		return "", false
	}
	cfg, err := Parse([]byte("store:\n  url: postgres://other@h/db\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.URL != "postgres://dw:team-s3cret-pw@db.internal:5432/dw" {
		t.Fatalf("store.url = %q, want DW_STORE_URL's", cfg.Store.URL)
	}
	if got := cfg.Redactor()("connect failed for team-s3cret-pw"); strings.Contains(got, "team-s3cret-pw") {
		t.Fatalf("the store password is not scrubbed: %q", got)
	}
	bad, err := Parse([]byte("store:\n  url: mysql://u:hidden-pw@h/db\n"), func(string) (string, bool) { return "", false })
	if err == nil {
		err = bad.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "store.url") || strings.Contains(err.Error(), "hidden-pw") {
		t.Fatalf("validation of a bad store.url = %v", err)
	}
}
