// Package srtest is plumbing: franz-go's srfake Schema Registry served on loopback with our own
// compatibility checker (pkg/schema/compat) plugged into its Intercept hook, so the registry
// client's register and compatibility paths run over real HTTP with the registry's shapes: POST
// /compatibility/... answers with verbose messages, an incompatible POST /subjects/{s}/versions
// is refused with HTTP 409 and error_code 40901, the level read from the subject's /config, which
// also keeps compatibilityGroup and compatibilityPolicy (srfake drops them).
//
// Every verdict it returns comes from our checker, so a test that finds srtest "agreeing" with
// check_compatibility has exercised the wiring, never the rules: how closely the checker follows
// Confluent's registry is measured against the registry's own published cases and stated in
// docs/reference/schema-rules.md. Tests and the demo use it.
package srtest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// Options configure Start; the zero value serves on a random loopback port without auth.
type Options struct {
	// Addr is the loopback address to listen on, e.g. "127.0.0.1:8081"; default "127.0.0.1:0".
	Addr string
	// Username and Password, when set, are required as HTTP basic auth on every request, as
	// Confluent Cloud requires its API key and secret.
	Username, Password string
}

// Server is a running fake registry.
type Server struct {
	// Registry is the in-memory srfake registry, for seeding (SeedSchema, SetCompat).
	Registry *srfake.Registry
	// URL is the base URL, http://127.0.0.1:PORT.
	URL string
	srv *http.Server
	ln  net.Listener
}

// Start listens on opts.Addr (loopback only) and serves until Close.
func Start(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("srtest: bad address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("srtest: %s is not a loopback address", addr)
	}
	reg := srfake.NewRegistry()
	cfg := &configs{bySubject: map[string]extraConfig{}}
	reg.Intercept(cfg.intercept(reg))
	reg.Intercept(checker{reg: reg, cfg: cfg}.intercept)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("srtest: listen %s: %w", addr, err)
	}
	var h http.Handler = reg.Handler()
	if opts.Username != "" || opts.Password != "" {
		h = basicAuth(opts.Username, opts.Password, h)
	}
	s := &Server{Registry: reg, URL: "http://" + ln.Addr().String(), ln: ln,
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func basicAuth(user, pass string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(pass)) != 1 {
			writeError(w, http.StatusUnauthorized, 40101, "Unauthorized")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"error_code": code, "message": msg})
}

type checker struct {
	reg *srfake.Registry
	cfg *configs
}

type metadata struct {
	Properties map[string]string `json:"properties"`
}

type body struct {
	Schema     string    `json:"schema"`
	SchemaType string    `json:"schemaType"`
	Metadata   *metadata `json:"metadata"`
	References []struct {
		Name    string `json:"name"`
		Subject string `json:"subject"`
		Version int    `json:"version"`
	} `json:"references"`
}

type regError struct {
	status, code int
	msg          string
}

func (e *regError) Error() string { return e.msg }

// intercept handles the two endpoints srfake leaves unjudged and passes everything else on.
func (c checker) intercept(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var subject, version string
	register := false
	switch {
	case len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions":
		subject, register = parts[1], true
	case len(parts) == 4 && parts[0] == "compatibility" && parts[1] == "subjects" && parts[3] == "versions":
		subject = parts[2]
	case len(parts) == 5 && parts[0] == "compatibility" && parts[1] == "subjects" && parts[3] == "versions":
		subject, version = parts[2], parts[4]
	default:
		return false
	}
	if s, err := url.PathUnescape(subject); err == nil {
		subject = s
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, 42201, "cannot read request body")
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(raw)) // srfake reads it again on pass-through
	var b body
	if err := json.Unmarshal(raw, &b); err != nil {
		writeError(w, http.StatusUnprocessableEntity, 42201, "Invalid schema: "+err.Error())
		return true
	}
	res, err := c.judge(subject, version, register, b)
	if err != nil {
		var re *regError
		if errors.As(err, &re) {
			writeError(w, re.status, re.code, re.msg)
		} else {
			writeError(w, http.StatusInternalServerError, 50001, err.Error())
		}
		return true
	}
	if register {
		if res == nil || res.Compatible {
			return false // srfake registers it
		}
		writeError(w, http.StatusConflict, 40901, fmt.Sprintf("Schema being registered is incompatible with an earlier schema for subject %q, details: %s",
			subject, strings.Join(messages(res), "; ")))
		return true
	}
	out := map[string]any{"is_compatible": res == nil || res.Compatible}
	if r.URL.Query().Get("verbose") == "true" {
		out["messages"] = messages(res)
	}
	writeJSON(w, http.StatusOK, out)
	return true
}

func messages(res *compat.Result) []string {
	out := []string{}
	if res == nil {
		return out
	}
	for _, in := range res.Incompatibilities {
		out = append(out, fmt.Sprintf("{errorType:'%s', description:'%s', path:'%s'}", in.Type, in.Message, in.Path))
	}
	if !res.Compatible && len(res.Incompatibilities) > 0 {
		out = append(out, fmt.Sprintf("{oldSchemaVersion: %d}", res.Incompatibilities[0].OldVersion),
			fmt.Sprintf("{compatibility: '%s'}", res.Level))
	}
	return out
}

