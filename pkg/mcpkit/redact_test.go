package mcpkit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/pkg/config"
)

// The secrets: one plain, one JSON escapes (& < >), so a scrub of encoded text alone would miss it.
const (
	plainSecret = "secret-pw-1234"
	jsonSecret  = "s3cr&t<pw>99"
)

func scrub(s string) string {
	for _, sec := range []string{plainSecret, jsonSecret} {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return s
}

type connOut struct {
	Checks []connCheck `json:"checks"`
	Count  int64       `json:"count"`
}

type connCheck struct {
	Name  string `json:"name"`
	Error string `json:"error,omitempty"`
}

func secretTools() []Tool {
	return []Tool{
		Read("check_things", "Successful result carrying backend error text.", func(context.Context, echoIn) (connOut, error) {
			return connOut{Count: 9007199254740993, Checks: []connCheck{
				{Name: "airflow", Error: "401 for token " + plainSecret},
				{Name: "warehouse", Error: "login failed: password=" + jsonSecret},
				{Name: "kafka"},
			}}, nil
		}),
		Read("clean_things", "Successful result with nothing secret.", func(context.Context, echoIn) (connOut, error) {
			return connOut{Count: 9007199254740993, Checks: []connCheck{{Name: "kafka"}}}, nil
		}),
		Destructive("explode_secret", "Panics with a secret in the message.", func(context.Context, echoIn) (connOut, error) {
			panic("dial failed with " + plainSecret)
		}),
	}
}

func callJSON(t *testing.T, tools []Tool, logger *slog.Logger, name string) (structured json.RawMessage, text string, isError bool) {
	t.Helper()
	srv := NewServer(tools, ServerOptions{Name: "dw-test", Version: "test", Logger: logger, Redact: scrub})
	raw, err := rpc(context.Background(), srv, "tools/call", map[string]any{"name": name, "arguments": map[string]any{"table": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Content {
		text += c.Text
	}
	return res.StructuredContent, text, res.IsError
}

func TestSuccessfulResultsAreScrubbedInTextAndStructuredContent(t *testing.T) {
	structured, text, isError := callJSON(t, secretTools(), nil, "check_things")
	if isError {
		t.Fatalf("want a successful result, got error %s", text)
	}
	for name, got := range map[string]string{"text": text, "structured": string(structured)} {
		var out connOut
		if err := json.Unmarshal([]byte(got), &out); err != nil {
			t.Fatalf("%s content is not the result JSON: %v: %s", name, err, got)
		}
		if len(out.Checks) != 3 || out.Checks[0].Error != "401 for token [redacted]" || out.Checks[1].Error != "login failed: password=[redacted]" {
			t.Errorf("%s content not scrubbed: %s", name, got)
		}
		if out.Count != 9007199254740993 {
			t.Errorf("%s content lost integer precision: %d", name, out.Count)
		}
		for _, leak := range []string{plainSecret, "s3cr", `\u0026t`} {
			if strings.Contains(got, leak) {
				t.Errorf("%s content leaks %q: %s", name, leak, got)
			}
		}
	}
}

func TestCleanResultsAreLeftAsTheyWere(t *testing.T) {
	structured, text, _ := callJSON(t, secretTools(), nil, "clean_things")
	want := `{"checks":[{"name":"kafka"}],"count":9007199254740993}`
	if text != want || string(structured) != want {
		t.Errorf("text=%s structured=%s, want both %s", text, structured, want)
	}
}

func TestPanicMessageIsScrubbedInResultAndLog(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	_, text, isError := callJSON(t, secretTools(), logger, "explode_secret")
	if !isError || !strings.Contains(text, "internal error in explode_secret: dial failed with [redacted]") || strings.Contains(text, plainSecret) {
		t.Errorf("panic result = %q (isError %v)", text, isError)
	}
	if !strings.Contains(logs.String(), "tool panicked") {
		t.Fatalf("panic not logged through the server's logger: %s", logs.String())
	}
	if strings.Contains(logs.String(), plainSecret) || !strings.Contains(logs.String(), "[redacted]") {
		t.Errorf("panic log not scrubbed: %s", logs.String())
	}
}

type loggedThing struct {
	DSN string `json:"dsn"`
}

func TestRedactingLoggerScrubsMessageAndEveryAttribute(t *testing.T) {
	var logs bytes.Buffer
	logger := RedactingLogger(slog.New(slog.NewJSONHandler(&logs, nil)), scrub)
	logger.With("preset", "token "+plainSecret).WithGroup("g").Warn("cannot connect with "+plainSecret,
		"error", errors.New("auth failed for "+jsonSecret),
		"dsn", "postgres://u:"+plainSecret+"@h/db",
		slog.Group("inner", "why", plainSecret),
		"thing", loggedThing{DSN: "password=" + jsonSecret},
		"n", 3)
	got := logs.String()
	for _, leak := range []string{plainSecret, "s3cr"} {
		if strings.Contains(got, leak) {
			t.Errorf("log leaks %q: %s", leak, got)
		}
	}
	if strings.Count(got, "[redacted]") != 6 || !strings.Contains(got, `"n":3`) {
		t.Errorf("want six scrubbed values and the rest intact: %s", got)
	}
}

func TestEnvLoggerAndResultsAreScrubbedEndToEnd(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "dw.yaml")
	writeFile(t, cfgPath, "store:\n  path: "+filepath.Join(dir, "dw.db")+"\nairflow:\n  url: https://af.example\n  token: "+plainSecret+"\n")
	a := Agent{Name: "dw-test", Tools: func(e *Env) []Tool {
		return []Tool{Read("probe", "Logs and returns backend text.", func(context.Context, echoIn) (connCheck, error) {
			e.Logger.Warn("probe failed", "error", "401 for "+plainSecret)
			return connCheck{Name: "airflow", Error: "401 for " + plainSecret}, nil
		})}
	}}
	var out, errb bytes.Buffer
	env := func(string) (string, bool) { return "", false }
	code := Run(context.Background(), a, []string{"--config", cfgPath, "call", "probe", `{"table":"x"}`}, IO{In: strings.NewReader(""), Out: &out, Err: &errb}, env)
	if code != ExitOK {
		t.Fatalf("code %d: %s", code, errb.String())
	}
	if strings.Contains(out.String()+errb.String(), plainSecret) || !strings.Contains(out.String(), "[redacted]") || !strings.Contains(errb.String(), "[redacted]") {
		t.Errorf("secret not scrubbed: out=%s err=%s", out.String(), errb.String())
	}
}

func TestAddSecretScrubsFromThenOn(t *testing.T) {
	dir := t.TempDir()
	e, err := newEnv("dw-test", "", func(k string) (string, bool) {
		if k == "DW_HOME" {
			return dir, true
		}
		return "", false
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Store.Close()
	key := "2597e547aa00bb11cc22dd33ee44ff5566778899aabbccddeeff001122334455"
	e.AddSecret(key)
	if got := e.Redact("avro: unknown type: " + key); strings.Contains(got, key) {
		t.Errorf("added secret not scrubbed: %s", got)
	}
}

func BenchmarkRedactResult(b *testing.B) {
	out := connOut{Count: 42}
	for i := range 200 {
		out.Checks = append(out.Checks, connCheck{Name: strings.Repeat("n", i%40), Error: "connection refused by host-" + strings.Repeat("x", i%60)})
	}
	for _, c := range []struct {
		name string
		out  connOut
	}{{"clean", out}, {"one secret", connOut{Count: 1, Checks: append([]connCheck{{Name: "a", Error: plainSecret}}, out.Checks...)}}} {
		b.Run(c.name, func(b *testing.B) {
			text, _ := json.Marshal(c.out)
			for b.Loop() {
				res := mcp.NewToolResultStructured(c.out, string(text))
				redactResult(res, scrub)
			}
		})
	}
}

func TestRedactTextKeepsJSONValid(t *testing.T) {
	redact := func(s string) string { return strings.ReplaceAll(s, "12345678", "[redacted]") }
	got := redactText(`{"pin":12345678,"note":"pin 12345678","n":1}`, redact)
	if got != `{"n":1,"note":"pin [redacted]","pin":12345678}` {
		t.Errorf("got %s, want the string scrubbed and the number kept a number", got)
	}
	if got := redactText("plain 12345678 text", redact); got != "plain [redacted] text" {
		t.Errorf("plain text: %q", got)
	}
}

// A word-like secret ("airflow") and a numeric one: keys are never renamed, numbers stay numbers,
// and string values — a URN too — are scrubbed (config warns at load that such a secret breaks names).
func TestRedactionScrubsStringValuesOnly(t *testing.T) {
	redact := func(s string) string {
		for _, sec := range []string{"airflow", "12345678"} {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
		return s
	}
	type out struct {
		AirflowURL string `json:"airflow_url"`
		PIN        int64  `json:"pin"`
		Job        string `json:"job"`
	}
	v := out{AirflowURL: "https://airflow.internal", PIN: 12345678, Job: "job:airflow/sync_metered_usage_to_stripe"}
	const want = `{"airflow_url":"https://[redacted].internal","job":"job:[redacted]/sync_metered_usage_to_stripe","pin":12345678}`
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := redactText(string(b), redact); got != want {
		t.Errorf("text:\n got %s\nwant %s", got, want)
	}
	w, changed := redactValue(v, redact)
	if !changed {
		t.Fatal("structured content not scrubbed")
	}
	if got, _ := json.Marshal(w); string(got) != want {
		t.Errorf("structured:\n got %s\nwant %s", got, want)
	}
	// A secret only in a key or a number leaves the result as it was.
	clean := out{AirflowURL: "https://x.internal", PIN: 12345678, Job: "job:x/y"}
	if w, changed := redactValue(clean, redact); changed || w != any(clean) {
		t.Errorf("clean result changed: %v", w)
	}
	b, _ = json.Marshal(clean)
	if got := redactText(string(b), redact); got != string(b) {
		t.Errorf("clean text changed: %s", got)
	}
}

// Every form in which a configured credential leaves the process is scrubbed, not only the
// plain secret: the base64 of user:password in an echoed Basic header, bearer and token
// headers, and percent-encoded secrets.
func TestNewRedactorScrubsEveryEncodingOfAConfiguredSecret(t *testing.T) {
	cfg := &config.Config{
		Connect:        &config.Connect{URL: "http://c", Username: "connect-user", Password: "c0nn3ct/p@ss"},
		ConfluentCloud: &config.ConfluentCloud{APIKey: "CCKEY123", APISecret: "cc+secret/xyz=="},
		Airflow:        &config.Airflow{URL: "http://a", Token: "af-tok-5566"},
		DBT:            &config.DBT{Cloud: &config.DBTCloud{Token: "dbtc_abcdef123"}},
	}
	redact := NewRedactor(cfg).Redact
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, leak := range []string{
		"Authorization: Basic " + b64("connect-user:c0nn3ct/p@ss"),
		b64("CCKEY123:cc+secret/xyz=="),
		strings.TrimRight(b64("CCKEY123:cc+secret/xyz=="), "="),
		url.QueryEscape("Basic " + b64("connect-user:c0nn3ct/p@ss")),
		"Bearer af-tok-5566",
		"Token dbtc_abcdef123",
		url.QueryEscape("cc+secret/xyz=="),
		url.PathEscape("c0nn3ct/p@ss"),
	} {
		got := redact("proxy echoed: " + leak + " (end)")
		for _, part := range []string{"c0nn3ct", "cc+secret", "cc%2Bsecret", "af-tok", "dbtc_", b64("connect-user:c0nn3ct/p@ss")[:12], b64("CCKEY123:cc+secret/xyz==")[:12]} {
			if strings.Contains(got, part) {
				t.Errorf("%q: %q survives in %q", leak, part, got)
			}
		}
		if !strings.Contains(got, "[redacted]") || !strings.HasSuffix(got, " (end)") {
			t.Errorf("%q scrubbed to %q", leak, got)
		}
	}
	if got := redact("connect-user asked"); got != "connect-user asked" {
		t.Errorf("a user name alone is not a secret: %q", got)
	}
}
