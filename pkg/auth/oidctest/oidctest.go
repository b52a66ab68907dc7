// Package oidctest is a loopback OpenID Connect issuer for tests: an RSA key generated at start,
// the discovery document and the JWKS served on 127.0.0.1, and signed access tokens on demand.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a running test issuer.
type Issuer struct {
	URL     string
	key     *rsa.PrivateKey
	keyID   string
	signer  jose.Signer
	JWKSHit atomic.Int64 // how many times the JWKS was fetched
}

// Start runs an issuer until the test ends.
func Start(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &Issuer{key: key, keyID: "test-key-1"}
	iss.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: iss.keyID}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss.URL = srv.URL
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": iss.URL, "jwks_uri": iss.URL + "/jwks", "authorization_endpoint": iss.URL + "/authorize",
			"token_endpoint": iss.URL + "/token", "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		iss.JWKSHit.Add(1)
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: iss.keyID, Algorithm: "RS256", Use: "sig"}}})
	})
	return iss
}

// Claims of a token to sign; zero Expiry means an hour from now.
type Claims struct {
	Subject, Audience, Email string
	Expiry                   time.Time
	// Issuer overrides the issuer (to forge a token from another one).
	Issuer string
}

// Token signs an access token with the issuer's key.
func (iss *Issuer) Token(t testing.TB, c Claims) string {
	t.Helper()
	return iss.sign(t, iss.signer, c)
}

// ForeignToken signs with a key the issuer never published (a forged token).
func (iss *Issuer) ForeignToken(t testing.TB, c Claims) string {
	t.Helper()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: other, KeyID: iss.keyID}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return iss.sign(t, s, c)
}

func (iss *Issuer) sign(t testing.TB, s jose.Signer, c Claims) string {
	if c.Expiry.IsZero() {
		c.Expiry = time.Now().Add(time.Hour)
	}
	if c.Issuer == "" {
		c.Issuer = iss.URL
	}
	std := jwt.Claims{Issuer: c.Issuer, Subject: c.Subject, Audience: jwt.Audience{c.Audience},
		Expiry: jwt.NewNumericDate(c.Expiry), IssuedAt: jwt.NewNumericDate(time.Now().Add(-time.Minute))}
	b := jwt.Signed(s).Claims(std)
	if c.Email != "" {
		b = b.Claims(map[string]any{"email": c.Email})
	}
	raw, err := b.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
