package mcpkit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// redactResult scrubs secrets from every text and the structured content of a result, error or
// not: a successful result can carry a backend's error text (check_connections, remediate's
// actions, approval notifications) as well as an error result can. In JSON only string values are
// scrubbed: object keys are names the result's shape depends on (a secret such as "airflow" must
// not rename "airflow_url"), and a number stays a number so the result still matches its schema.
func redactResult(res *mcp.CallToolResult, redact func(string) string) {
	if res == nil || redact == nil {
		return
	}
	for i, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			tc.Text = redactText(tc.Text, redact)
			res.Content[i] = tc
		}
	}
	if res.StructuredContent != nil {
		if v, changed := redactValue(res.StructuredContent, redact); changed {
			res.StructuredContent = v
		}
	}
}

// redactText scrubs a text. A JSON text is scrubbed string value by string value, so a secret
// that JSON escapes (a quote, a backslash, <, > or &) is found in its decoded form, the text stays
// JSON and its keys and numbers are kept. Any other text is scrubbed as it is.
func redactText(text string, redact func(string) string) string {
	clean := redact(text)
	if clean == text && !strings.ContainsRune(text, '\\') {
		return text // no escapes: every decoded string is a substring of text, and none held a secret
	}
	if !json.Valid([]byte(text)) {
		return clean
	}
	var v any
	if decode([]byte(text), &v) != nil {
		return clean
	}
	w, changed := walk(v, redact)
	if !changed {
		return text // the secret was only in a key or a number, which are kept
	}
	b, err := json.Marshal(w)
	if err != nil {
		return clean // secrecy before validity
	}
	return string(b)
}

// redactValue marshals v, scrubs every string value in it and returns the scrubbed value, or v
// itself (changed false) when no string value held a secret, so clean results keep their Go types.
func redactValue(v any, redact func(string) string) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	if !bytes.ContainsRune(b, '\\') && redact(string(b)) == string(b) {
		return v, false // as in redactText: nothing escaped, nothing secret
	}
	var generic any
	if decode(b, &generic) != nil {
		return v, false
	}
	w, changed := walk(generic, redact)
	if !changed {
		return v, false
	}
	return w, true
}

// decode keeps numbers as json.Number so a re-encoded result loses no precision.
func decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// walk scrubs the string values in a decoded JSON value; keys and numbers are left as they are.
func walk(v any, redact func(string) string) (any, bool) {
	switch x := v.(type) {
	case string:
		r := redact(x)
		return r, r != x
	case []any:
		changed := false
		for i, e := range x {
			var c bool
			if x[i], c = walk(e, redact); c {
				changed = true
			}
		}
		return x, changed
	case map[string]any:
		changed := false
		for k, e := range x {
			var c bool
			if x[k], c = walk(e, redact); c {
				changed = true
			}
		}
		return x, changed
	}
	return v, false
}

// RedactingLogger returns a logger whose every record — message, string attributes, errors and
// anything else printed — is scrubbed of secrets before it is written.
func RedactingLogger(l *slog.Logger, redact func(string) string) *slog.Logger {
	if l == nil || redact == nil {
		return l
	}
	if _, ok := l.Handler().(*redactHandler); ok {
		return l
	}
	return slog.New(&redactHandler{next: l.Handler(), redact: redact})
}

type redactHandler struct {
	next   slog.Handler
	redact func(string) string
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(clean), redact: h.redact}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name), redact: h.redact}
}

// attr scrubs one attribute: strings and groups directly; errors, Stringers and other values by
// the text they would be logged as.
func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindAny:
		var text string
		switch x := v.Any().(type) {
		case error:
			text = x.Error()
		case fmt.Stringer:
			text = x.String()
		default:
			if _, err := json.Marshal(x); err != nil {
				text = fmt.Sprint(x) // logged by its printed form
				break
			}
			if w, changed := redactValue(x, h.redact); changed {
				return slog.Any(a.Key, w)
			}
			return slog.Attr{Key: a.Key, Value: v}
		}
		if r := h.redact(text); r != text {
			return slog.String(a.Key, r)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

type loggerKey struct{}

// loggerFrom is the server's (redacting) logger for a call, else slog's default.
func loggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.Default()
}

// NewRedactor is the config's redactor widened to every form in which a configured credential
// leaves the process: a backend or proxy that echoes our request can relay the Authorization
// header (base64 of user:password, a bearer or token header) or a percent-encoded secret, and
// the plain secret alone would not match those.
func NewRedactor(cfg *config.Config) *config.Redactor {
	r := cfg.NewRedactor()
	for _, s := range SecretForms(cfg) {
		r.Add(s)
	}
	return r
}

// SecretForms lists the encoded forms of the configured credentials: for each user and password
// sent as HTTP Basic auth, the header, its base64 and their percent-encodings; for each token the
// Bearer and Token headers; for every secret its percent-encodings.
func SecretForms(cfg *config.Config) []string {
	var out []string
	basic := func(user, password string) {
		if password == "" {
			return
		}
		out = append(out, httpapi.CredentialForms("Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password)))...)
	}
	token := func(tok string) {
		if tok == "" {
			return
		}
		out = append(out, httpapi.CredentialForms("Bearer "+tok)...)
		out = append(out, httpapi.CredentialForms("Token "+tok)...)
	}
	if r := cfg.SchemaRegistry; r != nil {
		basic(r.Username, r.Password)
	}
	if c := cfg.Connect; c != nil {
		basic(c.Username, c.Password)
	}
	if cc := cfg.ConfluentCloud; cc != nil {
		basic(cc.APIKey, cc.APISecret)
		basic(cc.FlinkAPIKey, cc.FlinkAPISecret)
	}
	if a := cfg.Airflow; a != nil {
		basic(a.Username, a.Password)
		token(a.Token)
	}
	if d := cfg.DBT; d != nil && d.Cloud != nil {
		token(d.Cloud.Token)
	}
	for _, s := range cfg.Secrets() {
		for _, f := range []string{url.QueryEscape(s), url.PathEscape(s)} {
			if f != s {
				out = append(out, f)
			}
		}
	}
	return out
}
