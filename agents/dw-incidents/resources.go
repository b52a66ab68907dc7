package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/store"
)

// resourceListLimit bounds each listed kind: the newest are what a person opens.
const resourceListLimit = 50

// resources are the incidents, receipts and plans of the shared store as MCP resources.
func resources(env *mcpkit.Env) []mcpkit.ResourceKind {
	return []mcpkit.ResourceKind{
		{
			URITemplate: "dw://incidents/{id}", Name: "incident", Title: "Incident",
			Description: "One incident: asset, failure mode, status, severity, cause, resolution and its timeline.",
			Read: func(ctx context.Context, _ string, v map[string]string) (string, error) {
				id, st, err := resourceIDAndStore(ctx, env, v["id"])
				if err != nil {
					return "", err
				}
				inc, err := incidents.New(st, env.Now).Get(ctx, id)
				if err != nil {
					return "", err
				}
				return indentJSON(inc)
			},
			List: func(ctx context.Context) ([]mcpkit.ResourceRef, error) {
				st, err := env.Store.Get(ctx)
				if err != nil {
					return nil, err
				}
				list, err := incidents.New(st, env.Now).History(ctx, incidents.Query{Limit: resourceListLimit})
				if err != nil {
					return nil, err
				}
				refs := make([]mcpkit.ResourceRef, len(list))
				for i, inc := range list {
					refs[i] = mcpkit.ResourceRef{URI: fmt.Sprintf("dw://incidents/%d", inc.ID),
						Name:        fmt.Sprintf("Incident #%d: %s on %s (%s)", inc.ID, inc.FailureMode, inc.Asset, inc.Status),
						Description: inc.Summary}
				}
				return refs, nil
			},
		},
		{
			URITemplate: "dw://receipts/{id}", Name: "receipt", Title: "Receipt", MIMEType: "text/markdown",
			Description: "One receipt, by its sequence number, as Markdown: cause, evidence, proposals, approvals, actions, checks before and after, and the undo.",
			Read: func(ctx context.Context, _ string, v map[string]string) (string, error) {
				seq, err := resourceID(v["id"])
				if err != nil {
					return "", err
				}
				chain, err := receiptChain(ctx, env)
				if err != nil {
					return "", err
				}
				r, err := chain.Get(ctx, seq)
				if err != nil {
					return "", err
				}
				b, err := receipts.DecodeBody(r)
				if err != nil {
					return "", err
				}
				return receipts.Markdown(r, b), nil
			},
			List: func(ctx context.Context) ([]mcpkit.ResourceRef, error) {
				chain, err := receiptChain(ctx, env)
				if err != nil {
					return nil, err
				}
				list, err := chain.Recent(ctx, resourceListLimit)
				if err != nil {
					return nil, err
				}
				refs := make([]mcpkit.ResourceRef, len(list))
				for i, r := range list {
					refs[i] = mcpkit.ResourceRef{URI: fmt.Sprintf("dw://receipts/%d", r.Seq),
						Name: fmt.Sprintf("Receipt #%d of incident #%d (%s)", r.Seq, r.IncidentID, r.CreatedAt.UTC().Format("2006-01-02 15:04 MST"))}
				}
				return refs, nil
			},
		},
		{
			URITemplate: "dw://plans/{id}", Name: "plan", Title: "Remediation plan",
			Description: "One remediation plan from propose_remediation: its ordered proposals with executor, payload, undo and blast radius, and the checks verify_incident re-runs.",
			Read: func(ctx context.Context, _ string, v map[string]string) (string, error) {
				id, st, err := resourceIDAndStore(ctx, env, v["id"])
				if err != nil {
					return "", err
				}
				p, err := plans.Get(ctx, st, id)
				if err != nil {
					return "", err
				}
				return indentJSON(p)
			},
		},
	}
}

func resourceID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%q is not an id (a positive number)", s)
	}
	return id, nil
}

// resourceIDAndStore parses a URI's id and opens the shared store.
func resourceIDAndStore(ctx context.Context, env *mcpkit.Env, s string) (int64, *store.Store, error) {
	id, err := resourceID(s)
	if err != nil {
		return 0, nil, err
	}
	st, err := env.Store.Get(ctx)
	return id, st, err
}

func indentJSON(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b), err
}
