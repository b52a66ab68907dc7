package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/notify"
	"github.com/dataworkers/dw/pkg/orchestrators"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/remediation"
	"github.com/dataworkers/dw/pkg/store"
)

type remediateParams struct {
	IncidentID      int64   `json:"incident_id" jsonschema:"The incident whose approved proposals to carry out"`
	RequestIDs      []int64 `json:"request_ids,omitempty" jsonschema:"Only these approval requests, and no plan step without a request (default: every approved request in order, then the plan steps L3 allows)"`
	Window          string  `json:"window,omitempty" jsonschema:"The data the checks re-run over after acting: today (default), yesterday or a duration such as 6h"`
	TimeZone        string  `json:"time_zone,omitempty" jsonschema:"IANA zone for today/yesterday (default UTC)"`
	TimestampColumn string  `json:"timestamp_column,omitempty" jsonschema:"The tables' event-time column for those checks (default: detected)"`
}

type skipped struct {
	RequestID int64  `json:"request_id,omitempty"`
	PlanStep  int    `json:"plan_step,omitempty" jsonschema:"The plan step (order) when it has no approval request"`
	Reason    string `json:"reason"`
}

type remediateResult struct {
	Actions []remediation.Action `json:"actions"`
	Skipped []skipped            `json:"skipped"`
	// Checks are the incident's checks re-run after acting (only when something was executed).
	Checks      []verifyCheck `json:"checks"`
	NeedsPerson string        `json:"needs_person,omitempty" jsonschema:"Why a person must look (a failed action or a check still failing after acting)"`
	// OwnerSteps are the plan's steps the owner still has to carry out; while any is outstanding a
	// check still failing after acting is expected and is not a failure.
	OwnerSteps []string `json:"owner_steps_outstanding,omitempty" jsonschema:"Owner steps not yet verified; checks failing meanwhile are expected"`
	Failed     bool     `json:"failed" jsonschema:"true when an action failed, or a check still fails after acting with no owner step outstanding; the incident records it for a person"`
	Next       string   `json:"next"`
}

// executor builds the remediation executor over the configured orchestrators.
func executor(st *store.Store, env *mcpkit.Env, svc *approvals.Service) *remediation.Executor {
	return remediation.New(st, env.Config, svc, remediation.Backends{
		Airflow:  func() (*orchestrators.Airflow, error) { return orchestrators.NewAirflow(env.Config.Airflow) },
		DBTCloud: func() (*orchestrators.DBTCloud, error) { return orchestrators.NewDBTCloud(env.Config.DBT) },
	}, env.Now)
}

