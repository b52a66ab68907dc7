package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/auth"
	"github.com/dataworkers/dw/pkg/auth/oidctest"
)

const audience = "http://127.0.0.1/mcp"

func newAuth(t *testing.T, iss *oidctest.Issuer, claim string) *auth.Authenticator {
	t.Helper()
	o := auth.Options{Tokens: []auth.Token{{Name: "ci-bot", SHA256: auth.HashToken("s3cret-ci-token")}}}
	if iss != nil {
		o.OIDC = &auth.OIDC{Issuer: iss.URL, Audience: audience, CallerClaim: claim}
	}
	a, err := auth.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func request(header string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	if header != "" {
		r.Header.Set("Authorization", header)
	}
	return r
}

func TestStaticTokensNameTheirCaller(t *testing.T) {
	a := newAuth(t, nil, "")
	c, err := a.Authenticate(request("Bearer s3cret-ci-token"))
	if err != nil || c.Name != "ci-bot" || c.Method != "token" {
		t.Fatalf("caller=%+v err=%v", c, err)
	}
	for header, want := range map[string]error{
		"":                    auth.ErrNoToken,
		"Bearer wrong-token":  auth.ErrInvalidToken,
		"Basic czNjcmV0":      auth.ErrInvalidToken,
		"Bearer ":             auth.ErrInvalidToken,
		"s3cret-ci-token":     auth.ErrInvalidToken,
		"bearer a.b.c":        auth.ErrInvalidToken, // looks like a JWT, but no issuer is configured
		"Bearer s3cret-ci-to": auth.ErrInvalidToken,
	} {
		if _, err := a.Authenticate(request(header)); !errors.Is(err, want) {
			t.Errorf("%q: err=%v, want %v", header, err, want)
		}
		if _, err := a.Authenticate(request(header)); err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the error echoes the token: %v", header, err)
		}
	}
}

func TestBadTokenConfigIsRefused(t *testing.T) {
	for _, o := range []auth.Options{
		{Tokens: []auth.Token{{Name: "a", SHA256: "not-hex"}}},
		{Tokens: []auth.Token{{Name: "", SHA256: auth.HashToken("x")}}},
		{Tokens: []auth.Token{{Name: "a", SHA256: auth.HashToken("x")}, {Name: "b", SHA256: auth.HashToken("x")}}},
	} {
		if _, err := auth.New(context.Background(), o); err == nil {
			t.Errorf("%+v accepted", o.Tokens)
		}
	}
	if _, err := auth.New(context.Background(), auth.Options{OIDC: &auth.OIDC{Issuer: "http://127.0.0.1:1", Audience: audience}}); err == nil {
		t.Error("an unreachable issuer was accepted at start")
	}
}

func TestOIDCAccessTokensAreValidatedAsAResourceServer(t *testing.T) {
	iss := oidctest.Start(t)
	a := newAuth(t, iss, "email")
	good := iss.Token(t, oidctest.Claims{Subject: "u-1", Email: "alice@example.com", Audience: audience})
	c, err := a.Authenticate(request("Bearer " + good))
	if err != nil || c.Name != "alice@example.com" || c.Method != "oidc" {
		t.Fatalf("caller=%+v err=%v", c, err)
	}
	cases := map[string]struct {
		token string
		want  string
	}{
		"expired":        {iss.Token(t, oidctest.Claims{Subject: "u-1", Email: "a@x", Audience: audience, Expiry: time.Now().Add(-time.Minute)}), "expired"},
		"wrong audience": {iss.Token(t, oidctest.Claims{Subject: "u-1", Email: "a@x", Audience: "http://other/mcp"}), "audience"},
		"wrong issuer":   {iss.Token(t, oidctest.Claims{Subject: "u-1", Email: "a@x", Audience: audience, Issuer: "http://127.0.0.1:9/"}), "different provider"},
		"forged":         {iss.ForeignToken(t, oidctest.Claims{Subject: "u-1", Email: "a@x", Audience: audience}), "signature"},
		"no caller":      {iss.Token(t, oidctest.Claims{Subject: "u-1", Audience: audience}), `"email"`},
		"garbage":        {"a.b.c", ""},
	}
	for name, tc := range cases {
		_, err := a.Authenticate(request("Bearer " + tc.token))
		if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err=%v, want invalid token mentioning %q", name, err, tc.want)
		}
	}
	if iss.JWKSHit.Load() == 0 {
		t.Error("the JWKS was never fetched")
	}
}

func TestRequireAnswers401WithTheMetadataChallenge(t *testing.T) {
	iss := oidctest.Start(t)
	a := newAuth(t, iss, "")
	res := auth.Resource{URL: "https://dw.example.com/mcp"}
	var seen string
	h := auth.Require(a, res, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = auth.CallerName(r.Context())
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, request(""))
	wantMeta := `resource_metadata="https://dw.example.com/.well-known/oauth-protected-resource/mcp"`
	if got := rec.Header().Get("WWW-Authenticate"); rec.Code != 401 || got != "Bearer "+wantMeta {
		t.Fatalf("missing token: %d %q", rec.Code, got)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, request("Bearer nope"))
	if got := rec.Header().Get("WWW-Authenticate"); rec.Code != 401 || !strings.HasPrefix(got, "Bearer "+wantMeta+`, error="invalid_token", error_description=`) {
		t.Fatalf("wrong token: %d %q", rec.Code, got)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, request("Bearer "+iss.Token(t, oidctest.Claims{Subject: "bob", Audience: audience})))
	if rec.Code != 200 || seen != "bob" {
		t.Fatalf("good token: %d caller %q", rec.Code, seen)
	}
}

func TestMetadataNamesTheResourceAndIssuer(t *testing.T) {
	iss := oidctest.Start(t)
	a := newAuth(t, iss, "")
	rec := httptest.NewRecorder()
	auth.MetadataHandler(a, auth.Resource{Path: "/mcp", Scopes: []string{"mcp"}}, "dw-test").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+auth.MetadataPath, nil))
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["resource"] != "http://127.0.0.1:8080/mcp" || m["authorization_servers"].([]any)[0] != iss.URL || m["scopes_supported"].([]any)[0] != "mcp" {
		t.Fatalf("metadata = %v", m)
	}
}

func TestOnBehalfNamesAgentAndCaller(t *testing.T) {
	ctx := context.Background()
	if got := auth.OnBehalf(ctx, "dw-incidents"); got != "dw-incidents" {
		t.Fatal(got)
	}
	if got := auth.OnBehalf(auth.WithCaller(ctx, auth.Caller{Name: "alice", Method: "token"}), "dw-incidents"); got != "dw-incidents for alice" {
		t.Fatal(got)
	}
}

// FuzzAuthenticate: no Authorization header crashes the check or gets in without the token.
func FuzzAuthenticate(f *testing.F) {
	for _, s := range []string{"", "Bearer x", "Bearer a.b.c", "bearer  s3cret-ci-token ", "Bearer eyJhbGciOiJub25lIn0.e30.", "Basic Og=="} {
		f.Add(s)
	}
	a, err := auth.New(context.Background(), auth.Options{Tokens: []auth.Token{{Name: "ci-bot", SHA256: auth.HashToken("s3cret-ci-token")}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		r.Header["Authorization"] = []string{header}
		c, err := a.Authenticate(r)
		if err == nil && (c.Name != "ci-bot" || !strings.Contains(header, "s3cret-ci-token")) {
			t.Fatalf("%q let in %+v", header, c)
		}
	})
}
