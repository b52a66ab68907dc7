// Package registry reads and writes Confluent Schema Registry through srclient, with timeouts and
// basic auth for Confluent Cloud. What srclient does not offer (soft-deleted versions, verbose
// compatibility messages, subject config without the global fallback, referencedby) goes through
// the shared httpapi client against the same endpoint and credentials.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/riferrei/srclient"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// ErrNotConfigured is returned when the schema_registry section is missing.
var ErrNotConfigured = errors.New("schema registry is not configured: add schema_registry.url to the config (see configs/confluent-cloud.example.yaml)")

// Client is a Schema Registry client.
type Client struct {
	SR  *srclient.SchemaRegistryClient
	URL string
	api *httpapi.Client
}

// New builds a client; it does not connect.
func New(c *config.SchemaRegistry) (*Client, error) {
	if c == nil {
		return nil, ErrNotConfigured
	}
	base := strings.TrimRight(c.URL, "/")
	hc := &http.Client{Timeout: c.Timeout}
	sr := srclient.NewSchemaRegistryClient(base, srclient.WithClient(hc))
	if c.Username != "" {
		sr.SetCredentials(c.Username, c.Password)
	}
	sr.CachingEnabled(false)
	sr.CodecCreationEnabled(false)
	api, err := httpapi.New("schema registry", base, "schema_registry", httpapi.Basic(c.Username, c.Password), c.Timeout)
	if err != nil {
		return nil, err
	}
	return &Client{SR: sr, URL: base, api: api}, nil
}

// Ping reads the global compatibility level: the cheapest call every registry answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.GlobalLevel(ctx)
	return err
}

// call runs an srclient call (which takes no context) beside ctx, so ctx bounds the wait.
func call[T any](ctx context.Context, c *Client, op string, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			var zero T
			return zero, c.explain(op, r.err)
		}
		return r.v, nil
	case <-ctx.Done():
		var zero T
		return zero, c.noAnswer(op, ctx.Err())
	}
}

// SubjectVersion is one registered version of a subject.
type SubjectVersion struct {
	Subject    string        `json:"subject"`
	Version    int           `json:"version"`
	ID         int           `json:"id"`
	Type       schema.Format `json:"schema_type"`
	Schema     string        `json:"schema"`
	References []Reference   `json:"references,omitempty"`
	// Metadata is the version's data-contract metadata; its properties are what the subject's
	// compatibilityGroup partitions versions by.
	Metadata *Metadata `json:"metadata,omitempty"`
	Deleted  bool      `json:"deleted,omitempty"`
}

// Metadata is a schema's metadata as the registry stores it (Schema object "metadata").
type Metadata struct {
	Properties map[string]string   `json:"properties,omitempty"`
	Tags       map[string][]string `json:"tags,omitempty"`
	Sensitive  []string            `json:"sensitive,omitempty"`
}

// Properties are the version's metadata properties (nil when it has none).
func (v SubjectVersion) Properties() map[string]string {
	if v.Metadata == nil {
		return nil
	}
	return v.Metadata.Properties
}

// Reference is a schema reference as the registry stores it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

type wireSchema struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType"`
	Schema     string      `json:"schema"`
	References []Reference `json:"references"`
	Metadata   *Metadata   `json:"metadata"`
	Deleted    bool        `json:"deleted"`
}

func (w wireSchema) toVersion() (SubjectVersion, error) {
	f, err := schema.ParseFormat(w.SchemaType)
	if err != nil {
		return SubjectVersion{}, err
	}
	return SubjectVersion{Subject: w.Subject, Version: w.Version, ID: w.ID, Type: f, Schema: w.Schema, References: w.References,
		Metadata: w.Metadata, Deleted: w.Deleted}, nil
}

func seg(s string) string { return url.PathEscape(s) }

// Subjects lists subject names, optionally by prefix and including soft-deleted subjects.
func (c *Client) Subjects(ctx context.Context, prefix string, includeDeleted bool) ([]string, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("subjectPrefix", prefix)
	}
	if includeDeleted {
		q.Set("deleted", "true")
	}
	var out []string
	if err := c.api.Do(ctx, http.MethodGet, "/subjects", q, nil, &out); err != nil {
		return nil, c.explain("list subjects", err)
	}
	sort.Strings(out)
	return out, nil
}

// Versions lists a subject's version numbers, with soft-deleted ones when includeDeleted.
func (c *Client) Versions(ctx context.Context, subject string, includeDeleted bool) ([]int, error) {
	q := url.Values{}
	if includeDeleted {
		q.Set("deleted", "true")
	}
	var out []int
	if err := c.api.Do(ctx, http.MethodGet, "/subjects/"+seg(subject)+"/versions", q, nil, &out); err != nil {
		return nil, c.explain("list versions of "+subject, err)
	}
	sort.Ints(out)
	return out, nil
}

