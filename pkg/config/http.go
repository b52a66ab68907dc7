package config

import (
	"encoding/hex"
	"strings"
)

// HTTP configures serving an agent over MCP Streamable HTTP (`serve --transport http`): who may call
// it. Without tokens or oidc every request is refused, unless allow_anonymous is set, which only a
// loopback listener accepts.
type HTTP struct {
	// ResourceURL is the public URL of the MCP endpoint as clients reach it (behind a TLS proxy,
	// e.g. https://dw-schema.example.com/mcp); it names the resource in the OAuth metadata.
	ResourceURL string `yaml:"resource_url"`
	// Tokens are static bearer tokens, one per caller, stored only as their SHA-256.
	Tokens []HTTPToken `yaml:"tokens"`
	// OIDC validates OAuth 2.1 / OIDC access tokens from one issuer.
	OIDC *HTTPOIDC `yaml:"oidc"`
	// Scopes are advertised in the Protected Resource Metadata.
	Scopes []string `yaml:"scopes"`
	// AllowAnonymous serves without authentication; refused on a non-loopback listener.
	AllowAnonymous bool `yaml:"allow_anonymous"`
}

// HTTPToken is one caller's bearer token.
type HTTPToken struct {
	Name   string `yaml:"name"`
	SHA256 string `yaml:"sha256"`
}

// HTTPOIDC is the issuer whose access tokens are accepted.
type HTTPOIDC struct {
	Issuer string `yaml:"issuer"`
	// Audience must be in the token's aud claim; usually the resource URL.
	Audience string `yaml:"audience"`
	// CallerClaim names the caller in the audit log (default sub).
	CallerClaim string `yaml:"caller_claim"`
}

func (c *Config) validateHTTP(add func(string, ...any)) {
	h := c.HTTP
	if h == nil {
		return
	}
	checkURL(add, "http.resource_url", h.ResourceURL, false)
	names := map[string]bool{}
	for i, t := range h.Tokens {
		if t.Name == "" {
			add("http.tokens[%d].name: required; it names the caller in the audit log", i)
		} else if names[t.Name] {
			add("http.tokens[%d].name: %q is used twice", i, t.Name)
		}
		names[t.Name] = true
		if b, err := hex.DecodeString(strings.TrimSpace(t.SHA256)); err != nil || len(b) != 32 {
			add("http.tokens[%d].sha256: must be the 64-hex-digit SHA-256 of the token (e.g. printf %%s \"$TOKEN\" | sha256sum), never the token itself", i)
		}
	}
	if o := h.OIDC; o != nil {
		checkURL(add, "http.oidc.issuer", o.Issuer, true)
		if o.Audience == "" {
			add("http.oidc.audience: required; set it to this server's resource URL, which the issuer puts in the token's aud claim")
		}
	}
}
