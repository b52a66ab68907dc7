package config

import (
	"strings"
	"testing"
)

// A short or word-like secret is still scrubbed everywhere (a successful result can carry a
// backend's error text), and the warning names its config key, never its value.
func TestWordLikeSecretsAreScrubbedAndWarnedByKey(t *testing.T) {
	c := &Config{
		Airflow:   &Airflow{Username: "admin", Password: "airflow", Token: "k7Qx-93fL-aa01-ZZp2"},
		Warehouse: &Warehouse{Engine: "postgres", DSN: "postgres://dw:postgres@db:5432/x"},
		Connect:   &Connect{Password: "1234567"},
	}
	warnings := c.SecretWarnings()
	all := strings.Join(warnings, "\n")
	for _, key := range []string{"airflow.password", "warehouse.dsn", "connect.password"} {
		if !strings.Contains(all, "config "+key+": ") {
			t.Errorf("no warning for %s: %q", key, all)
		}
	}
	if len(warnings) != 3 || strings.Contains(all, "airflow.token") {
		t.Errorf("want three warnings and none for the long random token: %q", all)
	}
	for _, value := range []string{"1234567", "k7Qx"} {
		if strings.Contains(all, value) {
			t.Errorf("warning names a secret's value %q: %q", value, all)
		}
	}
	// Documented cost: a name containing the word is scrubbed too.
	if got := c.Redactor()("job:airflow/sync_metered_usage_to_stripe"); got != "job:[redacted]/sync_metered_usage_to_stripe" {
		t.Errorf("Redact = %q", got)
	}
	if got := (&Config{Airflow: &Airflow{Token: "k7Qx-93fL-aa01-ZZp2"}}).SecretWarnings(); len(got) != 0 {
		t.Errorf("strong secret warned: %q", got)
	}
}

// A file named as the config that is not one — a password file, KEY=VALUE lines — is refused
// with the line and the kind of problem; an unknown key is quoted only as a near miss of a known
// one, and a value the decoder cannot use is never quoted.
func TestConfigErrorsQuoteNothingButNearMisses(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	for in, want := range map[string]string{
		"root:*:20228:0:99999:7:::\n":                 "line 1: unknown key in the top level",
		"store:\n  path: x\nhunter22secret: 1\n":      "line 3: unknown key in the top level",
		"storee:\n  path: x\n":                        `unknown key "storee" (did you mean store?)`,
		"warehouse:\n  max_sample_rows: hunter22pw\n": "a value",
	} {
		_, err := Parse([]byte(in), noEnv)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
			continue
		}
		for _, leak := range []string{"root:*", "20228", "hunter22"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("Parse(%q): the error quotes %q: %v", in, leak, err)
			}
		}
	}
}
