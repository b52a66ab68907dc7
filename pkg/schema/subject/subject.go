// Package subject is a subject's history as compatibility and impact need it: its versions parsed
// (soft-deleted ones kept but marked, since the registry never compares against them) and the rule
// that judges the next one. It comes from a live registry or, for CI without one, from the earlier
// versions given explicitly.
package subject

import (
	"context"
	"fmt"
	"sort"

	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// Version is one version of the subject.
type Version struct {
	Version int            `json:"version"`
	ID      int            `json:"id,omitempty"`
	Deleted bool           `json:"deleted,omitempty"`
	Schema  *schema.Schema `json:"-"`
}

// Subject is a subject's history and rule.
type Subject struct {
	Name   string        `json:"subject"`
	Level  compat.Level  `json:"level"`
	Policy compat.Policy `json:"policy"`
	// LevelSource says where the level came from: the subject's own config, the registry's global
	// level, the caller, or the registry default.
	LevelSource string `json:"level_source"`
	// Versions, oldest first.
	Versions []Version `json:"versions"`
	// Raw are the registry's records, when loaded live.
	Raw []registry.SubjectVersion `json:"-"`
	// Live: loaded from a registry (false: given offline).
	Live bool `json:"live"`
	// ValidateFields: the subject enforces reserved field names (confluent:reserved).
	ValidateFields bool `json:"validate_fields,omitempty"`
	// NotReproduced are the parts of the registry's rule the checker does not reproduce
	// (registry.SubjectConfig.NotReproduced); every verdict on the subject must show them.
	NotReproduced []string `json:"not_reproduced,omitempty"`
}

// Load reads the subject's versions (with soft-deleted ones) and its effective level from the
// registry. An unknown subject is an error.
func Load(ctx context.Context, c *registry.Client, name string) (*Subject, error) {
	return load(ctx, c, name, false)
}

// LoadOrNew is Load, but an unknown subject is an empty history under the global level: what
// the registry judges a first registration against.
func LoadOrNew(ctx context.Context, c *registry.Client, name string) (*Subject, error) {
	return load(ctx, c, name, true)
}

func load(ctx context.Context, c *registry.Client, name string, allowNew bool) (*Subject, error) {
	cfg, err := c.SubjectConfig(ctx, name)
	if err != nil {
		return nil, err
	}
	hist, err := c.History(ctx, name)
	if err != nil {
		if allowNew && registry.IsCode(err, 40401) {
			hist = nil // a subject not registered yet: its first version has nothing to be compatible with
		} else {
			return nil, err
		}
	}
	s := &Subject{Name: name, Level: cfg.Level, Policy: cfg.Policy, Live: true, Raw: hist, NotReproduced: cfg.NotReproduced, ValidateFields: cfg.ValidateFields,
		LevelSource: "registry global level (the subject has none of its own)"}
	if cfg.Explicit {
		s.LevelSource = "registry subject config"
	}
	for _, sv := range hist {
		p, err := c.Parse(ctx, sv)
		if err != nil {
			return nil, err
		}
		s.Versions = append(s.Versions, Version{Version: sv.Version, ID: sv.ID, Deleted: sv.Deleted, Schema: p})
	}
	return s, nil
}

// Given is one earlier version supplied by the caller.
type Given struct {
	Version int
	Format  schema.Format
	Text    string
	// References are the schemas it references, with their text.
	References []schema.Reference
}

// Offline builds a subject from versions given by the caller (a CI job with no registry). An
// empty level means BACKWARD, the registry's default.
func Offline(name string, level compat.Level, policy compat.Policy, given []Given) (*Subject, error) {
	source := "given"
	if level == "" {
		level, source = compat.Backward, "registry default (BACKWARD); pass level to match the subject's rule"
	}
	if policy == "" {
		policy = compat.Strict
	}
	s := &Subject{Name: name, Level: level, Policy: policy, LevelSource: source}
	seen := map[int]bool{}
	for i, g := range given {
		v := g.Version
		if v <= 0 {
			v = i + 1
		}
		if seen[v] {
			return nil, fmt.Errorf("version %d is given twice", v)
		}
		seen[v] = true
		p, err := schema.Parse(g.Format, g.Text, g.References...)
		if err != nil {
			return nil, fmt.Errorf("earlier version %d: %w", v, err)
		}
		s.Versions = append(s.Versions, Version{Version: v, Schema: p})
	}
	sort.Slice(s.Versions, func(i, j int) bool { return s.Versions[i].Version < s.Versions[j].Version })
	return s, nil
}

// Previous returns the non-deleted versions older than before (all when before is 0), oldest
// first: what the registry compares a new version with.
func (s *Subject) Previous(before int) []compat.Version {
	var out []compat.Version
	for _, v := range s.Versions {
		if v.Deleted || (before > 0 && v.Version >= before) {
			continue
		}
		out = append(out, compat.Version{Version: v.Version, Schema: v.Schema})
	}
	return out
}

// Get returns version n (0 = the latest non-deleted one).
func (s *Subject) Get(n int) (Version, error) {
	if n == 0 {
		for i := len(s.Versions) - 1; i >= 0; i-- {
			if !s.Versions[i].Deleted {
				return s.Versions[i], nil
			}
		}
		return Version{}, fmt.Errorf("subject %s has no live version", s.Name)
	}
	for _, v := range s.Versions {
		if v.Version == n {
			return v, nil
		}
	}
	var have []int
	for _, v := range s.Versions {
		have = append(have, v.Version)
	}
	return Version{}, fmt.Errorf("subject %s has no version %d (versions: %v)", s.Name, n, have)
}

// Before returns the latest non-deleted version older than n.
func (s *Subject) Before(n int) (Version, bool) {
	for i := len(s.Versions) - 1; i >= 0; i-- {
		v := s.Versions[i]
		if !v.Deleted && v.Version < n {
			return v, true
		}
	}
	return Version{}, false
}

// NextVersion is the number a newly registered version would get.
func (s *Subject) NextVersion() int {
	n := 0
	for _, v := range s.Versions {
		n = max(n, v.Version)
	}
	return n + 1
}

// RegisteredAs returns the non-deleted version whose schema has p's canonical form, when p is
// already registered under the subject: the registry answers a second registration of it with
// that version, so it must be judged against the versions before it, never against itself.
func (s *Subject) RegisteredAs(p *schema.Schema) (int, bool) {
	for i := len(s.Versions) - 1; i >= 0; i-- {
		v := s.Versions[i]
		if !v.Deleted && v.Schema != nil && v.Schema.SameAs(p) {
			return v.Version, true
		}
	}
	return 0, false
}

// Base is the version a proposed schema changes: the one before it when it is already registered
// as version n (n > 0), else the latest non-deleted version.
func (s *Subject) Base(n int) (Version, error) {
	if n > 0 {
		if v, ok := s.Before(n); ok {
			return v, nil
		}
		return Version{}, fmt.Errorf("%s v%d is the first version: nothing changed before it", s.Name, n)
	}
	return s.Get(0)
}
