package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/subject"
)

// deps is what the tool adapters share: the registry client, the store-backed graph and the clock,
// all built on first use from the agent's Env.
type deps struct {
	env *mcpkit.Env
}

func (d *deps) registry() (*registry.Client, error) {
	return registry.New(d.env.Config.SchemaRegistry)
}

func (d *deps) graph(ctx context.Context) (*graph.Graph, error) {
	st, err := d.env.Store.Get(ctx)
	if err != nil {
		return nil, err
	}
	return graph.New(st, d.env.Now), nil
}

// record keeps first-seen times of the versions just read; a store failure is logged, not fatal,
// because the registry answer is still right.
func (d *deps) record(ctx context.Context, s *subject.Subject) map[int]registry.Seen {
	if !s.Live || len(s.Raw) == 0 {
		return nil
	}
	st, err := d.env.Store.Get(ctx)
	if err != nil {
		d.env.Logger.Warn("cannot record schema versions", "subject", s.Name, "err", err)
		return nil
	}
	seen, err := registry.RecordVersions(ctx, st, d.env.Now(), s.Raw)
	if err != nil {
		d.env.Logger.Warn("cannot record schema versions", "subject", s.Name, "err", err)
		return nil
	}
	return seen
}

// schemaInput is a schema given inline or as a file (a pull request's .avsc, .proto or .json),
// with the schemas it references.
type schemaInput struct {
	Text, File, Type string
	Refs             []referenceInput
	// resolved are Refs with their text, filled by withReferences.
	resolved []schema.Reference
}

// referenceInput is a schema reference as the registry records one (name, subject, version),
// with the referenced schema given inline or as a file, or read from the registry.
type referenceInput struct {
	Name    string `json:"name" jsonschema:"The Avro full name, the Protobuf import path or the JSON Schema $ref URL the schema uses"`
	Subject string `json:"subject,omitempty" jsonschema:"The subject the referenced schema is registered under; read from the registry when no schema or file is given"`
	Version int    `json:"version,omitempty" jsonschema:"Its version under that subject (0: the latest)"`
	Schema  string `json:"schema,omitempty" jsonschema:"The referenced schema's text, to work without a registry"`
	File    string `json:"file,omitempty" jsonschema:"Path to the referenced schema's file instead of schema"`
}

// builtinImport: a Protobuf import the registry resolves without a reference's text.
func builtinImport(name string) bool {
	return strings.HasPrefix(name, "google/protobuf/") || name == "confluent/meta.proto" || name == "confluent/type/decimal.proto"
}

// references gives every reference its text: inline, from its file, or live from the registry
// when only its subject is named (with what that schema references in turn).
func (d *deps) references(ctx context.Context, refs []referenceInput) ([]schema.Reference, error) {
	var out []schema.Reference
	var live []registry.Reference
	for i, r := range refs {
		switch {
		case r.Name == "":
			return nil, fmt.Errorf("references[%d] has no name: give the Avro full name, the Protobuf import path or the $ref URL the schema uses", i)
		case r.Schema != "" && r.File != "":
			return nil, fmt.Errorf("reference %q: give its schema inline or as a file, not both", r.Name)
		case r.Schema != "" || r.File != "":
			text := r.Schema
			if r.File != "" {
				var err error
				if text, err = d.readSchemaFile(r.File); err != nil {
					return nil, fmt.Errorf("reference %q: %w", r.Name, err)
				}
			}
			out = append(out, schema.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version, Schema: text})
		case r.Subject != "":
			live = append(live, registry.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version})
		case builtinImport(r.Name):
			out = append(out, schema.Reference{Name: r.Name})
		default:
			return nil, fmt.Errorf("reference %q: give its schema inline or as a file, or its subject (and version) to read it from the registry", r.Name)
		}
	}
	if len(live) == 0 {
		return out, nil
	}
	c, err := d.registry()
	if err != nil {
		return nil, fmt.Errorf("reference %q names subject %q without its schema, so it is read from the registry: %w", live[0].Name, live[0].Subject, err)
	}
	got, err := c.ResolveReferences(ctx, live)
	if err != nil {
		return nil, err
	}
	return append(out, got...), nil
}

