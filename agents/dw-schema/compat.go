package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/subject"
)

type checkCompatibilityParams struct {
	Subject         string            `json:"subject,omitempty" jsonschema:"Subject to check against, e.g. orders-value (live); optional with earlier_versions"`
	Schema          string            `json:"schema,omitempty" jsonschema:"The proposed schema text"`
	SchemaFile      string            `json:"schema_file,omitempty" jsonschema:"Path to the proposed schema file (.avsc, .proto, .json), e.g. from a pull request"`
	SchemaType      string            `json:"schema_type,omitempty" jsonschema:"AVRO, PROTOBUF or JSON; default from the file extension or the subject"`
	Level           string            `json:"level,omitempty" jsonschema:"Override the subject's level: NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE"`
	Policy          string            `json:"policy,omitempty" jsonschema:"STRICT (default), LENIENT (JSON Schema content models) or LOGICAL (adds Flink and Iceberg v2 rules)"`
	References      []referenceInput  `json:"references,omitempty" jsonschema:"The schemas the proposed schema references (name, subject, version; their schema inline or as a file, or read from the registry by subject)"`
	Metadata        map[string]string `json:"metadata,omitempty" jsonschema:"The proposed schema's metadata properties, e.g. {\"application.major.version\": \"2\"}: with a compatibilityGroup only versions with the same value are compared"`
	EarlierVersions []earlierVersion  `json:"earlier_versions,omitempty" jsonschema:"Earlier versions, oldest first, to check offline without a registry (CI)"`
	Group           string            `json:"compatibility_group,omitempty" jsonschema:"Offline only: the subject's compatibilityGroup (a metadata property name)"`
	EarlierMetadata []versionMetadata `json:"earlier_metadata,omitempty" jsonschema:"Offline only: metadata properties of the earlier versions, for compatibility_group or validate_fields"`
	ValidateFields  bool              `json:"validate_fields,omitempty" jsonschema:"Offline only: enforce reserved field names (metadata property confluent:reserved), as a subject with validateFields does; live it comes from the subject's config"`
}

// versionMetadata is an earlier version's metadata properties, given offline.
type versionMetadata struct {
	Version    int               `json:"version" jsonschema:"Version number, as in earlier_versions"`
	Properties map[string]string `json:"properties" jsonschema:"Its metadata properties"`
}

// groupInput is what compatibilityGroup needs beside the subject: the proposed schema's metadata
// and, offline, the group and the earlier versions' metadata.
type groupInput struct {
	metadata map[string]string
	group    string
	earlier  []versionMetadata
	// validateFields enforces reserved field names offline.
	validateFields bool
}

// registryView is the registry's own verdict beside ours.
type registryView struct {
	Consulted  bool     `json:"consulted"`
	Compatible *bool    `json:"compatible,omitempty"`
	Messages   []string `json:"messages,omitempty"`
	// Agreement is "agree", or "DISAGREE: …" with both verdicts, or why it was not asked.
	Agreement string `json:"agreement"`
}

type checkCompatibilityResult struct {
	Subject     string `json:"subject"`
	Mode        string `json:"mode"`
	Level       string `json:"level"`
	LevelSource string `json:"level_source"`
	Policy      string `json:"policy"`
	Compatible  bool   `json:"compatible"`
	// Failed is !Compatible, so `dw-schema call check_compatibility` exits 100 (a failing verdict)
	// on an incompatible one.
	Failed bool `json:"failed"`
	// AlreadyRegistered is the version the proposed schema already is; Note says what that means.
	AlreadyRegistered int    `json:"already_registered_as_version,omitempty"`
	Note              string `json:"note,omitempty"`
	// RuleSet is what judged: format, JSON Schema draft, level, policy, compatibilityGroup.
	RuleSet compat.RuleSet `json:"rule_set"`
	// ComparedVersions are the versions checked, newest first, as the registry checks them.
	ComparedVersions []int `json:"compared_versions"`
	// CompatibilityGroup shows the versions a compatibilityGroup kept and left out.
	CompatibilityGroup *compat.GroupFilter `json:"compatibility_group,omitempty"`
	// LogicalSkipped are versions the LOGICAL rules skipped (no logical type).
	LogicalSkipped    []compat.SkippedVersion  `json:"logical_skipped,omitempty"`
	Incompatibilities []compat.Incompatibility `json:"incompatibilities"`
	Registry          registryView             `json:"registry"`
	// NotReproduced names the parts of the subject's rule this verdict does not reproduce.
	NotReproduced []string `json:"not_reproduced,omitempty"`
}

