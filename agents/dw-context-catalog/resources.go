package main

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

// resources serve the context graph's assets by URN; they are not listed (a graph holds thousands),
// search_catalog finds them.
func resources(env *mcpkit.Env) []mcpkit.ResourceKind {
	return []mcpkit.ResourceKind{{
		URITemplate: "dw://assets/{urn}", Name: "asset", Title: "Asset of the context graph",
		Description: "One asset by its URN, percent-encoded (dw://assets/schema%3Aorders-value): kind, owners, domain, tags, criticality, schedule, fields, sources and direct neighbours.",
		Read: func(ctx context.Context, _ string, v map[string]string) (string, error) {
			urn, err := url.PathUnescape(v["urn"])
			if err != nil {
				return "", err
			}
			st, err := env.Store.Get(ctx)
			if err != nil {
				return "", err
			}
			a, err := graph.New(st, env.Now).Get(ctx, graph.URN(urn))
			if err != nil {
				return "", err
			}
			b, err := json.MarshalIndent(a, "", "  ")
			return string(b), err
		},
	}}
}
