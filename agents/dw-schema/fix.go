package main

import (
	"context"
	"fmt"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/fix"
)

type proposeSchemaFixParams struct {
	Subject         string           `json:"subject" jsonschema:"Subject, e.g. orders-value"`
	Version         int              `json:"version,omitempty" jsonschema:"The registered version that broke readers; default the latest"`
	RestoreFrom     int              `json:"restore_from,omitempty" jsonschema:"Version whose removed fields to bring back; default the one before"`
	Schema          string           `json:"schema,omitempty" jsonschema:"A proposed (unregistered) schema to fix instead of a registered version"`
	SchemaFile      string           `json:"schema_file,omitempty" jsonschema:"Path to the proposed schema file to fix"`
	SchemaType      string           `json:"schema_type,omitempty" jsonschema:"AVRO, PROTOBUF or JSON; default from the file extension or the subject"`
	Level           string           `json:"level,omitempty" jsonschema:"The subject's level when working offline (default BACKWARD)"`
	Policy          string           `json:"policy,omitempty" jsonschema:"STRICT (default) or LENIENT"`
	EarlierVersions []earlierVersion `json:"earlier_versions,omitempty" jsonschema:"Earlier versions, oldest first, to work without a registry"`
}

type proof struct {
	Level             string                   `json:"level"`
	Compatible        bool                     `json:"compatible"`
	ComparedVersions  []int                    `json:"compared_versions"`
	Incompatibilities []compat.Incompatibility `json:"incompatibilities"`
	Registry          registryView             `json:"registry"`
}

type proposeSchemaFixResult struct {
	Subject string `json:"subject"`
	// Fixes names what the proposal repairs: "v12" or "the proposed schema".
	Fixes        string `json:"fixes"`
	RestoresFrom int    `json:"restores_from"`
	// NextVersion is the number the registry would give it.
	NextVersion int `json:"next_version"`
	fix.Restoration
	// Changes from the version it fixes.
	Changes []schema.Change `json:"changes"`
	Proof   proof           `json:"proof"`
	Note    string          `json:"note"`
}

func proposeSchemaFix(d *deps) mcpkit.Tool {
	return mcpkit.Read("propose_schema_fix",
		"Write the restoring version of a breaking schema change: the fields it removed come back as optional (nullable with a default) beside the fields it added, "+
			"proven compatible under the subject's rule against every version the registry would compare. Proposes only; registration needs an approval.",
		func(ctx context.Context, p proposeSchemaFixParams) (proposeSchemaFixResult, error) {
			in := schemaInput{Text: p.Schema, File: p.SchemaFile, Type: p.SchemaType}
			ch, err := d.change(ctx, p.Subject, in, p.Version, p.RestoreFrom, p.Level, p.Policy, p.EarlierVersions)
			if err != nil {
				return proposeSchemaFixResult{}, err
			}
			r, err := fix.Restore(ch.old, ch.new)
			if err != nil {
				return proposeSchemaFixResult{}, fmt.Errorf("%s: %w", ch.subj.Name, err)
			}
			proposal, err := schema.Parse(r.Format, r.Text, ch.new.References...)
			if err != nil {
				return proposeSchemaFixResult{}, fmt.Errorf("the restoring schema does not parse (a bug): %w", err)
			}
			// The fix follows every registered version, the broken one included; a proposed
			// schema it replaces was never registered, so it is not compared.
			res := compat.Check(ch.subj.Level, ch.subj.Policy, proposal, ch.subj.Previous(0))
			out := proposeSchemaFixResult{Subject: ch.subj.Name, RestoresFrom: ch.oldVersion, NextVersion: ch.subj.NextVersion(),
				Restoration: r, Changes: schema.Diff(ch.new, proposal),
				Proof: proof{Level: string(res.Level), Compatible: res.Compatible, ComparedVersions: res.Compared, Incompatibilities: res.Incompatibilities}}
			if ch.newVersion > 0 {
				out.Fixes = fmt.Sprintf("v%d", ch.newVersion)
			} else {
				out.Fixes = "the proposed schema"
			}
			out.Proof.Registry = d.askRegistry(ctx, ch.subj, proposal, p.Level, p.Policy, res)
			if res.Compatible {
				out.Note = fmt.Sprintf("compatible under %s: register it as v%d after approval; readers pinned to v%d find %d restored field(s) again", res.Level, out.NextVersion, ch.oldVersion, len(r.Restored))
			} else {
				out.Note = fmt.Sprintf("NOT compatible under %s (see proof.incompatibilities): the registry would refuse it; change the subject's rule or restore by hand", res.Level)
			}
			return out, nil
		})
}
