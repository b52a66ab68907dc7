package main

import (
	"context"
	"fmt"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/gate"
	"github.com/dataworkers/dw/pkg/schema/impact"
	"github.com/dataworkers/dw/pkg/schema/subject"
)

type assessImpactParams struct {
	Subject         string           `json:"subject" jsonschema:"Subject, e.g. orders-value"`
	Version         int              `json:"version,omitempty" jsonschema:"Registered version to assess; default the latest. Ignored when schema or schema_file is given"`
	BaseVersion     int              `json:"base_version,omitempty" jsonschema:"Version downstream readers were built against; default the one before"`
	Schema          string           `json:"schema,omitempty" jsonschema:"A proposed schema to assess instead of a registered version"`
	SchemaFile      string           `json:"schema_file,omitempty" jsonschema:"Path to the proposed schema file (.avsc, .proto, .json)"`
	SchemaType      string           `json:"schema_type,omitempty" jsonschema:"AVRO, PROTOBUF or JSON; default from the file extension or the subject"`
	EarlierVersions []earlierVersion `json:"earlier_versions,omitempty" jsonschema:"Earlier versions, oldest first, to work without a registry"`
	NewValues       []newValues      `json:"new_values,omitempty" jsonschema:"Values seen in new records that older ones never had (e.g. from sample_topic's value counts), to find readers that compare them"`
}

// newValues names values of one field that are new.
type newValues struct {
	Field  string   `json:"field" jsonschema:"Field path, e.g. status"`
	Values []string `json:"values" jsonschema:"The new values, e.g. [\"ENDED_BY_DRIVER\"]"`
}

// change is what a version or a proposal changes, judged under the subject's rule.
type change struct {
	subj       *subject.Subject
	old, new   *schema.Schema
	oldVersion int
	newVersion int // 0: proposed
	result     compat.Result
}

func (d *deps) change(ctx context.Context, name string, in schemaInput, version, base int, level, policy string, earlier []earlierVersion) (*change, error) {
	s, err := d.history(ctx, name, level, policy, in.Type, earlier)
	if err != nil {
		return nil, err
	}
	ch := &change{subj: s}
	if in.given() {
		if ch.new, err = d.load(in, formatOf(s)); err != nil {
			return nil, fmt.Errorf("proposed schema: %w", err)
		}
		// Already registered as version n: what changed is n against the one before it.
		n, _ := s.RegisteredAs(ch.new)
		from, err := s.Get(base)
		if base == 0 {
			from, err = s.Base(n)
		}
		if err != nil {
			return nil, err
		}
		ch.old, ch.oldVersion = from.Schema, from.Version
		ch.result = compat.Evaluate(compat.Request{Level: s.Level, Policy: s.Policy, Proposed: ch.new, Previous: s.Previous(0), AlreadyRegistered: n})
		return ch, nil
	}
	nv, err := s.Get(version)
	if err != nil {
		return nil, err
	}
	ch.new, ch.newVersion = nv.Schema, nv.Version
	from, ok := s.Before(nv.Version)
	if base != 0 {
		from, err = s.Get(base)
		if err != nil {
			return nil, err
		}
		ok = true
	}
	if !ok {
		return nil, fmt.Errorf("%s v%d is the first version: nothing changed before it; pass base_version", s.Name, nv.Version)
	}
	ch.old, ch.oldVersion = from.Schema, from.Version
	ch.result = compat.Check(s.Level, s.Policy, ch.new, s.Previous(nv.Version))
	return ch, nil
}

func (d *deps) assess(ctx context.Context, ch *change, values ...impact.ValueChange) (impact.Assessment, error) {
	g, err := d.graph(ctx)
	if err != nil {
		return impact.Assessment{}, err
	}
	res := ch.result
	return impact.New(g, d.env.Now).Assess(ctx, impact.Request{Subject: ch.subj.Name, OldVersion: ch.oldVersion, NewVersion: ch.newVersion,
		Old: ch.old, New: ch.new, Policy: ch.subj.Policy, Compatibility: &res, NewValues: values})
}

type assessImpactResult struct {
	impact.Assessment
	Level string `json:"level"`
	// Incompatibilities under the subject's level, when the change is incompatible.
	Incompatibilities []compat.Incompatibility `json:"incompatibilities"`
	// AlreadyRegistered is the version the proposed schema already is (judged against the ones before it).
	AlreadyRegistered int `json:"already_registered_as_version,omitempty"`
}

