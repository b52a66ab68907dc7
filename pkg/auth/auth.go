package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Token is one configured bearer token: a caller's name and the SHA-256 (hex) of the secret.
type Token struct {
	Name   string
	SHA256 string
}

// OIDC configures access-token validation against one issuer.
type OIDC struct {
	// Issuer is the issuer URL; its discovery document names the JWKS.
	Issuer string
	// Audience must appear in the token's aud claim (this server's resource identifier).
	Audience string
	// CallerClaim names the caller (default "sub"; e.g. "email" or "preferred_username").
	CallerClaim string
}

// Options configure New.
type Options struct {
	Tokens []Token
	OIDC   *OIDC
	// HTTPClient fetches the discovery document and the JWKS (default http.DefaultClient).
	HTTPClient *http.Client
}

// Authenticator checks the bearer token of each request.
type Authenticator struct {
	tokens   map[string]string // hex SHA-256 -> caller name
	verifier *oidc.IDTokenVerifier
	claim    string
	issuer   string
}

// ErrNoToken means the request carried no bearer token.
var ErrNoToken = errors.New("no bearer token")

// ErrInvalidToken means the token was presented but is not accepted.
var ErrInvalidToken = errors.New("invalid token")

// New builds an authenticator. With OIDC configured it fetches the issuer's discovery document now,
// so a wrong issuer fails at start rather than on the first request; ctx bounds that fetch only.
func New(ctx context.Context, o Options) (*Authenticator, error) {
	a := &Authenticator{tokens: map[string]string{}}
	for i, t := range o.Tokens {
		sum := strings.ToLower(strings.TrimSpace(t.SHA256))
		if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("token %d (%s): sha256 must be 64 hex digits", i, t.Name)
		}
		if t.Name == "" {
			return nil, fmt.Errorf("token %d: name is required (it names the caller in the audit log)", i)
		}
		if prev, dup := a.tokens[sum]; dup {
			return nil, fmt.Errorf("tokens %s and %s share one secret", prev, t.Name)
		}
		a.tokens[sum] = t.Name
	}
	if o.OIDC != nil {
		client := o.HTTPClient
		if client == nil {
			client = http.DefaultClient
		}
		// The key set keeps the context for later JWKS refreshes: it must outlive start-up.
		keyCtx := oidc.ClientContext(context.WithoutCancel(ctx), client)
		discoverCtx, cancel := context.WithTimeout(oidc.ClientContext(ctx, client), 30*time.Second)
		defer cancel()
		p, err := oidc.NewProvider(discoverCtx, o.OIDC.Issuer)
		if err != nil {
			return nil, fmt.Errorf("oidc issuer %s: %w", o.OIDC.Issuer, err)
		}
		var meta struct {
			JWKSURI string   `json:"jwks_uri"`
			Algs    []string `json:"id_token_signing_alg_values_supported"`
		}
		if err := p.Claims(&meta); err != nil {
			return nil, fmt.Errorf("oidc issuer %s: discovery document: %w", o.OIDC.Issuer, err)
		}
		if meta.JWKSURI == "" {
			return nil, fmt.Errorf("oidc issuer %s: discovery document has no jwks_uri", o.OIDC.Issuer)
		}
		keys := oidc.NewRemoteKeySet(keyCtx, meta.JWKSURI)
		a.verifier = oidc.NewVerifier(o.OIDC.Issuer, keys, &oidc.Config{
			ClientID:             o.OIDC.Audience,
			SupportedSigningAlgs: []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.EdDSA},
		})
		a.claim = o.OIDC.CallerClaim
		if a.claim == "" {
			a.claim = "sub"
		}
		a.issuer = o.OIDC.Issuer
	}
	return a, nil
}

// Configured reports whether any way to authenticate is set up.
func (a *Authenticator) Configured() bool {
	return a != nil && (len(a.tokens) > 0 || a.verifier != nil)
}

// Issuer is the OIDC issuer, or "" (for the Protected Resource Metadata).
func (a *Authenticator) Issuer() string { return a.issuer }

// Authenticate returns the caller of r. The error wraps ErrNoToken or ErrInvalidToken; its text is
// safe to return to the client (it never contains the token).
func (a *Authenticator) Authenticate(r *http.Request) (Caller, error) {
	raw, err := bearer(r)
	if err != nil {
		return Caller{}, err
	}
	if name, ok := a.tokens[HashToken(raw)]; ok {
		return Caller{Name: name, Method: "token"}, nil
	}
	if a.verifier == nil || strings.Count(raw, ".") != 2 {
		return Caller{}, fmt.Errorf("%w: unknown token", ErrInvalidToken)
	}
	tok, err := a.verifier.Verify(r.Context(), raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return Caller{}, fmt.Errorf("%w: token expired at %s", ErrInvalidToken, expired.Expiry.UTC().Format(time.RFC3339))
		}
		return Caller{}, fmt.Errorf("%w: %s", ErrInvalidToken, strings.TrimPrefix(err.Error(), "oidc: "))
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Caller{}, fmt.Errorf("%w: claims: %v", ErrInvalidToken, err)
	}
	name, _ := claims[a.claim].(string)
	if name == "" {
		return Caller{}, fmt.Errorf("%w: token has no %q claim to name the caller", ErrInvalidToken, a.claim)
	}
	return Caller{Name: name, Method: "oidc"}, nil
}

func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", ErrNoToken
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", fmt.Errorf("%w: Authorization must be \"Bearer <token>\"", ErrInvalidToken)
	}
	return strings.TrimSpace(tok), nil
}

// HashToken is the hex SHA-256 of a secret, as configured in http.tokens[].sha256.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
