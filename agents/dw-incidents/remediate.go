package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/orchestrators"
	"github.com/dataworkers/dw/pkg/remediation"
)

type remediateParams struct {
	IncidentID int64   `json:"incident_id" jsonschema:"The incident whose approved proposals to carry out"`
	RequestIDs []int64 `json:"request_ids,omitempty" jsonschema:"Only these approval requests (default: every approved request of the incident, in order)"`
}

type skipped struct {
	RequestID int64  `json:"request_id"`
	Reason    string `json:"reason"`
}

type remediateResult struct {
	Actions []remediation.Action `json:"actions"`
	Skipped []skipped            `json:"skipped"`
	Failed  bool                 `json:"failed" jsonschema:"true when an action failed; the incident records it for a person"`
	Next    string               `json:"next"`
}

func remediate(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Destructive("remediate",
		"Carry out an incident's approved proposals, in order, and only what policy allows: Airflow pause/unpause/trigger and dbt Cloud runs "+
			"that a named approver approved for exactly that payload, never while the org-wide stop is on. Owner-only classes (connectors, offsets, "+
			"topics, Flink statements, Tableflow, dbt code) come back as steps for the owner. Each action is recorded with its undo.",
		func(ctx context.Context, p remediateParams) (remediateResult, error) {
			svc, err := approvalService(ctx, env)
			if err != nil {
				return remediateResult{}, err
			}
			if err := svc.CheckNotStopped(ctx); err != nil {
				return remediateResult{}, err
			}
			incs, err := incidentStore(ctx, env)
			if err != nil {
				return remediateResult{}, err
			}
			if _, err := incs.Get(ctx, p.IncidentID); err != nil {
				return remediateResult{}, err
			}
			reqs, err := svc.List(ctx, "", p.IncidentID)
			if err != nil {
				return remediateResult{}, err
			}
			slices.SortFunc(reqs, func(a, b approvals.Request) int { return int(a.ID - b.ID) })
			st, err := env.Store.Get(ctx)
			if err != nil {
				return remediateResult{}, err
			}
			exec := remediation.New(st, env.Config, svc, remediation.Backends{
				Airflow:  func() (*orchestrators.Airflow, error) { return orchestrators.NewAirflow(env.Config.Airflow) },
				DBTCloud: func() (*orchestrators.DBTCloud, error) { return orchestrators.NewDBTCloud(env.Config.DBT) },
			}, env.Now)
			out := remediateResult{Actions: []remediation.Action{}, Skipped: []skipped{}}
			for _, r := range reqs {
				if len(p.RequestIDs) > 0 && !slices.Contains(p.RequestIDs, r.ID) {
					continue
				}
				if r.Status != approvals.StatusApproved {
					out.Skipped = append(out.Skipped, skipped{r.ID, fmt.Sprintf("%s: nothing runs without a named approval", r.Status)})
					continue
				}
				a, err := exec.Run(ctx, r.ID)
				switch {
				case err == nil:
					out.Actions = append(out.Actions, a)
					_ = incs.AddEvent(ctx, p.IncidentID, "action", env.Agent, actionLine(a))
				case a.ID != 0 && a.Status == remediation.StatusFailed:
					out.Actions = append(out.Actions, a)
					out.Failed = true
					_ = incs.AddEvent(ctx, p.IncidentID, "action", env.Agent, actionLine(a)+" — needs a person")
				case errors.Is(err, approvals.ErrStopped):
					return out, err
				default:
					out.Skipped = append(out.Skipped, skipped{r.ID, err.Error()})
				}
			}
			for _, id := range p.RequestIDs {
				if !slices.ContainsFunc(reqs, func(r approvals.Request) bool { return r.ID == id }) {
					out.Skipped = append(out.Skipped, skipped{id, fmt.Sprintf("request #%d does not belong to incident #%d", id, p.IncidentID)})
				}
			}
			out.Next = "Run verify_incident once the owner's steps are done, to re-check the data and write the receipt."
			if out.Failed {
				out.Next = "An action failed and is recorded on the incident for a person; fix the cause, request a new approval, then remediate again."
			}
			return out, nil
		})
}

func actionLine(a remediation.Action) string {
	switch a.Status {
	case remediation.StatusOwnerSteps:
		return fmt.Sprintf("#%d %s on %s handed to the owner (approved by %s)", a.ID, a.Class, a.Target, a.ApprovedBy)
	case remediation.StatusFailed:
		return fmt.Sprintf("#%d %s on %s failed: %s", a.ID, a.Class, a.Target, a.Error)
	}
	return fmt.Sprintf("#%d %s on %s done (approved by %s); undo: %s", a.ID, a.Class, a.Target, a.ApprovedBy, a.Undo.Description)
}