// withReferences resolves in's references, once.
func (d *deps) withReferences(ctx context.Context, in schemaInput) (schemaInput, error) {
	if len(in.Refs) == 0 || in.resolved != nil {
		return in, nil
	}
	refs, err := d.references(ctx, in.Refs)
	if err != nil {
		return in, err
	}
	in.resolved = refs
	if in.resolved == nil {
		in.resolved = []schema.Reference{}
	}
	return in, nil
}

// formatFor is schema_type, else the file's extension (.avsc/.avro, .proto, .json), else
// fallback (the subject's format). An inline schema with neither is AVRO, the registry's default;
// a file whose extension says nothing is an error rather than a guess.
func formatFor(typ, file string, fallback schema.Format) (schema.Format, error) {
	if typ != "" {
		return schema.ParseFormat(typ)
	}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".avsc", ".avro":
		return schema.Avro, nil
	case ".proto":
		return schema.Protobuf, nil
	case ".json":
		return schema.JSON, nil
	}
	switch {
	case fallback != "":
		return fallback, nil
	case file == "":
		return schema.Avro, nil
	}
	return "", fmt.Errorf("cannot tell the format of %s from its extension: give schema_type (AVRO, PROTOBUF or JSON) or name it .avsc, .proto or .json", file)
}

// formatForText is formatFor checked against the text itself: when schema_type is not given and
// the text is plainly another format than the one it would be read as, it is refused with a
// message that says to set schema_type, rather than failing as, say, "invalid Avro schema:
// unknown type: object".
func formatForText(typ, file string, fallback schema.Format, text string) (schema.Format, error) {
	f, err := formatFor(typ, file, fallback)
	if err != nil || typ != "" {
		return f, err
	}
	plain, ok := schema.Sniff(text)
	if !ok || plain == f {
		return f, nil
	}
	from := "the registry's default for a schema given without a type"
	if _, extErr := formatFor("", file, ""); file != "" && extErr == nil {
		from = "from the file extension of " + file
	} else if fallback != "" {
		from = "the subject's format"
	}
	return "", fmt.Errorf("the schema would be read as %s (%s) but it is plainly %s: set schema_type to %s", f, from, plain, plain)
}

// maxSchemaFile bounds a schema file: real schemas are kilobytes, and a tool must not read a
// device or a huge file into memory.
const maxSchemaFile = 1 << 20

// readSchemaFile reads a caller's schema file through the one guarded reader (Env.ReadFile): a
// regular file of at most maxSchemaFile bytes, never a device, a pipe or one of the store's private
// files (its database or receipts key), whatever path or link names it.
func (d *deps) readSchemaFile(path string) (string, error) {
	b, err := d.env.ReadFile(path, maxSchemaFile)
	if errors.Is(err, mcpkit.ErrPrivateFile) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("cannot read schema file: %w (paths are relative to the directory dw-schema runs in)", err)
	}
	return string(b), nil
}

func (in schemaInput) given() bool { return in.Text != "" || in.File != "" }

// load reads and parses the schema with its resolved references (withReferences); the format
// comes from schema_type, else the file extension (.avsc, .proto, .json), else the subject's format
// (fallback), else AVRO for inline text. A parse error about a file quotes no more than a short
// excerpt of it.
func (d *deps) load(in schemaInput, fallback schema.Format) (*schema.Schema, error) {
	if len(in.Refs) > 0 && in.resolved == nil {
		return nil, errors.New("references were given but not resolved")
	}
	text := in.Text
	if in.File != "" {
		if in.Text != "" {
			return nil, errors.New("give the schema inline or as a file, not both")
		}
		var err error
		if text, err = d.readSchemaFile(in.File); err != nil {
			return nil, err
		}
	}
	f, err := formatForText(in.Type, in.File, fallback, text)
	if err != nil {
		return nil, err
	}
	s, err := schema.Parse(f, text, in.resolved...)
	if err != nil && in.File != "" {
		return nil, mcpkit.ContentError(fmt.Errorf("%s: %w", in.File, err), in.File, []byte(text))
	}
	return s, err
}

