package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/schema"
)

type diffParams struct {
	Subject       string `json:"subject,omitempty" jsonschema:"Subject to read versions from, e.g. orders-value"`
	FromVersion   int    `json:"from_version,omitempty" jsonschema:"Old version; default the one before to_version (or the latest when comparing a proposed schema)"`
	ToVersion     int    `json:"to_version,omitempty" jsonschema:"New version; default the latest. Ignored when schema or schema_file is given"`
	Schema        string `json:"schema,omitempty" jsonschema:"A proposed schema to compare instead of to_version"`
	SchemaFile    string `json:"schema_file,omitempty" jsonschema:"Path to the proposed schema file (.avsc, .proto, .json)"`
	OldSchema     string `json:"old_schema,omitempty" jsonschema:"The old schema text, to diff two schemas without a registry"`
	OldSchemaFile string `json:"old_schema_file,omitempty" jsonschema:"Path to the old schema file, to diff without a registry"`
	SchemaType    string `json:"schema_type,omitempty" jsonschema:"AVRO, PROTOBUF or JSON; default from the file extension or the subject"`
	// References are what schema and old_schema build on.
	References    []referenceInput `json:"references,omitempty" jsonschema:"The schemas the proposed (new) schema references: name, subject, version, and their schema inline or as a file (or read from the registry by subject)"`
	OldReferences []referenceInput `json:"old_references,omitempty" jsonschema:"The schemas old_schema references, in the same form"`
}

type diffResult struct {
	From    string          `json:"from"`
	To      string          `json:"to"`
	Changes []schema.Change `json:"changes"`
	// AffectingReaders counts removed, renamed, retyped and nullability changes: run assess_impact.
	AffectingReaders int `json:"affecting_readers"`
}

func diffSchemaVersions(d *deps) mcpkit.Tool {
	return mcpkit.Read("diff_schema_versions",
		"Field-level changes between two versions of a subject, or between a version and a proposed schema, or between two schemas given inline or as files: added, removed, renamed (alias or same Protobuf tag), type, nullability, optionality, default and enum-symbol changes.",
		func(ctx context.Context, p diffParams) (diffResult, error) {
			newIn, err := d.withReferences(ctx, schemaInput{Text: p.Schema, File: p.SchemaFile, Type: p.SchemaType, Refs: p.References})
			if err != nil {
				return diffResult{}, fmt.Errorf("new schema: %w", err)
			}
			oldIn, err := d.withReferences(ctx, schemaInput{Text: p.OldSchema, File: p.OldSchemaFile, Type: p.SchemaType, Refs: p.OldReferences})
			if err != nil {
				return diffResult{}, fmt.Errorf("old schema: %w", err)
			}
			var old, nw *schema.Schema
			var fromLabel, toLabel string
			if oldIn.given() {
				if !newIn.given() {
					return diffResult{}, errors.New("old_schema was given without schema: give both to diff without a registry")
				}
				if old, err = d.load(oldIn, ""); err != nil {
					return diffResult{}, fmt.Errorf("old schema: %w", err)
				}
				if nw, err = d.load(newIn, old.Format); err != nil {
					return diffResult{}, fmt.Errorf("new schema: %w", err)
				}
				fromLabel, toLabel = "old schema", "new schema"
			} else {
				s, err := d.history(ctx, p.Subject, "", "", p.SchemaType, nil)
				if err != nil {
					return diffResult{}, err
				}
				if newIn.given() {
					if nw, err = d.load(newIn, formatOf(s)); err != nil {
						return diffResult{}, fmt.Errorf("proposed schema: %w", err)
					}
					toLabel = "proposed schema"
					from, err := s.Get(p.FromVersion)
					if err != nil {
						return diffResult{}, err
					}
					old, fromLabel = from.Schema, fmt.Sprintf("%s v%d", s.Name, from.Version)
				} else {
					to, err := s.Get(p.ToVersion)
					if err != nil {
						return diffResult{}, err
					}
					nw, toLabel = to.Schema, fmt.Sprintf("%s v%d", s.Name, to.Version)
					from, ok := s.Before(to.Version)
					if p.FromVersion != 0 {
						from, err = s.Get(p.FromVersion)
						if err != nil {
							return diffResult{}, err
						}
						ok = true
					}
					if !ok {
						return diffResult{}, fmt.Errorf("%s v%d has no earlier version to compare with; pass from_version", s.Name, to.Version)
					}
					old, fromLabel = from.Schema, fmt.Sprintf("%s v%d", s.Name, from.Version)
				}
			}
			changes := schema.Diff(old, nw)
			if changes == nil {
				changes = []schema.Change{}
			}
			n := 0
			for _, c := range changes {
				if c.Kind.AffectsReaders() {
					n++
				}
			}
			return diffResult{From: fromLabel, To: toLabel, Changes: changes, AffectingReaders: n}, nil
		})
}