func assessImpact(d *deps) mcpkit.Tool {
	return mcpkit.Read("assess_impact",
		"What a schema change does downstream, from the context graph: for each removed, renamed, retyped or nullability-changed field, every reader "+
			"(Flink statements with their pinned schema version and SELECT * flagged, Tableflow tables, warehouse columns, dbt models, dashboards, jobs, external sinks), "+
			"what happens to it in one sentence and its severity; what a reader pinned to the old version sees by the format's rules (predicted: nulls, zeros, default, rows missing, statement failed); "+
			"what each reader's own SQL does with the value (reads: COALESCE, SUM, COUNT, filters, joins, CASE, quoted); and readers that compare new enum symbols or given new_values. "+
			"Verdict: incompatible / compatible but breaks N readers / compatible and safe.",
		func(ctx context.Context, p assessImpactParams) (assessImpactResult, error) {
			ch, err := d.change(ctx, p.Subject, schemaInput{Text: p.Schema, File: p.SchemaFile, Type: p.SchemaType}, p.Version, p.BaseVersion, "", "", p.EarlierVersions)
			if err != nil {
				return assessImpactResult{}, err
			}
			var values []impact.ValueChange
			for _, v := range p.NewValues {
				if v.Field == "" || len(v.Values) == 0 {
					return assessImpactResult{}, fmt.Errorf("new_values: each entry needs a field and at least one value")
				}
				values = append(values, impact.ValueChange{Field: v.Field, NewValues: v.Values, Source: "given in new_values"})
			}
			a, err := d.assess(ctx, ch, values...)
			if err != nil {
				return assessImpactResult{}, err
			}
			return assessImpactResult{Assessment: a, Level: string(ch.subj.Level), Incompatibilities: ch.result.Incompatibilities, AlreadyRegistered: ch.result.AlreadyRegistered}, nil
		})
}

type checkSchemaChangeParams struct {
	Subject             string            `json:"subject" jsonschema:"Subject the change is for, e.g. orders-value"`
	Schema              string            `json:"schema,omitempty" jsonschema:"The proposed schema text"`
	SchemaFile          string            `json:"schema_file,omitempty" jsonschema:"Path to the proposed schema file from the pull request (.avsc, .proto, .json)"`
	SchemaType          string            `json:"schema_type,omitempty" jsonschema:"AVRO, PROTOBUF or JSON; default from the file extension or the subject"`
	References          []referenceInput  `json:"references,omitempty" jsonschema:"The schemas the proposed schema references (name, subject, version; their schema inline or as a file, or read from the registry by subject)"`
	Level               string            `json:"level,omitempty" jsonschema:"The subject's level when checking offline (default BACKWARD); overrides the registry's when live"`
	Policy              string            `json:"policy,omitempty" jsonschema:"STRICT (default), LENIENT (JSON Schema content models) or LOGICAL (adds Flink and Iceberg v2 rules)"`
	Metadata            map[string]string `json:"metadata,omitempty" jsonschema:"The proposed schema's metadata properties: with a compatibilityGroup only versions with the same value are compared"`
	EarlierVersions     []earlierVersion  `json:"earlier_versions,omitempty" jsonschema:"Earlier versions, oldest first, to run without a registry"`
	Group               string            `json:"compatibility_group,omitempty" jsonschema:"Offline only: the subject's compatibilityGroup (a metadata property name)"`
	EarlierMetadata     []versionMetadata `json:"earlier_metadata,omitempty" jsonschema:"Offline only: metadata properties of the earlier versions, for compatibility_group"`
	BlockOn             []string          `json:"block_on,omitempty" jsonschema:"Severities of broken readers that block: low, medium, high, critical (default high and critical)"`
	AllowIncompatible   bool              `json:"allow_incompatible,omitempty" jsonschema:"Let a change the registry would refuse pass the gate"`
	AllowUnknownLineage bool              `json:"allow_unknown_lineage,omitempty" jsonschema:"Let the change pass when the context graph does not know the subject (by default that blocks)"`
}

