package main

import (
	"context"
	"fmt"
	"time"

	"github.com/dataworkers/dw/pkg/lifecycle"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/plans"
)

type clientProposalParam struct {
	Class   string         `json:"class" jsonschema:"Action class, e.g. pause_job, register_schema, flink_statement or dbt_code"`
	Target  string         `json:"target" jsonschema:"URN of the asset the action changes, e.g. flink:statement/orders-enrich"`
	Title   string         `json:"title" jsonschema:"One line an approver reads"`
	Payload map[string]any `json:"payload,omitempty" jsonschema:"Exactly what would run, nothing else: {dag_id} for pause_job and unpause_job; {dag_id, conf} for trigger_job; {job_id} for trigger_dbt_run; {subject, schema_type, schema} for register_schema"`
	SQL     string         `json:"sql,omitempty" jsonschema:"flink_statement: the statement; it must parse and read only fields of the schema it will pin"`
	Diff    string         `json:"diff,omitempty" jsonschema:"dbt_code: a unified diff of the model file; it must apply to the model's current code"`
	Undo    string         `json:"undo,omitempty" jsonschema:"How to reverse it"`
	Why     string         `json:"why,omitempty" jsonschema:"What it fixes or protects"`
}

type proposeParams struct {
	IncidentID       int64                 `json:"incident_id" jsonschema:"The diagnosed incident to plan for"`
	From             string                `json:"from,omitempty" jsonschema:"RFC 3339 time corrected data starts from (default 00:00 UTC of the onset day)"`
	Proposals        []clientProposalParam `json:"proposals,omitempty" jsonschema:"Client-authored proposals, validated like the generated ones and added after them"`
	ReplaceGenerated bool                  `json:"replace_generated,omitempty" jsonschema:"Keep only the client-authored proposals (the checks stay)"`
	FieldMappings    map[string]string     `json:"field_mappings,omitempty" jsonschema:"Reads of removed fields the plan cannot derive: old field name to one SQL expression over the new schema's fields, e.g. {\"weight_grams\": \"CAST(ROUND(weight_kg * 1000) AS BIGINT)\"}; validated against the new schema's fields and types; the plan says it came from you"`
}

type proposeResult struct {
	Plan plans.Plan `json:"plan"`
	Next string     `json:"next"`
}

func proposeRemediation(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Write("propose_remediation",
		"Write and store an incident's ordered remediation plan: hold jobs that push to external sinks before their next run, the schema restore, "+
			"a corrected Flink statement into a -v2 sink from given offsets, and a dbt diff reading the new table; each says who executes it, undo and blast radius, "+
			"plus the checks verify_incident re-runs. Client SQL, diffs and schemas are validated the same way. Nothing runs: route it with request_approval plan_id.",
		func(ctx context.Context, p proposeParams) (proposeResult, error) {
			in := lifecycle.ProposeInput{IncidentID: p.IncidentID, ReplaceGenerated: p.ReplaceGenerated, FieldMappings: p.FieldMappings}
			if p.From != "" {
				t, err := time.Parse(time.RFC3339, p.From)
				if err != nil {
					return proposeResult{}, fmt.Errorf("from %q: give an RFC 3339 time such as 2026-08-14T00:00:00Z", p.From)
				}
				in.From = t.UTC()
			}
			for _, c := range p.Proposals {
				in.Client = append(in.Client, plans.ClientProposal(c))
			}
			svc, err := lifecycleService(ctx, env)
			if err != nil {
				return proposeResult{}, err
			}
			plan, err := svc.Propose(ctx, in)
			if err != nil {
				return proposeResult{}, err
			}
			next := fmt.Sprintf("Route it to the named approvers: request_approval with plan_id %d. After the fix, verify_incident re-runs the plan's checks.", plan.ID)
			for _, pr := range plan.Proposals {
				if why := pr.Routable(); why != "" {
					next += " Waiting: " + why + "."
				}
			}
			return proposeResult{Plan: plan, Next: next}, nil
		})
}