// earlierVersion is an earlier version given in the call, for CI without a registry.
type earlierVersion struct {
	Version    int              `json:"version,omitempty" jsonschema:"Version number; defaults to its position (1, 2, …)"`
	Schema     string           `json:"schema,omitempty" jsonschema:"The schema text"`
	File       string           `json:"file,omitempty" jsonschema:"Path to the schema file instead of schema"`
	References []referenceInput `json:"references,omitempty" jsonschema:"The schemas this version references (name, subject, version; their schema inline or as a file, or read from the registry)"`
}

// history is the subject's versions: given in the call (offline), else read from the registry.
func (d *deps) history(ctx context.Context, name, level, policy, schemaType string, earlier []earlierVersion) (*subject.Subject, error) {
	return d.historyOf(ctx, name, level, policy, schemaType, earlier, false)
}

// historyOf is history; allowNew treats an unknown subject as one with no versions yet.
func (d *deps) historyOf(ctx context.Context, name, level, policy, schemaType string, earlier []earlierVersion, allowNew bool) (*subject.Subject, error) {
	if len(earlier) > 0 {
		var given []subject.Given
		var files []byte // what the earlier versions' files hold, kept out of parse errors
		// A file whose extension says nothing takes the format the other versions' files name.
		var known schema.Format
		for _, e := range earlier {
			if f, err := formatFor(schemaType, e.File, ""); err == nil && e.File != "" {
				known = f
				break
			}
		}
		for i, e := range earlier {
			in := schemaInput{Text: e.Schema, File: e.File, Type: schemaType}
			if !in.given() {
				return nil, fmt.Errorf("earlier_versions[%d] has neither schema nor file", i)
			}
			text := e.Schema
			if e.File != "" {
				var err error
				if text, err = d.readSchemaFile(e.File); err != nil {
					return nil, fmt.Errorf("earlier_versions[%d]: %w", i, err)
				}
				files = append(append(files, text...), 0)
			}
			f, err := formatForText(schemaType, e.File, known, text)
			if err != nil {
				return nil, fmt.Errorf("earlier_versions[%d]: %w", i, err)
			}
			refs, err := d.references(ctx, e.References)
			if err != nil {
				return nil, fmt.Errorf("earlier_versions[%d]: %w", i, err)
			}
			given = append(given, subject.Given{Version: e.Version, Format: f, Text: text, References: refs})
		}
		lvl, pol, err := levelPolicy(level, policy)
		if err != nil {
			return nil, err
		}
		if name == "" {
			name = "(offline)"
		}
		s, err := subject.Offline(name, lvl, pol, given)
		if err != nil && files != nil {
			return nil, mcpkit.ContentError(err, "", files)
		}
		return s, err
	}
	if name == "" {
		return nil, errors.New("name the subject (e.g. orders-value), or give earlier_versions to check offline")
	}
	c, err := d.registry()
	if err != nil {
		return nil, fmt.Errorf("%w; or give earlier_versions to check without a registry", err)
	}
	load := subject.Load
	if allowNew {
		load = subject.LoadOrNew
	}
	s, err := load(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if level != "" || policy != "" {
		lvl, pol, err := levelPolicy(level, policy)
		if err != nil {
			return nil, err
		}
		if level != "" {
			s.Level, s.LevelSource = lvl, "given in the call (the subject's own is "+string(s.Level)+")"
		}
		if policy != "" {
			s.Policy = pol
		}
	}
	d.record(ctx, s)
	return s, nil
}

func levelPolicy(level, policy string) (compat.Level, compat.Policy, error) {
	var lvl compat.Level
	if level != "" {
		l, err := compat.ParseLevel(level)
		if err != nil {
			return "", "", err
		}
		lvl = l
	}
	pol, err := compat.ParsePolicy(policy)
	return lvl, pol, err
}

func formatOf(s *subject.Subject) schema.Format {
	if len(s.Versions) > 0 {
		return s.Versions[len(s.Versions)-1].Schema.Format
	}
	return ""
}
