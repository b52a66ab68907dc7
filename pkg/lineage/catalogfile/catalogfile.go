// Package catalogfile reads the declarative catalog file (YAML) for what has no API: BI workbooks,
// orchestrator jobs with cron schedules, external sinks, owners, tags, domains and hand-declared
// lineage. See configs/catalog.example.yaml for the format.
package catalogfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dataworkers/dw/pkg/graph"
)

// File is the catalog file.
type File struct {
	Version int     `yaml:"version"`
	Assets  []Asset `yaml:"assets"`
	Edges   []Edge  `yaml:"edges"`
}

// Asset declares or annotates one asset. Listing an asset another source describes (a dbt model,
// a topic) adds owners, tags, domain or criticality to it.
type Asset struct {
	URN         string            `yaml:"urn"`
	Kind        string            `yaml:"kind"`
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Owners      []string          `yaml:"owners"`
	Domain      string            `yaml:"domain"`
	Tags        []string          `yaml:"tags"`
	Criticality string            `yaml:"criticality"`
	Schedule    string            `yaml:"schedule"`
	Attrs       map[string]string `yaml:"attrs"`
	Fields      []Field           `yaml:"fields"`
	// Reads lists assets (or asset#field) this one reads: an edge from each to this asset.
	Reads []string `yaml:"reads"`
	// Writes lists assets this one writes.
	Writes []string `yaml:"writes"`
	// SyncsTo lists external sinks this one pushes data to.
	SyncsTo []string `yaml:"syncs_to"`
}

// Field is a column of a declared asset.
type Field struct {
	Path        string   `yaml:"path"`
	Type        string   `yaml:"type"`
	Nullable    *bool    `yaml:"nullable"`
	Description string   `yaml:"description"`
	Tags        []string `yaml:"tags"`
}

// Edge is hand-declared lineage; from and to are URNs, optionally with #field.
type Edge struct {
	From           string `yaml:"from"`
	To             string `yaml:"to"`
	Kind           string `yaml:"kind"`
	Transformation string `yaml:"transformation"`
}

// Source is the graph source name of a catalog file.
func Source(name string) string { return "catalog:" + name }

// Load reads and converts the file at path; the batch's source is Source(SourcePath(path)), so
// "./configs/x.yaml", "configs/x.yaml" and "/srv/dw/configs/x.yaml" are one source and a re-import
// by any of them marks what the file no longer declares stale.
func Load(path string) (graph.Batch, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return graph.Batch{}, fmt.Errorf("catalog file: %w", err)
	}
	return Parse(SourcePath(path), raw)
}

// SourcePath is the name a catalog file's claims are kept under: its absolute path, or the
// cleaned path when the working directory cannot be read. A caller reading the file itself
// passes it to Parse with the bytes.
func SourcePath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// Parse decodes a catalog file strictly (an unknown key is an error with its line) and converts
// it to a batch named Source(name).
func Parse(name string, raw []byte) (graph.Batch, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return graph.Batch{}, fmt.Errorf("catalog file %s is empty", name)
		}
		return graph.Batch{}, fmt.Errorf("catalog file %s: %w", name, yamlProblem(err))
	}
	if f.Version != 1 {
		return graph.Batch{}, fmt.Errorf("catalog file %s: version %d: want version: 1", name, f.Version)
	}
	return f.Batch(Source(name))
}

// yamlProblem restates a decoding error as its line and the kind of problem, without the text the
// decoder quotes from the file (a key it does not know, a value it cannot use): the file may be
// anything a caller pointed at, a password file included.
func yamlProblem(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, m := range te.Errors {
		line, rest, _ := strings.Cut(m, ": ")
		if !strings.HasPrefix(line, "line ") {
			line, rest = "", m
		}
		switch {
		case strings.HasPrefix(rest, "field ") && strings.Contains(rest, " not found in type "):
			typ := rest[strings.LastIndex(rest, " ")+1:]
			rest = "unknown key (see configs/catalog.example.yaml)"
			if what, keys := knownKeys(typ); what != "" {
				rest = fmt.Sprintf("unknown key; %s has %s", what, strings.Join(keys, ", "))
			}
		case strings.HasPrefix(rest, "cannot unmarshal !!"):
			kind, _, _ := strings.Cut(strings.TrimPrefix(rest, "cannot unmarshal !!"), " ")
			into := "another type"
			if i := strings.LastIndex(rest, " into "); i >= 0 {
				into = rest[i+len(" into "):]
			}
			names := map[string]string{"str": "string", "seq": "list", "map": "mapping", "int": "number", "float": "number", "bool": "boolean"}
			if n, ok := names[kind]; ok {
				kind = n
			}
			rest = fmt.Sprintf("a YAML %s where %s was expected", kind, into)
		default:
			rest = "a value of the wrong type"
		}
		if line != "" {
			rest = line + ": " + rest
		}
		msgs = append(msgs, rest)
		if len(msgs) == 5 {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(te.Errors)-5))
			break
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}