func remediate(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Destructive("remediate",
		"Carry out an incident's approved proposals, in order, and only what policy allows: Airflow pause/unpause/trigger and dbt Cloud runs "+
			"that a named approver approved for exactly that payload, never while the org-wide stop is on. In an L3 domain, reversible plan steps "+
			"with no request whose class and target have a clean record of approved, verified runs also run, recorded with that rule. Owner-only "+
			"classes come back as steps for the owner. Each action is recorded with its undo; then the checks re-run, and a failure goes to a person "+
			"unless owner steps are still outstanding.",
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
			inc, err := incs.Get(ctx, p.IncidentID)
			if err != nil {
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
			exec := executor(st, env, svc)
			out := remediateResult{Actions: []remediation.Action{}, Skipped: []skipped{}, Checks: []verifyCheck{}}
			var problems []string
			// acted records a dispatched action on the timeline (the action itself is already stored, so
			// a timeline write that fails does not undo it) and returns the error of one that did not run.
			acted := func(a remediation.Action, err error) error {
				switch {
				case err == nil:
					out.Actions = append(out.Actions, a)
					_ = incs.AddEvent(ctx, p.IncidentID, "action", env.Agent, actionLine(a))
					return nil
				case a.ID != 0 && a.Status == remediation.StatusFailed:
					out.Actions = append(out.Actions, a)
					problems = append(problems, actionLine(a))
					_ = incs.AddEvent(ctx, p.IncidentID, "action", env.Agent, actionLine(a)+" — needs a person")
					return nil
				}
				return err
			}
			for _, r := range reqs {
				if len(p.RequestIDs) > 0 && !slices.Contains(p.RequestIDs, r.ID) {
					continue
				}
				if r.Status != approvals.StatusApproved {
					out.Skipped = append(out.Skipped, skipped{RequestID: r.ID, Reason: fmt.Sprintf("%s: nothing runs without a named approval", r.Status)})
					continue
				}
				err := acted(exec.Run(ctx, r.ID))
				if errors.Is(err, approvals.ErrStopped) {
					return out, err
				}
				if err != nil {
					out.Skipped = append(out.Skipped, skipped{RequestID: r.ID, Reason: err.Error()})
				}
			}
			for _, id := range p.RequestIDs {
				if !slices.ContainsFunc(reqs, func(r approvals.Request) bool { return r.ID == id }) {
					out.Skipped = append(out.Skipped, skipped{RequestID: id, Reason: fmt.Sprintf("request #%d does not belong to incident #%d", id, p.IncidentID)})
				}
			}
			if len(p.RequestIDs) == 0 {
				// Plan steps nobody has requested yet: only the L3 rule may run them.
				plan, err := plans.Latest(ctx, st, p.IncidentID)
				if err != nil && !errors.Is(err, plans.ErrNoPlan) {
					return out, err
				}
				for _, pr := range remediation.Unrequested(plan, reqs) {
					if pr.Executor != plans.ExecutorDataWorkers {
						out.Skipped = append(out.Skipped, skipped{PlanStep: pr.Order, Reason: fmt.Sprintf("%s on %s is the owner's: request_approval routes it to them", pr.Class, pr.Target)})
						continue
					}
					_, hash, err := approvals.Canonical(pr.Payload)
					if err != nil {
						out.Skipped = append(out.Skipped, skipped{PlanStep: pr.Order, Reason: err.Error()})
						continue
					}
					a, runErr := exec.RunPlanStep(ctx, remediation.PlanStep{IncidentID: p.IncidentID, PlanID: plan.ID, Order: pr.Order, PayloadSHA256: hash})
					if errors.Is(runErr, remediation.ErrNeedsApproval) {
						out.Skipped = append(out.Skipped, skipped{PlanStep: pr.Order, Reason: "no approval request, and it may not run without one: " + runErr.Error()})
						continue
					}
					if a.ID != 0 && a.Status == remediation.StatusSucceeded && runErr != nil {
						out.Skipped = append(out.Skipped, skipped{PlanStep: pr.Order, Reason: runErr.Error()}) // already ran
						continue
					}
					err = acted(a, runErr)
					if errors.Is(err, approvals.ErrStopped) {
						return out, err
					}
					if err != nil {
						out.Skipped = append(out.Skipped, skipped{PlanStep: pr.Order, Reason: err.Error()})
					}
				}
			}
			// After acting, the checks re-run; the incident stays open either way (verify_incident resolves it).
			var executed []remediation.Action
			for _, a := range out.Actions {
				if a.Status != remediation.StatusOwnerSteps {
					executed = append(executed, a)
				}
			}
			if len(executed) > 0 {
				if out.OwnerSteps, err = outstandingOwnerSteps(ctx, st, exec, p.IncidentID); err != nil {
					return out, err
				}
				run, err := runIncidentChecks(ctx, env, inc, checkOptions{Window: p.Window, TimeZone: p.TimeZone, TimestampColumn: p.TimestampColumn})
				switch {
				case err != nil && len(out.OwnerSteps) > 0:
					// Expected too: the checks may read what the owner's steps create (a -v2 table).
					detail := fmt.Sprintf("after remediate: the checks cannot run yet while owner steps are outstanding (%s): %v",
						strings.Join(out.OwnerSteps, "; "), err)
					if err := incs.AddEvent(ctx, p.IncidentID, "checked", env.Agent, detail); err != nil {
						return out, err
					}
				case err != nil:
					problems = append(problems, "the checks could not re-run after acting: "+err.Error())
				case !run.Passed() && len(out.OwnerSteps) > 0:
					// Expected: the data is fixed by the owner's side. The actions stay unverified
					// (neither clean nor failed) until verify_incident judges the data.
					out.Checks = run.Checks
					detail := fmt.Sprintf("after remediate: checks still fail while owner steps are outstanding (%s): %s",
						strings.Join(out.OwnerSteps, "; "), strings.Join(run.Failing, "; "))
					if err := incs.AddEvent(ctx, p.IncidentID, "checked", env.Agent, detail); err != nil {
						return out, err
					}
				default:
					out.Checks = run.Checks
					for _, a := range executed {
						if a.Status == remediation.StatusSucceeded {
							if err := exec.MarkVerified(ctx, a.ID, run.Passed()); err != nil {
								return out, err
							}
						}
					}
					if !run.Passed() {
						problems = append(problems, "after acting, still not passing: "+strings.Join(run.Failing, "; "))
					} else if err := incs.AddEvent(ctx, p.IncidentID, "checked", env.Agent, "after remediate: all passed: "+run.Summary()); err != nil {
						return out, err
					}
				}
			}
			out.Next = "Run verify_incident once the owner's steps are done, to re-check the data, resolve the incident and write the receipt."
			if len(problems) > 0 {
				out.Failed = true
				out.NeedsPerson = strings.Join(problems, " | ")
				if err := needsPerson(ctx, env, incs, inc, out.NeedsPerson); err != nil {
					return out, err
				}
				out.Next = "A person is needed: the incident records what failed. Fix the cause (or finish the owner's steps), then run verify_incident; " +
					"a failed action needs a new approval before remediate runs it again."
			}
			return out, nil
		})
}

