package main

import (
	"context"
	"time"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/subject"
)

type listSubjectsParams struct {
	Prefix         string `json:"prefix,omitempty" jsonschema:"Only subjects starting with this, e.g. orders"`
	IncludeDeleted bool   `json:"include_deleted,omitempty" jsonschema:"Also list soft-deleted subjects"`
}

type listSubjectsResult struct {
	Registry string   `json:"registry"`
	Subjects []string `json:"subjects"`
	Count    int      `json:"count"`
}

func listSubjects(d *deps) mcpkit.Tool {
	return mcpkit.Read("list_subjects",
		"List Schema Registry subjects (e.g. orders-value), optionally by prefix. Then get_subject for versions and the compatibility level.",
		func(ctx context.Context, p listSubjectsParams) (listSubjectsResult, error) {
			c, err := d.registry()
			if err != nil {
				return listSubjectsResult{}, err
			}
			subs, err := c.Subjects(ctx, p.Prefix, p.IncludeDeleted)
			if err != nil {
				return listSubjectsResult{}, err
			}
			if subs == nil {
				subs = []string{}
			}
			return listSubjectsResult{Registry: c.URL, Subjects: subs, Count: len(subs)}, nil
		})
}

type getSubjectParams struct {
	Subject string `json:"subject" jsonschema:"Subject name, e.g. orders-value"`
	Version int    `json:"version,omitempty" jsonschema:"Version to show in full; default the latest"`
}

type versionInfo struct {
	Version    int                  `json:"version"`
	ID         int                  `json:"id"`
	SchemaType schema.Format        `json:"schema_type"`
	Deleted    bool                 `json:"deleted,omitempty"`
	References []registry.Reference `json:"references,omitempty"`
	// FirstSeen is when Data Workers first saw the version (the registry keeps no timestamps).
	FirstSeen *time.Time `json:"first_seen,omitempty"`
}

type shownVersion struct {
	Version    int            `json:"version"`
	ID         int            `json:"id"`
	SchemaType schema.Format  `json:"schema_type"`
	Name       string         `json:"name,omitempty"`
	Schema     string         `json:"schema"`
	Fields     []schema.Field `json:"fields"`
}

type getSubjectResult struct {
	Subject     string        `json:"subject"`
	Level       string        `json:"level"`
	Policy      string        `json:"policy"`
	LevelSource string        `json:"level_source"`
	Versions    []versionInfo `json:"versions"`
	Shown       shownVersion  `json:"shown"`
}

func getSubject(d *deps) mcpkit.Tool {
	return mcpkit.Read("get_subject",
		"Show a subject: its compatibility level (and where it comes from), every version with id, type, soft-deleted flag and when Data Workers first saw it, and one version's schema and field paths (type, nullability, default).",
		func(ctx context.Context, p getSubjectParams) (getSubjectResult, error) {
			c, err := d.registry()
			if err != nil {
				return getSubjectResult{}, err
			}
			s, err := subject.Load(ctx, c, p.Subject)
			if err != nil {
				return getSubjectResult{}, err
			}
			seen := d.record(ctx, s)
			out := getSubjectResult{Subject: s.Name, Level: string(s.Level), Policy: string(s.Policy), LevelSource: s.LevelSource, Versions: []versionInfo{}}
			for _, raw := range s.Raw {
				vi := versionInfo{Version: raw.Version, ID: raw.ID, SchemaType: raw.Type, Deleted: raw.Deleted, References: raw.References}
				if sn, ok := seen[raw.Version]; ok {
					t := sn.FirstSeen
					vi.FirstSeen = &t
				}
				out.Versions = append(out.Versions, vi)
			}
			v, err := s.Get(p.Version)
			if err != nil {
				return getSubjectResult{}, err
			}
			fields := v.Schema.Fields
			if fields == nil {
				fields = []schema.Field{}
			}
			out.Shown = shownVersion{Version: v.Version, ID: v.ID, SchemaType: v.Schema.Format, Name: v.Schema.Name, Schema: v.Schema.Text, Fields: fields}
			return out, nil
		})
}