// get reads from srfake's own REST handler in process, so the checker sees exactly what a client
// would (soft deletes, the level with defaultToGlobal).
func (c checker) get(path string, out any) (int, error) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	rec := httptest.NewRecorder()
	c.reg.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return rec.Code, nil
	}
	return rec.Code, json.Unmarshal(rec.Body.Bytes(), out)
}

type stored struct {
	Version    int       `json:"version"`
	SchemaType string    `json:"schemaType"`
	Schema     string    `json:"schema"`
	Metadata   *metadata `json:"metadata"`
	References []struct {
		Name    string `json:"name"`
		Subject string `json:"subject"`
		Version int    `json:"version"`
	} `json:"references"`
}

func (c checker) refs(refs []struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}, depth int) ([]schema.Reference, error) {
	if depth > 16 {
		return nil, &regError{http.StatusUnprocessableEntity, 42201, "Invalid schema: references nest too deep"}
	}
	var out []schema.Reference
	for _, r := range refs {
		var s stored
		code, err := c.get(fmt.Sprintf("/subjects/%s/versions/%d", url.PathEscape(r.Subject), r.Version), &s)
		if err != nil {
			return nil, err
		}
		if code != http.StatusOK {
			return nil, &regError{http.StatusUnprocessableEntity, 42201, fmt.Sprintf("Invalid schema: reference %q subject %q version %d not found", r.Name, r.Subject, r.Version)}
		}
		inner, err := c.refs(s.References, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, inner...)
		out = append(out, schema.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version, Schema: s.Schema})
	}
	return out, nil
}

func (c checker) judge(subject, version string, register bool, b body) (*compat.Result, error) {
	format, err := schema.ParseFormat(b.SchemaType)
	if err != nil {
		return nil, &regError{http.StatusUnprocessableEntity, 42201, "Invalid schema: " + err.Error()}
	}
	refs, err := c.refs(b.References, 0)
	if err != nil {
		return nil, err
	}
	proposed, err := schema.Parse(format, b.Schema, refs...)
	if err != nil {
		return nil, &regError{http.StatusUnprocessableEntity, 42201, "Invalid schema: " + err.Error()}
	}
	var cfg struct {
		CompatibilityLevel string `json:"compatibilityLevel"`
	}
	if _, err := c.get("/config/"+url.PathEscape(subject)+"?defaultToGlobal=true", &cfg); err != nil {
		return nil, err
	}
	level, err := compat.ParseLevel(cfg.CompatibilityLevel)
	if err != nil {
		return nil, err
	}
	extra := c.cfg.effective(subject)
	policy, err := compat.ParsePolicy(extra.Policy)
	if err != nil {
		return nil, err
	}
	var versions []int
	if version != "" && version != "latest" {
		n, err := strconv.Atoi(version)
		if err != nil || n <= 0 {
			return nil, &regError{http.StatusUnprocessableEntity, 42202, fmt.Sprintf("The specified version '%s' is not a valid version id", version)}
		}
		versions = []int{n}
	} else {
		code, err := c.get("/subjects/"+url.PathEscape(subject)+"/versions", &versions)
		if err != nil {
			return nil, err
		}
		if code == http.StatusNotFound {
			if version == "latest" {
				return nil, &regError{http.StatusNotFound, 40401, fmt.Sprintf("Subject '%s' not found.", subject)}
			}
			return nil, nil // a new subject: nothing to be compatible with
		}
		if version == "latest" && len(versions) > 0 {
			versions = versions[len(versions)-1:]
		}
	}
	var previous []compat.Version
	for _, v := range versions {
		var s stored
		code, err := c.get(fmt.Sprintf("/subjects/%s/versions/%d", url.PathEscape(subject), v), &s)
		if err != nil {
			return nil, err
		}
		if code != http.StatusOK {
			return nil, &regError{http.StatusNotFound, 40402, fmt.Sprintf("Version %d not found.", v)}
		}
		if register && s.Schema == b.Schema && maps.Equal(props(s.Metadata), props(b.Metadata)) {
			return nil, nil // already registered: the registry returns the existing id unchecked
		}
		sf, _ := schema.ParseFormat(s.SchemaType)
		srefs, err := c.refs(s.References, 0)
		if err != nil {
			return nil, err
		}
		old, err := schema.Parse(sf, s.Schema, srefs...)
		if err != nil {
			return nil, fmt.Errorf("stored version %d of %s does not parse: %w", v, subject, err)
		}
		previous = append(previous, compat.Version{Version: v, Schema: old, Metadata: props(s.Metadata)})
	}
	if len(versions) == 1 && version != "" {
		// One named version: the level's direction applies to that version alone.
		level = compat.Level(strings.TrimSuffix(string(level), "_TRANSITIVE"))
	}
	res := compat.Evaluate(compat.Request{Level: level, Policy: policy, Group: extra.Group, Proposed: proposed,
		ProposedMetadata: props(b.Metadata), Previous: previous})
	return &res, nil
}