type checkSchemaChangeResult struct {
	gate.Decision
	Subject           string                   `json:"subject"`
	Level             string                   `json:"level"`
	LevelSource       string                   `json:"level_source"`
	Compatible        bool                     `json:"compatible"`
	Incompatibilities []compat.Incompatibility `json:"incompatibilities"`
	// ComparedVersions and CompatibilityGroup say which earlier versions the verdict compared.
	ComparedVersions   []int               `json:"compared_versions"`
	CompatibilityGroup *compat.GroupFilter `json:"compatibility_group,omitempty"`
	Registry           registryView        `json:"registry"`
	Impact             impact.Assessment   `json:"impact"`
	// NotReproduced names the parts of the subject's rule this verdict does not reproduce.
	NotReproduced []string `json:"not_reproduced,omitempty"`
}

func checkSchemaChange(d *deps) mcpkit.Tool {
	return mcpkit.Read("check_schema_change",
		"The CI gate for a schema change (e.g. a pull request's .avsc): registry compatibility plus downstream impact under a policy of which reader severities block. "+
			"Sets failed=true when it blocks, so `dw-schema call check_schema_change` exits 100. Works without a registry when given earlier_versions.",
		func(ctx context.Context, p checkSchemaChangeParams) (checkSchemaChangeResult, error) {
			blockOn, err := gate.ParseBlockOn(p.BlockOn)
			if err != nil {
				return checkSchemaChangeResult{}, err
			}
			in := schemaInput{Text: p.Schema, File: p.SchemaFile, Type: p.SchemaType, Refs: p.References}
			if !in.given() {
				return checkSchemaChangeResult{}, fmt.Errorf("give the proposed schema as schema (text) or schema_file (a path)")
			}
			j, err := d.judgeGroup(ctx, p.Subject, in, p.Level, p.Policy, p.EarlierVersions,
				groupInput{metadata: p.Metadata, group: p.Group, earlier: p.EarlierMetadata})
			if err != nil {
				return checkSchemaChangeResult{}, err
			}
			latest, err := j.subj.Base(j.result.AlreadyRegistered)
			if err != nil {
				// A first version: nothing to be compatible with, and nothing can read it yet.
				return checkSchemaChangeResult{
					Decision: gate.Decision{Verdict: "compatible and safe", BlockOn: blockOn, Blocking: []impact.Reader{},
						Reasons: append([]string{"first version of " + j.subj.Name + ": no earlier version to be compatible with, so no reader of an earlier version can break (lineage not looked up)"}, j.subj.NotReproduced...)},
					Subject: j.subj.Name, Level: string(j.subj.Level), LevelSource: j.subj.LevelSource, Compatible: true,
					Incompatibilities: []compat.Incompatibility{}, ComparedVersions: []int{}, Registry: j.registry, NotReproduced: j.subj.NotReproduced,
					Impact: impact.Assessment{Subject: j.subj.Name, Changes: []schema.Change{}, Readers: []impact.Reader{}, Compatible: true,
						Verdict: "compatible and safe", LineageKnown: false,
						Notes: []string{"first version: the context graph was not consulted, there is no earlier version whose readers could break"}}}, nil
			}
			ch := &change{subj: j.subj, old: latest.Schema, oldVersion: latest.Version, new: j.proposed, result: j.result}
			a, err := d.assess(ctx, ch)
			if err != nil {
				return checkSchemaChangeResult{}, err
			}
			reg := gate.Registry{Consulted: j.registry.Consulted, Compatible: j.registry.Compatible == nil || *j.registry.Compatible}
			dec := gate.Decide(gate.Policy{BlockOn: blockOn, AllowIncompatible: p.AllowIncompatible, AllowUnknownLineage: p.AllowUnknownLineage}, j.result, reg, &a)
			dec.Reasons = append(dec.Reasons, j.subj.NotReproduced...)
			return checkSchemaChangeResult{Decision: dec, Subject: j.subj.Name, Level: string(j.subj.Level), LevelSource: j.subj.LevelSource,
				Compatible: j.result.Compatible, Incompatibilities: j.result.Incompatibilities, ComparedVersions: j.result.Compared, CompatibilityGroup: j.result.Group,
				Registry: j.registry, Impact: a, NotReproduced: j.subj.NotReproduced}, nil
		})
}
