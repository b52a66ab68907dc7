// Package httpapi is the one JSON-over-HTTP client behind every REST backend (Kafka Connect,
// Confluent Cloud, Airflow, dbt Cloud): base URL, auth, a per-request timeout, retries with backoff
// on 429 and 5xx (honouring Retry-After), and errors that carry the status and the server's message.
package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Auth decorates a request with credentials.
type Auth func(*http.Request)

// Basic authenticates with a user name and password (Confluent API keys, Connect, Airflow 2).
func Basic(user, password string) Auth {
	return func(r *http.Request) {
		if user != "" || password != "" {
			r.SetBasicAuth(user, password)
		}
	}
}

// Bearer sends "Authorization: Bearer <token>" (Airflow 3).
func Bearer(token string) Auth {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

// TokenHeader sends "Authorization: Token <token>" (dbt Cloud).
func TokenHeader(token string) Auth {
	return func(r *http.Request) { r.Header.Set("Authorization", "Token "+token) }
}

// Client talks to one REST API.
type Client struct {
	// Name appears in errors: "kafka connect: GET /connectors: 401 Unauthorized: …".
	Name    string
	BaseURL *url.URL
	Auth    Auth
	HTTP    *http.Client
	// Timeout bounds each attempt; the caller's context bounds the whole call.
	Timeout time.Duration
	// Retries is how many times a 429, 5xx or network failure is retried (default 2).
	Retries int
	// Backoff is the first wait between attempts, doubled each time with jitter (default 200ms).
	Backoff time.Duration
	// ConfigKey names the config section, for messages that say what to fix.
	ConfigKey string
	// MaxBody bounds the bytes of one answer read into memory (default MaxBody); a larger answer
	// is an error, not a truncated read.
	MaxBody int64
	// URLKey is the config key of the base URL, named when the endpoint cannot be reached
	// (default ConfigKey + ".url").
	URLKey string
}

// New builds a client for baseURL.
func New(name, baseURL, configKey string, auth Auth, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s: invalid URL %q: set %s", name, baseURL, configKey)
	}
	return &Client{Name: name, BaseURL: u, Auth: auth, HTTP: &http.Client{}, Timeout: timeout, Retries: 2,
		Backoff: 200 * time.Millisecond, ConfigKey: configKey, URLKey: configKey + ".url"}, nil
}

// Error is a non-2xx answer.
type Error struct {
	API        string
	Method     string
	Path       string
	StatusCode int
	Status     string
	// Message is the server's explanation, taken from the usual JSON error fields or the body text.
	Message string
	// Code is the API's own error code when the body carries one (Schema Registry and Kafka
	// Connect "error_code", e.g. 40401), else 0.
	Code      int
	ConfigKey string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %s %s: %s", e.API, e.Method, e.Path, e.Status)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	switch e.StatusCode {
	case http.StatusUnauthorized:
		msg += fmt.Sprintf(" (check the credentials in %s)", e.ConfigKey)
	case http.StatusForbidden:
		msg += " (the credentials are valid but lack permission for this resource)"
	}
	return msg
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// Do sends method to path (relative to the base URL, already escaped by the caller with
// url.PathEscape for each segment) with an optional JSON body, and decodes a JSON answer into out
// (nil to discard).
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.DoContentType(ctx, method, path, query, "application/json", body, out)
}

// DoContentType is Do with an explicit request content type (e.g. application/json-patch+json).
func (c *Client) DoContentType(ctx context.Context, method, path string, query url.Values, contentType string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("%s: encode request: %w", c.Name, err)
		}
	}
	target := *c.BaseURL
	rel, err := url.Parse(path)
	if err != nil {
		return fmt.Errorf("%s: bad path %q: %w", c.Name, path, err)
	}
	target.Path = c.BaseURL.Path + rel.Path
	target.RawPath = ""
	if rel.RawPath != "" {
		target.RawPath = c.BaseURL.EscapedPath() + rel.RawPath
	}
	if query != nil {
		target.RawQuery = query.Encode()
	}
	// Timeout is the budget of the whole call, retries included, so a failing backend is an error
	// within the configured time, however many retries or Retry-After waits it asks for.
	var budgetEnd time.Time
	if c.Timeout > 0 {
		budgetEnd = time.Now().Add(c.Timeout)
	}
	var lastErr error
	for attempt := 0; attempt <= c.Retries; attempt++ {
		if attempt > 0 {
			w := c.wait(attempt, lastErr)
			if !budgetEnd.IsZero() && time.Now().Add(w).After(budgetEnd) {
				return fmt.Errorf("%w (gave up retrying: the next attempt would exceed %s.timeout %s)", lastErr, c.ConfigKey, c.Timeout)
			}
			if err := sleep(ctx, w); err != nil {
				return fmt.Errorf("%s: %s %s: %w (last error: %v)", c.Name, method, path, err, lastErr)
			}
		}
		retry, err := c.once(ctx, budgetEnd, method, target.String(), path, contentType, payload, out)
		if err == nil {
			return nil
		}
		lastErr = err
		if !retry || ctx.Err() != nil {
			return err
		}
	}
	return lastErr
}

type retryAfterError struct {
	error
	after time.Duration
}