// judgement is a proposed schema judged against a subject's history, with the registry's view.
type judgement struct {
	subj     *subject.Subject
	proposed *schema.Schema
	result   compat.Result
	registry registryView
}

func (d *deps) judge(ctx context.Context, name string, in schemaInput, level, policy string, earlier []earlierVersion) (*judgement, error) {
	return d.judgeGroup(ctx, name, in, level, policy, earlier, groupInput{})
}

// judgeGroup is judge with compatibilityGroup: the subject's group (live from its config, offline
// as given) filters the earlier versions by their metadata against the proposed schema's.
func (d *deps) judgeGroup(ctx context.Context, name string, in schemaInput, level, policy string, earlier []earlierVersion, g groupInput) (*judgement, error) {
	if !in.given() {
		return nil, errors.New("give the proposed schema as schema (text) or schema_file (a path)")
	}
	in, err := d.withReferences(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("proposed schema: %w", err)
	}
	s, err := d.historyOf(ctx, name, level, policy, in.Type, earlier, true)
	if err != nil {
		return nil, err
	}
	proposed, err := d.load(in, formatOf(s))
	if err != nil {
		return nil, fmt.Errorf("proposed schema: %w", err)
	}
	req := compat.Request{Level: s.Level, Policy: s.Policy, Proposed: proposed, ProposedMetadata: g.metadata, Previous: s.Previous(0),
		ValidateFields: s.ValidateFields || g.validateFields}
	if n, ok := s.RegisteredAs(proposed); ok {
		req.AlreadyRegistered = n
	}
	if err := d.groupOf(ctx, s, g, &req); err != nil {
		return nil, err
	}
	j := &judgement{subj: s, proposed: proposed, result: compat.Evaluate(req)}
	if j.result.LogicalNotReproduced != "" {
		s.NotReproduced = append(s.NotReproduced, "not reproduced: "+j.result.LogicalNotReproduced)
	}
	if n := j.result.AlreadyRegistered; n > 0 {
		j.registry = registryView{Agreement: fmt.Sprintf("registry not consulted: the schema is already registered as version %d, and the registry's compatibility check would compare it with itself", n)}
	} else {
		j.registry = d.askRegistryWith(ctx, s, proposed, level, policy, g.metadata, j.result)
	}
	return j, nil
}

// alreadyRegisteredNote says what a verdict on an already registered schema means.
func alreadyRegisteredNote(r compat.Result) string {
	if r.AlreadyRegistered == 0 {
		return ""
	}
	return fmt.Sprintf("already registered as version %d: judged against the versions before it, as the registry judged it at registration (never against itself)", r.AlreadyRegistered)
}

// groupOf fills the request's compatibilityGroup and the earlier versions' metadata: live from the
// subject's config and the versions the registry returned, offline from the call. The registry's
// "not reproduced" note on the group is replaced by what was done.
func (d *deps) groupOf(ctx context.Context, s *subject.Subject, g groupInput, req *compat.Request) error {
	meta := map[int]map[string]string{}
	defer func() {
		// Every version carries its metadata: a group filters on it, validateFields reads its
		// reserved names.
		for i := range req.Previous {
			req.Previous[i].Metadata = meta[req.Previous[i].Version]
		}
	}()
	if s.Live {
		if g.group != "" || len(g.earlier) > 0 || g.validateFields {
			return errors.New("compatibility_group, earlier_metadata and validate_fields are for offline checks; a live subject's group and validateFields come from its config and its versions' metadata from the registry")
		}
		for _, sv := range s.Raw {
			meta[sv.Version] = sv.Properties()
		}
		var notes []string
		grouped := false
		for _, n := range s.NotReproduced {
			if strings.HasPrefix(n, registry.GroupNotePrefix) {
				grouped = true
			} else {
				notes = append(notes, n)
			}
		}
		s.NotReproduced = notes
		if !grouped {
			return nil
		}
		c, err := d.registry()
		if err != nil {
			return err
		}
		cfg, err := c.SubjectConfig(ctx, s.Name)
		if err != nil {
			return err
		}
		req.Group = cfg.Group
	} else {
		if g.group == "" && !g.validateFields && len(g.earlier) > 0 {
			return errors.New("earlier_metadata needs compatibility_group or validate_fields: name the metadata property the subject's group compares, or enforce reserved field names")
		}
		req.Group = g.group
		for _, m := range g.earlier {
			meta[m.Version] = m.Properties
		}
	}
	if req.Group == "" {
		return nil
	}
	if _, ok := g.metadata[req.Group]; !ok {
		// Verdicts without this result's group detail (check_schema_change) still say it.
		s.NotReproduced = append(s.NotReproduced, fmt.Sprintf("compatibilityGroup %q not applied: the proposed schema has no metadata property %q, so every version was compared; give metadata to compare within its group", req.Group, req.Group))
	}
	return nil
}