// Version reads one version (0 = latest). includeDeleted also finds soft-deleted versions.
func (c *Client) Version(ctx context.Context, subject string, version int, includeDeleted bool) (SubjectVersion, error) {
	v := "latest"
	if version > 0 {
		v = strconv.Itoa(version)
	}
	q := url.Values{}
	if includeDeleted {
		q.Set("deleted", "true")
	}
	var w wireSchema
	if err := c.api.Do(ctx, http.MethodGet, "/subjects/"+seg(subject)+"/versions/"+v, q, nil, &w); err != nil {
		return SubjectVersion{}, c.explain(fmt.Sprintf("read %s version %s", subject, v), err)
	}
	if w.Subject == "" {
		w.Subject = subject
	}
	return w.toVersion()
}

// History reads every version of a subject, soft-deleted ones marked Deleted, oldest first.
func (c *Client) History(ctx context.Context, subject string) ([]SubjectVersion, error) {
	all, err := c.Versions(ctx, subject, true)
	if err != nil {
		return nil, err
	}
	live, err := c.Versions(ctx, subject, false)
	if err != nil && !IsCode(err, 40401) && !IsCode(err, 40404) {
		return nil, err // a soft-deleted subject has no live versions, only deleted ones
	}
	isLive := map[int]bool{}
	for _, v := range live {
		isLive[v] = true
	}
	out := make([]SubjectVersion, 0, len(all))
	for _, v := range all {
		sv, err := c.Version(ctx, subject, v, true)
		if err != nil {
			return nil, err
		}
		sv.Deleted = !isLive[v]
		out = append(out, sv)
	}
	return out, nil
}

// SchemaByID reads a schema by its global id.
func (c *Client) SchemaByID(ctx context.Context, id int) (SubjectVersion, error) {
	var w wireSchema
	if err := c.api.Do(ctx, http.MethodGet, "/schemas/ids/"+strconv.Itoa(id), nil, nil, &w); err != nil {
		return SubjectVersion{}, c.explain(fmt.Sprintf("read schema id %d", id), err)
	}
	w.ID = id
	return w.toVersion()
}

// SubjectsByID lists the subject versions that registered schema id.
func (c *Client) SubjectsByID(ctx context.Context, id int) ([]Reference, error) {
	resp, err := call(ctx, c, fmt.Sprintf("subjects of schema id %d", id), func() (srclient.SubjectVersionResponse, error) {
		return c.SR.GetSubjectVersionsById(id)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Reference, 0, len(resp))
	for _, p := range resp {
		out = append(out, Reference{Subject: p.Subject, Version: p.Version})
	}
	return out, nil
}

// ReferencedBy lists the schema ids that reference subject/version.
func (c *Client) ReferencedBy(ctx context.Context, subject string, version int) ([]int, error) {
	var out []int
	if err := c.api.Do(ctx, http.MethodGet, fmt.Sprintf("/subjects/%s/versions/%d/referencedby", seg(subject), version), nil, nil, &out); err != nil {
		return nil, c.explain("read referencedby of "+subject, err)
	}
	return out, nil
}

// ResolveReferences fetches the text of every schema sv references, depth first, so it can be
// parsed (Avro named types, Protobuf imports, JSON $ref targets).
func (c *Client) ResolveReferences(ctx context.Context, refs []Reference) ([]schema.Reference, error) {
	var out []schema.Reference
	seen := map[string]bool{}
	var walk func([]Reference, int) error
	walk = func(rs []Reference, depth int) error {
		if depth > 16 {
			return errors.New("schema references nest deeper than 16 levels (a cycle?)")
		}
		for _, r := range rs {
			key := fmt.Sprintf("%s@%d", r.Subject, r.Version)
			if seen[key] {
				continue
			}
			seen[key] = true
			sv, err := c.Version(ctx, r.Subject, r.Version, true)
			if err != nil {
				return fmt.Errorf("reference %q: %w", r.Name, err)
			}
			if err := walk(sv.References, depth+1); err != nil {
				return err
			}
			out = append(out, schema.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version, Schema: sv.Schema})
		}
		return nil
	}
	return out, walk(refs, 0)
}

// Parse parses a registered version with its references.
func (c *Client) Parse(ctx context.Context, sv SubjectVersion) (*schema.Schema, error) {
	refs, err := c.ResolveReferences(ctx, sv.References)
	if err != nil {
		return nil, err
	}
	s, err := schema.Parse(sv.Type, sv.Schema, refs...)
	if err != nil {
		return nil, fmt.Errorf("%s version %d: %w", sv.Subject, sv.Version, err)
	}
	return s, nil
}

