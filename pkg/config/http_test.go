package config

import (
	"strings"
	"testing"
)

func TestHTTPSectionIsValidatedWithFixes(t *testing.T) {
	doc := `store:
  path: /tmp/x.db
http:
  resource_url: ftp://x
  tokens:
    - name: dana
      sha256: not-a-hash
    - name: dana
      sha256: 0000000000000000000000000000000000000000000000000000000000000000
    - sha256: 1111111111111111111111111111111111111111111111111111111111111111
  oidc:
    issuer: ""
`
	_, err := Parse([]byte(doc), env(nil))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"http.resource_url", "http.tokens[0].sha256", "never the token itself", `http.tokens[1].name: "dana" is used twice`, "http.tokens[2].name: required", "http.oidc.issuer: required", "http.oidc.audience: required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if _, err := Parse([]byte("store:\n  path: /tmp/x.db\nhttp:\n  tokenz: []\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "tokenz") {
		t.Fatalf("unknown key: %v", err)
	}
	cfg, err := Parse([]byte("store:\n  path: /tmp/x.db\nhttp:\n  allow_anonymous: true\n  oidc:\n    issuer: https://login.example.com\n    audience: https://dw.example.com/mcp\n"), env(nil))
	if err != nil || !cfg.HTTP.AllowAnonymous || cfg.HTTP.OIDC.Audience != "https://dw.example.com/mcp" {
		t.Fatalf("cfg=%+v err=%v", cfg.HTTP, err)
	}
}
