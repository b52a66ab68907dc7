package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/mcpkit"
)

// prompts walk a client through an incident with our tools, in the order that keeps a person in
// charge of every change.
func prompts(*mcpkit.Env) []mcpkit.Prompt {
	return []mcpkit.Prompt{
		{
			Name: "investigate_incident", Title: "Investigate an incident",
			Description: "From a failing table or an open incident to its cause, blast radius and history, from evidence only.",
			Arguments: []mcpkit.PromptArgument{
				{Name: "incident_id", Description: "An open incident's id (from open_incident or dw://incidents)"},
				{Name: "asset", Description: "Or the failing asset's URN, e.g. warehouse:sqlite/main.orders_hourly, when no incident is open yet"},
			},
			Render: func(_ context.Context, a map[string]string) (string, error) {
				var b strings.Builder
				switch {
				case a["incident_id"] != "":
					fmt.Fprintf(&b, "Investigate incident #%s with the Data Workers tools, in this order.\n\n", a["incident_id"])
					fmt.Fprintf(&b, "1. Read it: the resource dw://incidents/%s (or get_incident_history) for its asset, failure mode, onset and timeline.\n", a["incident_id"])
				case a["asset"] != "":
					fmt.Fprintf(&b, "Investigate what is wrong with %s with the Data Workers tools, in this order.\n\n", a["asset"])
					b.WriteString("1. Check it: dw-quality run_quality_check on the table; for each failing check, open_incident (it joins an incident already open for the same asset and failure mode).\n")
				default:
					return "", fmt.Errorf("give incident_id or asset")
				}
				b.WriteString(`2. History: get_incident_history for the asset (lineage_of) — has this broken before, and what fixed it?
3. Diagnose: diagnose_incident. Read its evidence, not just its summary: the schema versions near the onset and their field diffs, Flink statements pinned to older versions, connector, statement and Tableflow states on the path, and the topic sample's version mix and null rates.
4. Blast radius: dw-context-catalog blast_radius_analysis on the cause's asset and fields: critical assets (money, customer_facing, external), owners to tell, scheduled jobs and when they next run.
5. Report: the cause with the evidence for it, what is affected and by when (the next scheduled run that pushes wrong data outside), and who owns each part. Say what you could not verify.

Change nothing in this investigation. If a fix is needed, use the prepare_remediation prompt: every change goes through a named approver.`)
				return b.String(), nil
			},
		},
		{
			Name: "prepare_remediation", Title: "Prepare a remediation",
			Description: "Write an incident's plan, route it to its named approvers and, once approved, carry it out and verify it.",
			Arguments: []mcpkit.PromptArgument{
				{Name: "incident_id", Description: "The incident to fix (diagnosed first)", Required: true},
			},
			Render: func(_ context.Context, a map[string]string) (string, error) {
				id := a["incident_id"]
				return fmt.Sprintf(`Prepare the remediation of incident #%[1]s with the Data Workers tools, in this order.

1. Make sure it is diagnosed: read dw://incidents/%[1]s; if it has no cause yet, run diagnose_incident first.
2. Plan: propose_remediation for incident %[1]s. Read the plan (dw://plans/{plan_id}): holds on jobs that push to external sinks before their next run, the schema restore, a corrected statement into a new sink, the dbt change; who executes each step, its undo and blast radius.
3. Route it: request_approval with the plan_id. It goes to the named approvers of the target's domain. You cannot approve it, and must not ask for a token: tell the person who may decide the exact command shown by get_approval_status (dw-incidents approvals show / approve, or the console).
4. Wait for the decision: get_approval_status until each request is approved, rejected or expired. Never retry a rejected request unchanged.
5. Carry out what was approved: remediate for incident %[1]s. It runs only approved payloads, never while the org-wide stop is on; owner-only steps come back as instructions for their owners.
6. Verify: verify_incident re-runs the failing check and the plan's checks. If a check still fails, say so; do not close the incident.
7. The receipt: get_receipt (or dw://receipts/{seq}) records cause, approvals, actions and checks. Give the person its summary and the undo.`, id), nil
			},
		},
	}
}