func (c *Client) once(ctx context.Context, budgetEnd time.Time, method, target, path, contentType string, payload []byte, out any) (retry bool, err error) {
	actx := ctx
	if !budgetEnd.IsZero() {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(ctx, budgetEnd)
		defer cancel()
	}
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(actx, method, target, rd)
	if err != nil {
		return false, fmt.Errorf("%s: %w", c.Name, err)
	}
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Auth != nil {
		c.Auth(req)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			// Not retried: a backend that is slow once is slow again, and the caller was promised an
			// answer within the configured timeout.
			return false, fmt.Errorf("%s: %s %s: no answer within %s (raise %s.timeout, or check the endpoint)", c.Name, method, path, c.Timeout, c.ConfigKey)
		}
		return true, fmt.Errorf("%s: %s %s: %w (is %s reachable? check %s)", c.Name, method, path, scrubURLError(err), c.BaseURL.Host, c.urlKey())
	}
	defer resp.Body.Close()
	limit := c.MaxBody
	if limit <= 0 {
		limit = MaxBody
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return true, fmt.Errorf("%s: %s %s: read body: %w", c.Name, method, path, err)
	}
	if int64(len(data)) > limit {
		// Not the documented answer of any API we call; reading on would only fill memory.
		return false, fmt.Errorf("%s: %s %s: the answer is larger than %d bytes, not the documented response (check %s)", c.Name, method, path, limit, c.urlKey())
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		apiErr := &Error{API: c.Name, Method: method, Path: path, StatusCode: resp.StatusCode, Status: resp.Status,
			Message: scrubCredentials(errorMessage(data), req.Header.Get("Authorization")), Code: errorCode(data), ConfigKey: c.ConfigKey}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return true, retryAfterError{apiErr, retryAfter(resp.Header.Get("Retry-After"))}
		}
		return false, apiErr
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, fmt.Errorf("%s: %s %s: unexpected answer (not the documented JSON): %s (check %s)", c.Name, method, path, describeJSONError(err), c.urlKey())
	}
	return false, nil
}

// MaxBody bounds an answer read into memory: every documented answer is far smaller.
const MaxBody = 32 << 20

func (c *Client) urlKey() string {
	if c.URLKey != "" {
		return c.URLKey
	}
	return c.ConfigKey + ".url"
}

// describeJSONError says what was wrong with an answer without quoting it: the answer of a
// misconfigured endpoint (or a proxy's page) may hold anything.
func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("a JSON %s where %s was expected at byte %d", typ.Value, typ.Type, typ.Offset)
	}
	return "invalid JSON"
}

// scrubCredentials removes from a backend's message every form of the credentials we sent with
// the request: a backend or proxy that echoes the request's headers would otherwise relay them.
func scrubCredentials(msg, authorization string) string {
	for _, f := range CredentialForms(authorization) {
		msg = strings.ReplaceAll(msg, f, "[redacted]")
	}
	return msg
}

// CredentialForms lists the forms an Authorization header's credentials can take in an echo: the
// whole value, the credentials after the scheme, for Basic the decoded user:password and
// password, and each of those percent-encoded. Forms shorter than 4 bytes are left out, as they
// would scrub ordinary words.
func CredentialForms(authorization string) []string {
	if authorization == "" {
		return nil
	}
	forms := []string{authorization}
	scheme, cred, ok := strings.Cut(authorization, " ")
	if ok {
		forms = append(forms, cred)
		if strings.EqualFold(scheme, "Basic") {
			if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
				forms = append(forms, string(dec))
				if _, pw, ok := strings.Cut(string(dec), ":"); ok {
					forms = append(forms, pw)
				}
			}
			forms = append(forms, strings.TrimRight(cred, "="))
		}
	}
	for _, f := range slices.Clone(forms) {
		forms = append(forms, url.QueryEscape(f), url.PathEscape(f))
	}
	var out []string
	for _, f := range forms {
		if len(f) >= 4 && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	// Longest first, so a whole form is replaced before a part of it.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func (e retryAfterError) Unwrap() error { return e.error }

func (c *Client) wait(attempt int, last error) time.Duration {
	var ra retryAfterError
	if errors.As(last, &ra) && ra.after > 0 {
		return min(ra.after, 30*time.Second)
	}
	d := c.Backoff << (attempt - 1)
	return d/2 + rand.N(d/2+1)
}

func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return time.Until(t)
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errorMessage pulls the human message out of the error shapes these APIs use: Connect
// {"error_code","message"}, Confluent {"errors":[{"detail"}]}, dbt Cloud {"status":{"user_message"}},
// Airflow/FastAPI {"detail"} or {"title","detail"}.
func errorMessage(body []byte) string {
	var v struct {
		Message string `json:"message"`
		Detail  any    `json:"detail"`
		Title   string `json:"title"`
		Error   any    `json:"error"`
		Errors  []struct {
			Detail string `json:"detail"`
			Title  string `json:"title"`
		} `json:"errors"`
		Status struct {
			UserMessage      string `json:"user_message"`
			DeveloperMessage string `json:"developer_message"`
		} `json:"status"`
	}
	if json.Unmarshal(body, &v) == nil {
		switch {
		case v.Message != "":
			return v.Message
		case len(v.Errors) > 0 && (v.Errors[0].Detail != "" || v.Errors[0].Title != ""):
			if v.Errors[0].Detail != "" {
				return v.Errors[0].Detail
			}
			return v.Errors[0].Title
		case v.Status.UserMessage != "":
			return v.Status.UserMessage
		case v.Detail != nil:
			if s, ok := v.Detail.(string); ok {
				return s
			}
			b, _ := json.Marshal(v.Detail)
			return string(b)
		case v.Error != nil:
			if s, ok := v.Error.(string); ok {
				return s
			}
		case v.Title != "":
			return v.Title
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// errorCode reads an integer "error_code" from a JSON error body (0 when absent).
func errorCode(body []byte) int {
	var v struct {
		ErrorCode int `json:"error_code"`
	}
	_ = json.Unmarshal(body, &v)
	return v.ErrorCode
}

// scrubURLError drops the URL (which may carry a query token) from a transport error.
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