// knownKeys names the part of a catalog file a decoder type is and lists its keys.
func knownKeys(goType string) (string, []string) {
	types := map[string]struct {
		what string
		t    reflect.Type
	}{
		"catalogfile.File":  {"a catalog file", reflect.TypeFor[File]()},
		"catalogfile.Asset": {"an asset", reflect.TypeFor[Asset]()},
		"catalogfile.Field": {"a field", reflect.TypeFor[Field]()},
		"catalogfile.Edge":  {"an edge", reflect.TypeFor[Edge]()},
	}
	entry, ok := types[goType]
	if !ok {
		return "", nil
	}
	var keys []string
	for i := 0; i < entry.t.NumField(); i++ {
		if k, _, _ := strings.Cut(entry.t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return entry.what, keys
}

// Batch converts the file into what it asserts.
func (f *File) Batch(source string) (graph.Batch, error) {
	b := graph.Batch{Source: source}
	seen := map[graph.URN]bool{}
	for i, a := range f.Assets {
		where := fmt.Sprintf("assets[%d]", i)
		urn, err := graph.ParseURN(a.URN)
		if err != nil {
			return graph.Batch{}, fmt.Errorf("%s: %w", where, err)
		}
		if seen[urn] {
			return graph.Batch{}, fmt.Errorf("%s: %s is listed twice; merge the entries", where, urn)
		}
		seen[urn] = true
		if !graph.ValidCriticality(a.Criticality) {
			return graph.Batch{}, fmt.Errorf("%s (%s): criticality %q must be low, medium, high or critical", where, urn, a.Criticality)
		}
		if a.Schedule != "" {
			if _, err := graph.ParseSchedule(a.Schedule); err != nil {
				return graph.Batch{}, fmt.Errorf("%s (%s): %w", where, urn, err)
			}
		}
		b.Assets = append(b.Assets, graph.Asset{URN: urn, Kind: a.Kind, Name: a.Name, Description: a.Description,
			Owners: a.Owners, Domain: a.Domain, Tags: a.Tags, Criticality: a.Criticality, Schedule: a.Schedule, Attrs: a.Attrs})
		for j, fl := range a.Fields {
			if strings.TrimSpace(fl.Path) == "" {
				return graph.Batch{}, fmt.Errorf("%s.fields[%d]: empty path", where, j)
			}
			nullable := true
			if fl.Nullable != nil {
				nullable = *fl.Nullable
			}
			b.Fields = append(b.Fields, graph.Field{Asset: urn, Path: fl.Path, Type: fl.Type, Nullable: nullable,
				Description: fl.Description, Tags: fl.Tags, Ordinal: j + 1})
		}
		lists := []struct {
			key      string
			refs     []string
			kind     graph.EdgeKind
			incoming bool
		}{{"reads", a.Reads, graph.EdgeReads, true}, {"writes", a.Writes, graph.EdgeWrites, false}, {"syncs_to", a.SyncsTo, graph.EdgeSyncsTo, false}}
		for _, l := range lists {
			for k, r := range l.refs {
				ref, err := graph.ParseFieldRef(r)
				if err != nil {
					return graph.Batch{}, fmt.Errorf("%s.%s[%d]: %w", where, l.key, k, err)
				}
				e := graph.Edge{From: urn.Field(""), To: ref, Kind: l.kind, Transformation: "declared in the catalog file"}
				if l.incoming {
					e.From, e.To = ref, urn.Field("")
				}
				if e.From == e.To {
					return graph.Batch{}, fmt.Errorf("%s.%s[%d]: %s refers to itself", where, l.key, k, r)
				}
				b.Edges = append(b.Edges, e)
			}
		}
	}
	for i, e := range f.Edges {
		where := fmt.Sprintf("edges[%d]", i)
		from, err := graph.ParseFieldRef(e.From)
		if err != nil {
			return graph.Batch{}, fmt.Errorf("%s.from: %w", where, err)
		}
		to, err := graph.ParseFieldRef(e.To)
		if err != nil {
			return graph.Batch{}, fmt.Errorf("%s.to: %w", where, err)
		}
		if e.Kind == "" {
			return graph.Batch{}, fmt.Errorf("%s: kind is required (e.g. materializes, reads, identity, transformation)", where)
		}
		if from == to {
			return graph.Batch{}, fmt.Errorf("%s: edge from %s to itself", where, from)
		}
		tr := e.Transformation
		if tr == "" {
			tr = "declared in the catalog file"
		}
		b.Edges = append(b.Edges, graph.Edge{From: from, To: to, Kind: graph.EdgeKind(e.Kind), Transformation: tr})
	}
	return b, nil
}