// GlobalLevel reads the registry-wide compatibility level.
func (c *Client) GlobalLevel(ctx context.Context) (compat.Level, error) {
	l, err := call(ctx, c, "read global compatibility level", func() (*srclient.CompatibilityLevel, error) {
		return c.SR.GetGlobalCompatibilityLevel()
	})
	if err != nil {
		return "", err
	}
	return compat.ParseLevel(string(*l))
}

// SubjectConfig is a subject's effective compatibility configuration.
type SubjectConfig struct {
	Level compat.Level `json:"level"`
	// Policy is compatibilityPolicy (STRICT unless the registry says otherwise).
	Policy compat.Policy `json:"policy"`
	// Group is compatibilityGroup, the metadata property that partitions versions, when set.
	Group string `json:"group,omitempty"`
	// Explicit: set on the subject itself, not inherited from the global level.
	Explicit bool `json:"explicit"`
	// ValidateFields is validateFields (the subject's, else the global one): reserved field names
	// in the metadata property confluent:reserved are enforced.
	ValidateFields bool `json:"validate_fields,omitempty"`
	// NotReproduced lists the parts of the registry's rule a verdict built from this config alone
	// does not reproduce, so a verdict that may differ never differs silently. A compatibilityGroup
	// is listed (with GroupNotePrefix) because applying it also needs the proposed schema's
	// metadata: a caller that applies it (compat.Evaluate with Group) drops that note.
	NotReproduced []string `json:"not_reproduced,omitempty"`
}

// GroupNotePrefix starts the NotReproduced note about a compatibilityGroup.
const GroupNotePrefix = "not reproduced: compatibilityGroup"

// SubjectConfig reads the subject's own config, falling back to the global one when the subject
// has none (40408 or 40401), which is how the registry decides.
func (c *Client) SubjectConfig(ctx context.Context, subject string) (SubjectConfig, error) {
	var w struct {
		CompatibilityLevel  string `json:"compatibilityLevel"`
		CompatibilityPolicy string `json:"compatibilityPolicy"`
		CompatibilityGroup  string `json:"compatibilityGroup"`
		ValidateFields      *bool  `json:"validateFields"`
	}
	explicit := true
	err := c.api.Do(ctx, http.MethodGet, "/config/"+seg(subject), url.Values{"defaultToGlobal": {"false"}}, nil, &w)
	if err != nil {
		ee := c.explain("read compatibility of "+subject, err)
		if !IsCode(ee, 40408) && !IsCode(ee, 40401) {
			return SubjectConfig{}, ee
		}
		explicit = false
		if err := c.api.Do(ctx, http.MethodGet, "/config", nil, nil, &w); err != nil {
			return SubjectConfig{}, c.explain("read global compatibility", err)
		}
	}
	if explicit && (w.CompatibilityLevel == "" || w.ValidateFields == nil) {
		// What the subject does not set (its level, validateFields) is the global config's.
		var g struct {
			CompatibilityLevel string `json:"compatibilityLevel"`
			ValidateFields     *bool  `json:"validateFields"`
		}
		if err := c.api.Do(ctx, http.MethodGet, "/config", nil, nil, &g); err != nil {
			return SubjectConfig{}, c.explain("read global compatibility", err)
		}
		if w.CompatibilityLevel == "" {
			w.CompatibilityLevel = g.CompatibilityLevel
		}
		if w.ValidateFields == nil {
			w.ValidateFields = g.ValidateFields
		}
	}
	lvl, err := compat.ParseLevel(w.CompatibilityLevel)
	if err != nil {
		return SubjectConfig{}, fmt.Errorf("schema registry %s answered for %s: %w", c.URL, subject, err)
	}
	out := SubjectConfig{Level: lvl, Group: w.CompatibilityGroup, Explicit: explicit, ValidateFields: w.ValidateFields != nil && *w.ValidateFields}
	out.Policy, err = compat.ParsePolicy(w.CompatibilityPolicy)
	if err != nil {
		// A policy newer than this code: judge the native part and say so.
		out.Policy = compat.Strict
		out.NotReproduced = append(out.NotReproduced, fmt.Sprintf(
			"not reproduced: compatibilityPolicy %s — Data Workers judged under STRICT only; the registry's own verdict may differ", w.CompatibilityPolicy))
	}
	if w.CompatibilityGroup != "" {
		out.NotReproduced = append(out.NotReproduced, fmt.Sprintf(
			"%s %q — the registry compares only the versions whose metadata property %q matches the new schema's; this verdict compared every version", GroupNotePrefix, w.CompatibilityGroup, w.CompatibilityGroup))
	}
	return out, nil
}

// SetSubjectLevel sets a subject's compatibility level.
func (c *Client) SetSubjectLevel(ctx context.Context, subject string, level compat.Level) error {
	_, err := call(ctx, c, "set compatibility of "+subject, func() (*srclient.CompatibilityLevel, error) {
		return c.SR.ChangeSubjectCompatibilityLevel(subject, srclient.CompatibilityLevel(level))
	})
	return err
}

