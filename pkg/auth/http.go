package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
)

// MetadataPath is where the OAuth 2.0 Protected Resource Metadata (RFC 9728) is served.
const MetadataPath = "/.well-known/oauth-protected-resource"

// Resource says where this server is reachable, for the metadata and the WWW-Authenticate header.
type Resource struct {
	// URL is the public URL of the MCP endpoint (e.g. https://dw-schema.example.com/mcp). Empty: it is
	// derived from each request's Host, which is right only without a TLS-terminating proxy.
	URL string
	// Path is the MCP endpoint's path on this server, used when URL is empty.
	Path string
	// Scopes are advertised in the metadata (optional).
	Scopes []string
}

func (res Resource) url(r *http.Request) string {
	if res.URL != "" {
		return res.URL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + res.Path
}

func (res Resource) metadataURL(r *http.Request) string {
	u := res.url(r)
	// RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.IndexByte(u[i+3:], '/'); j >= 0 {
			host, path := u[:i+3+j], strings.TrimSuffix(u[i+3+j:], "/")
			return host + MetadataPath + path
		}
	}
	return strings.TrimSuffix(u, "/") + MetadataPath
}

// Require lets through only requests a with an accepted bearer token, with the caller in their
// context. Others get 401 and a WWW-Authenticate header naming the resource metadata, as the MCP
// authorization spec asks of a resource server; each refusal is logged (with the reason, never the
// token) when logger is set. A nil a lets every request through anonymously.
func Require(a *Authenticator, res Resource, logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a == nil {
			next.ServeHTTP(w, r)
			return
		}
		c, err := a.Authenticate(r)
		if err != nil {
			if logger != nil {
				logger.Warn("request refused", "remote", r.RemoteAddr, "reason", err.Error())
			}
			challenge := fmt.Sprintf(`Bearer resource_metadata=%q`, res.metadataURL(r))
			if !errors.Is(err, ErrNoToken) {
				// RFC 6750 §3.1: a request without credentials gets no error code; a bad token does.
				challenge += fmt.Sprintf(`, error="invalid_token", error_description=%q`, strings.ReplaceAll(err.Error(), `"`, "'"))
			}
			w.Header().Set("WWW-Authenticate", challenge)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "unauthorized", "error_description": err.Error()})
			return
		}
		next.ServeHTTP(w, r.WithContext(WithCaller(r.Context(), c)))
	})
}

// metadata is the RFC 9728 document.
type metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// MetadataHandler serves the Protected Resource Metadata: the resource, and the OIDC issuer as its
// authorization server when one is configured.
func MetadataHandler(a *Authenticator, res Resource, name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		m := metadata{Resource: res.url(r), ScopesSupported: res.Scopes, BearerMethodsSupported: []string{"header"}, ResourceName: name}
		if a != nil && a.Issuer() != "" {
			m.AuthorizationServers = []string{a.Issuer()}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		_ = json.NewEncoder(w).Encode(m)
	})
}
