// Package auth authenticates the callers of an agent served over HTTP: bearer tokens whose SHA-256
// is configured per named caller, and OAuth 2.1 / OIDC access tokens validated as a resource server
// (signature from the issuer's JWKS, issuer, audience, expiry). The caller's name travels in the
// request context so the audit log, actions and approval requests can name who caused them.
package auth

import (
	"context"
	"strings"
)

// Caller is who made a request.
type Caller struct {
	// Name is the configured token name, or the OIDC claim chosen to name the person.
	Name string
	// Method is how the caller proved it: "token" or "oidc".
	Method string
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller in ctx, if any (none on stdio: the local user runs the process).
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok && c.Name != ""
}

// CallerName is the caller's name, or "" when the request has none.
func CallerName(ctx context.Context) string {
	c, _ := CallerFrom(ctx)
	return c.Name
}

// OnBehalf names an agent acting for the caller in ctx ("dw-incidents for alice"), or the agent
// alone when there is no caller, so timelines and approval requests show who caused them.
func OnBehalf(ctx context.Context, agent string) string {
	if name := CallerName(ctx); name != "" {
		return agent + " for " + name
	}
	return agent
}

// ActedFor reports whether actor — a name OnBehalf wrote — is name itself or an agent acting for
// name: the person a request names, however it reached us.
func ActedFor(actor, name string) bool {
	if name == "" {
		return false
	}
	_, caller, found := strings.Cut(actor, " for ")
	return actor == name || (found && caller == name)
}