func props(m *metadata) map[string]string {
	if m == nil {
		return nil
	}
	return m.Properties
}

// extraConfig is the part of a subject's config srfake does not keep.
type extraConfig struct {
	Group  string `json:"compatibilityGroup,omitempty"`
	Policy string `json:"compatibilityPolicy,omitempty"`
}

// configs keeps compatibilityGroup and compatibilityPolicy, globally and per subject, beside
// srfake's levels. A subject's own value wins over the global one, field by field.
type configs struct {
	mu        sync.Mutex
	global    extraConfig
	bySubject map[string]extraConfig
}

func (c *configs) effective(subject string) extraConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.global
	if s, ok := c.bySubject[subject]; ok {
		if s.Group != "" {
			out.Group = s.Group
		}
		if s.Policy != "" {
			out.Policy = s.Policy
		}
	}
	return out
}

// intercept serves /config and /config/{subject}: PUT stores group and policy here and passes the
// level on to srfake; GET adds them to srfake's answer; DELETE clears the subject's.
func (c *configs) intercept(reg *srfake.Registry) srfake.Interceptor {
	return func(w http.ResponseWriter, r *http.Request) bool {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if parts[0] != "config" || len(parts) > 2 || r.Context().Value(innerKey{}) != nil {
			return false
		}
		inner := r.WithContext(context.WithValue(r.Context(), innerKey{}, true))
		subject := ""
		if len(parts) == 2 {
			subject = parts[1]
			if s, err := url.PathUnescape(subject); err == nil {
				subject = s
			}
		}
		switch r.Method {
		case http.MethodPut:
			return c.put(reg, w, inner, subject)
		case http.MethodGet:
			rec := httptest.NewRecorder()
			reg.Handler().ServeHTTP(rec, inner)
			c.mu.Lock()
			e, own := c.bySubject[subject]
			if subject == "" {
				e, own = c.global, true
			}
			c.mu.Unlock()
			var out map[string]any
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
				if !own || rec.Code != http.StatusNotFound {
					return false // srfake answers its own error again
				}
				out = map[string]any{} // a subject config with a group or policy but no level of its own
			}
			if r.URL.Query().Get("defaultToGlobal") == "true" {
				e = c.effective(subject)
			}
			if e.Group != "" {
				out["compatibilityGroup"] = e.Group
			}
			if e.Policy != "" {
				out["compatibilityPolicy"] = e.Policy
			}
			writeJSON(w, http.StatusOK, out)
			return true
		case http.MethodDelete:
			if subject != "" {
				c.mu.Lock()
				delete(c.bySubject, subject)
				c.mu.Unlock()
			}
		}
		return false
	}
}

func (c *configs) put(reg *srfake.Registry, w http.ResponseWriter, r *http.Request, subject string) bool {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<10))
	if err != nil {
		writeError(w, http.StatusBadRequest, 42203, "cannot read request body")
		return true
	}
	var b struct {
		Compatibility string `json:"compatibility"`
		extraConfig
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		writeError(w, http.StatusUnprocessableEntity, 42203, "Invalid compatibility level: "+err.Error())
		return true
	}
	if b.Policy != "" {
		p, err := compat.ParsePolicy(b.Policy)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, 42203, err.Error())
			return true
		}
		b.Policy = string(p)
	}
	if b.Compatibility != "" {
		if _, err := compat.ParseLevel(b.Compatibility); err != nil {
			writeError(w, http.StatusUnprocessableEntity, 42203, err.Error())
			return true
		}
	}
	c.mu.Lock()
	if subject == "" {
		c.global = mergeExtra(c.global, b.extraConfig)
	} else {
		c.bySubject[subject] = mergeExtra(c.bySubject[subject], b.extraConfig)
	}
	c.mu.Unlock()
	out := map[string]any{}
	if b.Compatibility != "" {
		// srfake sets the level; it reads the body again.
		rec := httptest.NewRecorder()
		r.Body = io.NopCloser(bytes.NewReader([]byte(`{"compatibility":"` + strings.ToUpper(b.Compatibility) + `"}`)))
		reg.Handler().ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return true
		}
		out["compatibility"] = strings.ToUpper(b.Compatibility)
	}
	if b.Group != "" {
		out["compatibilityGroup"] = b.Group
	}
	if b.Policy != "" {
		out["compatibilityPolicy"] = b.Policy
	}
	writeJSON(w, http.StatusOK, out)
	return true
}

// innerKey marks a request the config interceptor passes on to srfake, so it does not see it again.
type innerKey struct{}

func mergeExtra(cur, upd extraConfig) extraConfig {
	if upd.Group != "" {
		cur.Group = upd.Group
	}
	if upd.Policy != "" {
		cur.Policy = upd.Policy
	}
	return cur
}
