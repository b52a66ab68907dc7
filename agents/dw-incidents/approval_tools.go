package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/lifecycle"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

type proposalParam struct {
	Class   string         `json:"class" jsonschema:"Action class: pause_job, unpause_job, trigger_job, trigger_dbt_run, register_schema, restart_connector, reset_offsets, change_topic, flink_statement, tableflow or dbt_code"`
	Target  string         `json:"target" jsonschema:"URN of the asset the action changes, e.g. job:airflow/sync_orders_to_crm"`
	Title   string         `json:"title" jsonschema:"One line an approver reads, e.g. Pause the nightly CRM sync until the fix is verified"`
	Payload map[string]any `json:"payload" jsonschema:"Exactly what would run, nothing else: {dag_id} for pause_job and unpause_job; {dag_id, conf} for trigger_job; {job_id} for trigger_dbt_run; {subject, schema_type, schema} for register_schema. The approval binds to its SHA-256"`
}

type requestApprovalParams struct {
	IncidentID int64           `json:"incident_id,omitempty" jsonschema:"The incident these proposals fix, if any"`
	Proposals  []proposalParam `json:"proposals,omitempty" jsonschema:"The proposals to route, in the order they should run; or give plan_id"`
	PlanID     int64           `json:"plan_id,omitempty" jsonschema:"A stored plan from propose_remediation: routes every proposal of it in order, for its incident"`
	Owners     []string        `json:"owners,omitempty" jsonschema:"Extra people to copy, e.g. the catalog owners of the target"`
}

type approvalsResult struct {
	Requests []approvals.Request `json:"requests"`
	Stop     approvals.StopState `json:"org_stop"`
	// Waiting are plan steps request_approval refused to route yet, each with what unblocks it.
	Waiting []string `json:"waiting,omitempty" jsonschema:"Plan steps not routed yet and what unblocks each (e.g. re-propose with field_mappings)"`
	Next    string   `json:"next"`
}

func requestApproval(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Write("request_approval",
		"Route proposals, or every proposal of a stored plan (plan_id from propose_remediation), to the named approvers of the target's domain (owners copied; Slack when configured). "+
			"Proposals are checked as propose_remediation checks them (the target must be the asset the payload changes), and the target's domains must be at autonomy L2 or above. "+
			"Each request binds to the exact payload's SHA-256 and expires then escalates; nothing is ever granted automatically. "+
			"Approvers decide outside MCP with `dw-incidents approvals approve`; poll get_approval_status.",
		func(ctx context.Context, p requestApprovalParams) (approvalsResult, error) {
			svc, err := lifecycleService(ctx, env)
			if err != nil {
				return approvalsResult{}, err
			}
			in := lifecycle.RouteInput{IncidentID: p.IncidentID, PlanID: p.PlanID, Owners: p.Owners}
			for _, pr := range p.Proposals {
				in.Proposals = append(in.Proposals, approvals.Proposal{Class: pr.Class, Target: pr.Target, Title: pr.Title, Payload: pr.Payload})
			}
			routed, err := svc.Route(ctx, in)
			out := approvalsResult{Requests: routed.Requests, Stop: routed.Stop, Waiting: routed.Waiting,
				Next: "Waiting for a named approver: `dw-incidents approvals show ID` then `approve ID --as NAME --sha256 HASH`. Poll get_approval_status."}
			if len(routed.Waiting) > 0 {
				out.Next += " Not routed: " + strings.Join(routed.Waiting, "; ") + "."
			}
			if err != nil {
				if len(routed.Requests) == 0 {
					return approvalsResult{}, err
				}
				// The requests before it exist and wait for their approvers: say so, with them.
				out.Next = fmt.Sprintf("Only the first %d requests were created; fix the one that failed and route it and the ones after it again.", len(routed.Requests))
				return out, mcpkit.Partial(err)
			}
			return out, nil
		})
}

type approvalStatusParams struct {
	RequestID  int64  `json:"request_id,omitempty" jsonschema:"One request; or give incident_id"`
	IncidentID int64  `json:"incident_id,omitempty" jsonschema:"Every request of one incident"`
	Status     string `json:"status,omitempty" jsonschema:"Filter: pending, approved, rejected or expired"`
}

func getApprovalStatus(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("get_approval_status",
		"Read approval requests (one, an incident's, or all pending) with who may decide, the payload hash, escalations, decisions and the org-wide stop. "+
			"Escalation and expiry are applied as of now.",
		func(ctx context.Context, p approvalStatusParams) (approvalsResult, error) {
			switch p.Status {
			case "", approvals.StatusPending, approvals.StatusApproved, approvals.StatusRejected, approvals.StatusExpired:
			default:
				return approvalsResult{}, fmt.Errorf("status %q: use pending, approved, rejected or expired", p.Status)
			}
			svc, err := approvalService(ctx, env)
			if err != nil {
				return approvalsResult{}, err
			}
			var out approvalsResult
			if p.RequestID != 0 {
				r, err := svc.Get(ctx, p.RequestID)
				if err != nil {
					return approvalsResult{}, err
				}
				out.Requests = []approvals.Request{r}
			} else {
				status := p.Status
				if status == "" && p.IncidentID == 0 {
					status = approvals.StatusPending
				}
				if out.Requests, err = svc.List(ctx, status, p.IncidentID); err != nil {
					return approvalsResult{}, err
				}
			}
			if out.Requests == nil {
				out.Requests = []approvals.Request{}
			}
			if out.Stop, err = svc.Stop(ctx); err != nil {
				return approvalsResult{}, err
			}
			out.Next = summarize(out.Requests)
			return out, nil
		})
}

func summarize(rs []approvals.Request) string {
	counts := map[string]int{}
	for _, r := range rs {
		counts[r.Status]++
	}
	return fmt.Sprintf("%d pending, %d approved, %d rejected, %d expired", counts[approvals.StatusPending], counts[approvals.StatusApproved],
		counts[approvals.StatusRejected], counts[approvals.StatusExpired])
}