func srType(f schema.Format) srclient.SchemaType {
	switch f {
	case schema.Protobuf:
		return srclient.Protobuf
	case schema.JSON:
		return srclient.Json
	}
	return srclient.Avro
}

func srRefs(refs []Reference) []srclient.Reference {
	out := make([]srclient.Reference, 0, len(refs))
	for _, r := range refs {
		out = append(out, srclient.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version})
	}
	return out
}

// RegisterWithMetadata registers a schema with metadata properties (POST
// /subjects/{s}/versions with "metadata"), which srclient cannot send, and returns its global id.
// An incompatible schema is an error with code 40901.
func (c *Client) RegisterWithMetadata(ctx context.Context, subject string, format schema.Format, text string, refs []Reference, props map[string]string) (int, error) {
	body := map[string]any{"schema": text}
	if format != schema.Avro {
		body["schemaType"] = string(format)
	}
	if len(refs) > 0 {
		body["references"] = refs
	}
	if len(props) > 0 {
		body["metadata"] = Metadata{Properties: props}
	}
	var w struct {
		ID int `json:"id"`
	}
	if err := c.api.Do(ctx, http.MethodPost, "/subjects/"+seg(subject)+"/versions", nil, body, &w); err != nil {
		return 0, c.explain("register a schema under "+subject, err)
	}
	return w.ID, nil
}

// SetSubjectConfig sets a subject's level, compatibilityGroup and compatibilityPolicy (PUT
// /config/{s}; the key is "compatibility", not "compatibilityLevel", docs/reference/schema-rules.md).
// Empty group or policy are left out of the request.
func (c *Client) SetSubjectConfig(ctx context.Context, subject string, level compat.Level, group string, policy compat.Policy) error {
	body := map[string]any{"compatibility": string(level)}
	if group != "" {
		body["compatibilityGroup"] = group
	}
	if policy != "" {
		body["compatibilityPolicy"] = string(policy)
	}
	if err := c.api.Do(ctx, http.MethodPut, "/config/"+seg(subject), nil, body, nil); err != nil {
		return c.explain("set compatibility of "+subject, err)
	}
	return nil
}

// Register registers a schema under subject and returns its global id. An incompatible schema is
// an error with code 40901.
func (c *Client) Register(ctx context.Context, subject string, format schema.Format, text string, refs []Reference) (int, error) {
	s, err := call(ctx, c, "register a schema under "+subject, func() (*srclient.Schema, error) {
		return c.SR.CreateSchema(subject, text, srType(format), srRefs(refs)...)
	})
	if err != nil {
		return 0, err
	}
	return s.ID(), nil
}

// IsCompatibleWithLatest asks the registry, through srclient, whether text may follow the latest
// version under the subject's level.
func (c *Client) IsCompatibleWithLatest(ctx context.Context, subject string, format schema.Format, text string, refs []Reference) (bool, error) {
	return call(ctx, c, "check compatibility against "+subject, func() (bool, error) {
		return c.SR.IsSchemaCompatible(subject, text, "latest", srType(format), srRefs(refs)...)
	})
}

// Verdict is the registry's own compatibility answer.
type Verdict struct {
	Compatible bool     `json:"compatible"`
	Messages   []string `json:"messages,omitempty"`
}

// CheckCompatibility asks the registry the same question registration would (POST
// /compatibility/subjects/{s}/versions?verbose=true: every version the level compares).
func (c *Client) CheckCompatibility(ctx context.Context, subject string, format schema.Format, text string, refs []Reference) (Verdict, error) {
	return c.CheckCompatibilityWithMetadata(ctx, subject, format, text, refs, nil)
}

// CheckCompatibilityWithMetadata is CheckCompatibility for a schema carrying metadata
// properties, which a subject's compatibilityGroup selects the compared versions by.
func (c *Client) CheckCompatibilityWithMetadata(ctx context.Context, subject string, format schema.Format, text string, refs []Reference, props map[string]string) (Verdict, error) {
	body := map[string]any{"schema": text}
	if len(props) > 0 {
		body["metadata"] = Metadata{Properties: props}
	}
	if format != schema.Avro {
		body["schemaType"] = string(format)
	}
	if len(refs) > 0 {
		body["references"] = refs
	}
	var w struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages"`
	}
	if err := c.api.Do(ctx, http.MethodPost, "/compatibility/subjects/"+seg(subject)+"/versions", url.Values{"verbose": {"true"}}, body, &w); err != nil {
		return Verdict{}, c.explain("check compatibility against "+subject, err)
	}
	return Verdict{Compatible: w.IsCompatible, Messages: w.Messages}, nil
}
