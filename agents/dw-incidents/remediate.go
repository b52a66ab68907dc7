package main

import (
	"context"

	"github.com/dataworkers/dw/pkg/lifecycle"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

type remediateParams struct {
	IncidentID      int64   `json:"incident_id" jsonschema:"The incident whose approved proposals to carry out"`
	RequestIDs      []int64 `json:"request_ids,omitempty" jsonschema:"Only these approval requests, and no plan step without a request (default: every approved request in order, then the plan steps L3 allows)"`
	Window          string  `json:"window,omitempty" jsonschema:"The data the checks re-run over after acting: today (default), yesterday or a duration such as 6h"`
	TimeZone        string  `json:"time_zone,omitempty" jsonschema:"IANA zone for today/yesterday (default UTC)"`
	TimestampColumn string  `json:"timestamp_column,omitempty" jsonschema:"The tables' event-time column for those checks (default: detected)"`
}

func remediate(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Destructive("remediate",
		"Carry out an incident's approved proposals, in order, and only what policy allows: Airflow pause/unpause/trigger and dbt Cloud runs "+
			"that a named approver approved for exactly that payload, never while the org-wide stop is on. In an L3 domain, reversible plan steps "+
			"with no request whose class and target have a clean record of approved, verified runs also run, recorded with that rule. Owner-only "+
			"classes come back as steps for the owner. Each action is recorded with its undo; then the checks re-run, and a failure goes to a person "+
			"unless owner steps are still outstanding. A run stopped part-way returns what it did and why it stopped.",
		func(ctx context.Context, p remediateParams) (lifecycle.Remediation, error) {
			svc, err := lifecycleService(ctx, env)
			if err != nil {
				return lifecycle.Remediation{}, err
			}
			out, err := svc.Remediate(ctx, lifecycle.RemediateInput{IncidentID: p.IncidentID, RequestIDs: p.RequestIDs,
				Checks: lifecycle.CheckOptions{Window: p.Window, TimeZone: p.TimeZone, TimestampColumn: p.TimestampColumn}})
			if err != nil && len(out.Actions) > 0 {
				return out, mcpkit.Partial(err)
			}
			return out, err
		})
}
