package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/subject"
)

type checkCompatibilityParams struct {
	Subject         string           `json:"subject,omitempty" jsonschema:"Subject to check against, e.g. api-usage-value (live); optional with earlier_versions"`
	Schema          string           `json:"schema,omitempty" jsonschema:"The proposed schema text"`
	SchemaFile      string           `json:"schema_file,omitempty" jsonschema:"Path to the proposed schema file (.avsc, .proto, .json), e.g. from a pull request"`
	SchemaType      string           `json:"schema_type,omitempty" jsonschema:"AVRO, PROTOBUF or JSON; default from the file extension or the subject"`
	Level           string           `json:"level,omitempty" jsonschema:"Override the subject's level: NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE"`
	Policy          string           `json:"policy,omitempty" jsonschema:"STRICT (default) or LENIENT (JSON Schema content models)"`
	EarlierVersions []earlierVersion `json:"earlier_versions,omitempty" jsonschema:"Earlier versions, oldest first, to check offline without a registry (CI)"`
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
	// ComparedVersions are the versions checked, newest first, as the registry checks them.
	ComparedVersions  []int                    `json:"compared_versions"`
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
	if !in.given() {
		return nil, errors.New("give the proposed schema as schema (text) or schema_file (a path)")
	}
	s, err := d.historyOf(ctx, name, level, policy, in.Type, earlier, true)
	if err != nil {
		return nil, err
	}
	proposed, err := in.load(formatOf(s))
	if err != nil {
		return nil, fmt.Errorf("proposed schema: %w", err)
	}
	j := &judgement{subj: s, proposed: proposed, result: compat.Check(s.Level, s.Policy, proposed, s.Previous(0))}
	j.registry = d.askRegistry(ctx, s, proposed, level, policy, j.result)
	return j, nil
}

// askRegistry puts the same question to the registry, when it would be the same question: a live
// subject judged under its own level and policy.
func (d *deps) askRegistry(ctx context.Context, s *subject.Subject, proposed *schema.Schema, level, policy string, ours compat.Result) registryView {
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
	v, err := c.CheckCompatibility(ctx, s.Name, proposed.Format, proposed.Text, nil)
	if err != nil {
		return registryView{Agreement: "registry could not answer: " + err.Error()}
	}
	rv := registryView{Consulted: true, Compatible: &v.Compatible, Messages: v.Messages}
	if v.Compatible == ours.Compatible {
		rv.Agreement = "agree"
	} else {
		rv.Agreement = fmt.Sprintf("DISAGREE: the registry says compatible=%v, Data Workers says compatible=%v under %s; trust the registry for registration and report the case (compatibility.md)",
			v.Compatible, ours.Compatible, ours.Level)
	}
	return rv
}

func checkCompatibility(d *deps) mcpkit.Tool {
	return mcpkit.Read("check_compatibility",
		"Judge a proposed schema against a subject exactly as Schema Registry would (its level: NONE, BACKWARD(_TRANSITIVE), FORWARD(_TRANSITIVE), FULL(_TRANSITIVE); Avro, Protobuf, JSON Schema), "+
			"with one message per incompatibility. Live against the registry (its own verdict shown beside ours), or offline against earlier_versions for CI. "+
			"Compatible is not safe: follow with assess_impact.",
		func(ctx context.Context, p checkCompatibilityParams) (checkCompatibilityResult, error) {
			j, err := d.judge(ctx, p.Subject, schemaInput{Text: p.Schema, File: p.SchemaFile, Type: p.SchemaType}, p.Level, p.Policy, p.EarlierVersions)
			if err != nil {
				return checkCompatibilityResult{}, err
			}
			mode := "offline"
			if j.subj.Live {
				mode = "live"
			}
			return checkCompatibilityResult{Subject: j.subj.Name, Mode: mode, Level: string(j.subj.Level), LevelSource: j.subj.LevelSource,
				Policy: string(j.subj.Policy), Compatible: j.result.Compatible, ComparedVersions: j.result.Compared,
				Incompatibilities: j.result.Incompatibilities, Registry: j.registry, NotReproduced: j.subj.NotReproduced}, nil
		})
}