// askRegistry puts the same question to the registry, when it would be the same question: a live
// subject judged under its own level and policy.
func (d *deps) askRegistry(ctx context.Context, s *subject.Subject, proposed *schema.Schema, level, policy string, ours compat.Result) registryView {
	return d.askRegistryWith(ctx, s, proposed, level, policy, nil, ours)
}

// askRegistryWith is askRegistry for a proposed schema with metadata properties, sent along so
// the registry applies the same compatibilityGroup.
func (d *deps) askRegistryWith(ctx context.Context, s *subject.Subject, proposed *schema.Schema, level, policy string, metadata map[string]string, ours compat.Result) registryView {
	switch {
	case !s.Live:
		return registryView{Agreement: "registry not consulted: checked offline against the versions given"}
	case level != "" || policy != "":
		return registryView{Agreement: "registry not consulted: the call overrides the subject's level or policy, so its answer would not be comparable"}
	}
	c, err := d.registry()
	if err != nil {
		return registryView{Agreement: "registry not consulted: " + err.Error()}
	}
	v, err := c.CheckCompatibilityWithMetadata(ctx, s.Name, proposed.Format, proposed.Text, nil, metadata)
	if err != nil {
		return registryView{Agreement: "registry could not answer: " + err.Error()}
	}
	rv := registryView{Consulted: true, Compatible: &v.Compatible, Messages: v.Messages}
	if v.Compatible == ours.Compatible {
		rv.Agreement = "agree"
	} else {
		rv.Agreement = fmt.Sprintf("DISAGREE: the registry says compatible=%v, Data Workers says compatible=%v under %s; trust the registry for registration and report the case (docs/reference/schema-rules.md lists what is covered)",
			v.Compatible, ours.Compatible, ours.Level)
	}
	return rv
}

func checkCompatibility(d *deps) mcpkit.Tool {
	return mcpkit.Read("check_compatibility",
		"Judge a proposed schema against a subject exactly as Schema Registry would (its level: NONE, BACKWARD(_TRANSITIVE), FORWARD(_TRANSITIVE), FULL(_TRANSITIVE); "+
			"its compatibilityGroup and LOGICAL policy; Avro, Protobuf, JSON Schema drafts 4 to 2020-12), with one message per incompatibility. Live against the registry (its own verdict shown beside ours), or offline against earlier_versions for CI. "+
			"A schema already registered is judged against the versions before it. Sets failed=true when incompatible, so `dw-schema call check_compatibility` exits 100. "+
			"Compatible is not safe: follow with assess_impact.",
		func(ctx context.Context, p checkCompatibilityParams) (checkCompatibilityResult, error) {
			j, err := d.judgeGroup(ctx, p.Subject, schemaInput{Text: p.Schema, File: p.SchemaFile, Type: p.SchemaType, Refs: p.References}, p.Level, p.Policy, p.EarlierVersions,
				groupInput{metadata: p.Metadata, group: p.Group, earlier: p.EarlierMetadata, validateFields: p.ValidateFields})
			if err != nil {
				return checkCompatibilityResult{}, err
			}
			mode := "offline"
			if j.subj.Live {
				mode = "live"
			}
			return checkCompatibilityResult{Subject: j.subj.Name, Mode: mode, Level: string(j.subj.Level), LevelSource: j.subj.LevelSource,
				Policy: string(j.subj.Policy), Compatible: j.result.Compatible, Failed: !j.result.Compatible,
				AlreadyRegistered: j.result.AlreadyRegistered, Note: alreadyRegisteredNote(j.result), RuleSet: j.result.RuleSet,
				ComparedVersions:   j.result.Compared,
				CompatibilityGroup: j.result.Group, LogicalSkipped: j.result.LogicalSkipped,
				Incompatibilities: j.result.Incompatibilities, Registry: j.registry, NotReproduced: j.subj.NotReproduced}, nil
		})
}