// needsPerson records on the incident's timeline that a person must look, and tells them on Slack when
// configured. A notification that fails is recorded, never fatal: the timeline is the record.
func needsPerson(ctx context.Context, env *mcpkit.Env, incs *incidents.Store, inc incidents.Incident, why string) error {
	if err := incs.AddEvent(ctx, inc.ID, "needs_person", env.Agent, "needs a person: "+why); err != nil {
		return err
	}
	n, err := notifier(env)
	if err != nil {
		return incs.AddEvent(ctx, inc.ID, "notify_failed", env.Agent, err.Error())
	}
	if n == nil {
		return nil
	}
	text := fmt.Sprintf("Data Workers needs a person: incident #%d (%s, %s) on %s after remediate: %s. Review it with `dw-incidents console`.",
		inc.ID, inc.Severity, inc.FailureMode, inc.Asset, why)
	if err := n.Notify(ctx, notify.Message{Text: text}); err != nil {
		return incs.AddEvent(ctx, inc.ID, "notify_failed", env.Agent, err.Error())
	}
	return incs.AddEvent(ctx, inc.ID, "notified", env.Agent, "slack")
}

func actionLine(a remediation.Action) string {
	switch {
	case a.Status == remediation.StatusOwnerSteps:
		return fmt.Sprintf("#%d %s on %s handed to the owner (approved by %s)", a.ID, a.Class, a.Target, a.ApprovedBy)
	case a.Status == remediation.StatusFailed:
		return fmt.Sprintf("#%d %s on %s failed: %s", a.ID, a.Class, a.Target, a.Error)
	case a.Authority == remediation.AuthorityL3:
		return fmt.Sprintf("#%d %s on %s done without a new approval (plan #%d step %d; %s); undo: %s", a.ID, a.Class, a.Target, a.PlanID, a.PlanOrder, a.Rule, a.Undo.Description)
	}
	return fmt.Sprintf("#%d %s on %s done (approved by %s); undo: %s", a.ID, a.Class, a.Target, a.ApprovedBy, a.Undo.Description)
}

// outstandingOwnerSteps names the owner's steps of the incident: the latest plan's steps the owner
// executes and the actions handed to the owner. Data Workers cannot see them done; the incident's
// verification is what shows it, so while the incident is open they are outstanding.
func outstandingOwnerSteps(ctx context.Context, st *store.Store, exec *remediation.Executor, incidentID int64) ([]string, error) {
	var out []string
	plan, err := plans.Latest(ctx, st, incidentID)
	if err != nil && !errors.Is(err, plans.ErrNoPlan) {
		return nil, err
	}
	for _, p := range plan.Proposals {
		if p.Executor == plans.ExecutorOwner || config.IsOwnerOnly(p.Class) {
			out = append(out, fmt.Sprintf("plan #%d step %d: %s on %s", plan.ID, p.Order, p.Class, p.Target))
		}
	}
	acts, err := exec.ForIncident(ctx, incidentID)
	if err != nil {
		return nil, err
	}
	for _, a := range acts {
		if a.Status == remediation.StatusOwnerSteps && !slices.ContainsFunc(plan.Proposals, func(p plans.Proposal) bool {
			return p.Class == a.Class && strings.EqualFold(p.Target, a.Target)
		}) {
			out = append(out, fmt.Sprintf("action #%d: %s on %s", a.ID, a.Class, a.Target))
		}
	}
	return out, nil
}
