package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/notify"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/remediation"
)

// RemediateInput says which incident to act on and how its checks re-run afterwards.
type RemediateInput struct {
	IncidentID int64
	// RequestIDs limits the run to these approval requests and to no plan step without a request.
	RequestIDs []int64
	Checks     CheckOptions
}

// Skipped is a request or plan step that did not run, and why.
type Skipped struct {
	RequestID int64  `json:"request_id,omitempty"`
	PlanStep  int    `json:"plan_step,omitempty" jsonschema:"The plan step (order) when it has no approval request"`
	Reason    string `json:"reason"`
}

// Remediation is what a remediate run did.
type Remediation struct {
	Actions []remediation.Action `json:"actions"`
	Skipped []Skipped            `json:"skipped"`
	// Checks are the incident's checks re-run after acting (only when something was executed).
	Checks      []Check `json:"checks"`
	NeedsPerson string  `json:"needs_person,omitempty" jsonschema:"Why a person must look (a failed action or a check still failing after acting)"`
	// OwnerSteps are the plan's steps the owner still has to carry out; while any is outstanding a
	// check still failing after acting is expected and is not a failure.
	OwnerSteps []string `json:"owner_steps_outstanding,omitempty" jsonschema:"Owner steps not yet verified; checks failing meanwhile are expected"`
	// Stopped is why the run ended part-way (the org-wide stop set mid-run, the store failing): the
	// actions above ran, nothing after them did.
	Stopped string `json:"stopped,omitempty" jsonschema:"Why the run ended part-way; the actions listed ran, nothing after them did"`
	Failed  bool   `json:"failed" jsonschema:"true when an action failed, the run stopped part-way, or a check still fails after acting with no owner step outstanding; the incident records it for a person"`
	Next    string `json:"next"`
}

// Remediate carries out an incident's approved requests in order, then (unless the input names
// requests) the plan steps nobody has requested that the L3 rule lets Data Workers run, and re-runs
// the incident's checks when anything was executed. Nothing runs while the org-wide stop is on.
//
// An error after something ran comes back with the Remediation so far (Stopped and Failed set):
// the caller must report both, never only the error.
func (s *Service) Remediate(ctx context.Context, in RemediateInput) (Remediation, error) {
	out := Remediation{Actions: []remediation.Action{}, Skipped: []Skipped{}, Checks: []Check{}}
	if err := s.d.Approvals.CheckNotStopped(ctx); err != nil {
		return out, err
	}
	inc, err := s.incidents.Get(ctx, in.IncidentID)
	if err != nil {
		return out, err
	}
	reqs, err := s.d.Approvals.List(ctx, "", in.IncidentID)
	if err != nil {
		return out, err
	}
	slices.SortFunc(reqs, func(a, b approvals.Request) int { return int(a.ID - b.ID) })
	r := &run{s: s, inc: inc, out: &out}
	if err := r.requests(ctx, reqs, in.RequestIDs); err != nil {
		return r.stopped(err)
	}
	if len(in.RequestIDs) == 0 {
		if err := r.unrequestedSteps(ctx, reqs); err != nil {
			return r.stopped(err)
		}
	}
	if err := r.recheck(ctx, in.Checks); err != nil {
		return r.stopped(err)
	}
	out.Next = "Run verify_incident once the owner's steps are done, to re-check the data, resolve the incident and write the receipt."
	if len(r.problems) > 0 {
		out.Failed = true
		out.NeedsPerson = strings.Join(r.problems, " | ")
		if err := s.needsPerson(ctx, inc, out.NeedsPerson); err != nil {
			return r.stopped(err)
		}
		out.Next = "A person is needed: the incident records what failed. Fix the cause (or finish the owner's steps), then run verify_incident; " +
			"a failed action needs a new approval before remediate runs it again."
	}
	return out, nil
}

// run is one Remediate call's progress.
type run struct {
	s        *Service
	inc      incidents.Incident
	out      *Remediation
	problems []string
}

// stopped ends the run on err, keeping what it did.
func (r *run) stopped(err error) (Remediation, error) {
	if len(r.out.Actions) > 0 {
		r.out.Stopped = err.Error()
		r.out.Failed = true
		r.out.Next = "The run stopped part-way: the actions listed ran and are recorded; fix what stopped it, then run remediate again (what ran is not repeated)."
	}
	return *r.out, err
}

// acted records a dispatched action on the timeline (the action itself is already stored, so a
// timeline write that fails does not undo it) and returns the error of one that did not run.
func (r *run) acted(ctx context.Context, a remediation.Action, err error) error {
	switch {
	case err == nil:
		r.out.Actions = append(r.out.Actions, a)
		_ = r.s.incidents.AddEvent(ctx, r.inc.ID, "action", r.s.actor(ctx), actionLine(a))
		return nil
	case a.ID != 0 && a.Status == remediation.StatusFailed:
		r.out.Actions = append(r.out.Actions, a)
		r.problems = append(r.problems, actionLine(a))
		_ = r.s.incidents.AddEvent(ctx, r.inc.ID, "action", r.s.actor(ctx), actionLine(a)+" — needs a person")
		return nil
	}
	return err
}

// requests runs the approved requests (only those named, when some are); only the stop ends it.
func (r *run) requests(ctx context.Context, reqs []approvals.Request, only []int64) error {
	for _, q := range reqs {
		if len(only) > 0 && !slices.Contains(only, q.ID) {
			continue
		}
		if q.Status != approvals.StatusApproved {
			r.out.Skipped = append(r.out.Skipped, Skipped{RequestID: q.ID, Reason: fmt.Sprintf("%s: nothing runs without a named approval", q.Status)})
			continue
		}
		a, runErr := r.s.d.Executor.Run(ctx, q.ID)
		err := r.acted(ctx, a, runErr)
		if errors.Is(err, approvals.ErrStopped) {
			return err
		}
		if err != nil {
			r.out.Skipped = append(r.out.Skipped, Skipped{RequestID: q.ID, Reason: err.Error()})
		}
	}
	for _, id := range only {
		if !slices.ContainsFunc(reqs, func(q approvals.Request) bool { return q.ID == id }) {
			r.out.Skipped = append(r.out.Skipped, Skipped{RequestID: id, Reason: fmt.Sprintf("request #%d does not belong to incident #%d", id, r.inc.ID)})
		}
	}
	return nil
}

// unrequestedSteps runs the plan steps nobody has requested yet: only the L3 rule may run them.
func (r *run) unrequestedSteps(ctx context.Context, reqs []approvals.Request) error {
	plan, err := plans.Latest(ctx, r.s.d.Store, r.inc.ID)
	if err != nil && !errors.Is(err, plans.ErrNoPlan) {
		return err
	}
	for _, pr := range remediation.Unrequested(plan, reqs) {
		skip := func(reason string) {
			r.out.Skipped = append(r.out.Skipped, Skipped{PlanStep: pr.Order, Reason: reason})
		}
		if why := pr.Routable(); why != "" {
			skip(why)
			continue
		}
		if pr.Executor != plans.ExecutorDataWorkers {
			skip(fmt.Sprintf("%s on %s is the owner's: request_approval routes it to them", pr.Class, pr.Target))
			continue
		}
		_, hash, err := approvals.Canonical(pr.Payload)
		if err != nil {
			skip(err.Error())
			continue
		}
		a, runErr := r.s.d.Executor.RunPlanStep(ctx, remediation.PlanStep{IncidentID: r.inc.ID, PlanID: plan.ID, Order: pr.Order, PayloadSHA256: hash})
		if errors.Is(runErr, remediation.ErrNeedsApproval) {
			skip("no approval request, and it may not run without one: " + runErr.Error())
			continue
		}
		if a.ID != 0 && a.Status == remediation.StatusSucceeded && runErr != nil {
			skip(runErr.Error()) // already ran
			continue
		}
		err = r.acted(ctx, a, runErr)
		if errors.Is(err, approvals.ErrStopped) {
			return err
		}
		if err != nil {
			skip(err.Error())
		}
	}
	return nil
}

// recheck re-runs the checks after acting; the incident stays open either way (Verify resolves it).
// Checks failing (or unable to run) while owner steps are outstanding are expected: the data is
// fixed on the owner's side, and the actions stay unverified until Verify judges the data.
func (r *run) recheck(ctx context.Context, opts CheckOptions) error {
	var executed []remediation.Action
	for _, a := range r.out.Actions {
		if a.Status != remediation.StatusOwnerSteps {
			executed = append(executed, a)
		}
	}
	if len(executed) == 0 {
		return nil
	}
	s, id := r.s, r.inc.ID
	var err error
	if r.out.OwnerSteps, err = s.outstandingOwnerSteps(ctx, id); err != nil {
		return err
	}
	checks, err := s.runChecks(ctx, r.inc, opts)
	owner := strings.Join(r.out.OwnerSteps, "; ")
	switch {
	case err != nil && len(r.out.OwnerSteps) > 0:
		// The checks may read what the owner's steps create (a new table).
		return s.incidents.AddEvent(ctx, id, "checked", s.actor(ctx),
			fmt.Sprintf("after remediate: the checks cannot run yet while owner steps are outstanding (%s): %v", owner, err))
	case err != nil:
		r.problems = append(r.problems, "the checks could not re-run after acting: "+err.Error())
		return nil
	case !checks.Passed() && len(r.out.OwnerSteps) > 0:
		r.out.Checks = checks.Checks
		return s.incidents.AddEvent(ctx, id, "checked", s.actor(ctx),
			fmt.Sprintf("after remediate: checks still fail while owner steps are outstanding (%s): %s", owner, strings.Join(checks.Failing, "; ")))
	}
	r.out.Checks = checks.Checks
	for _, a := range executed {
		if a.Status == remediation.StatusSucceeded {
			if err := s.d.Executor.MarkVerified(ctx, a.ID, checks.Passed()); err != nil {
				return err
			}
		}
	}
	if !checks.Passed() {
		r.problems = append(r.problems, "after acting, still not passing: "+strings.Join(checks.Failing, "; "))
		return nil
	}
	return s.incidents.AddEvent(ctx, id, "checked", s.actor(ctx), "after remediate: all passed: "+checks.Summary())
}

// needsPerson records on the incident's timeline that a person must look, and tells them when a
// notifier is configured. A notification that fails is recorded, never fatal: the timeline is the record.
func (s *Service) needsPerson(ctx context.Context, inc incidents.Incident, why string) error {
	if err := s.incidents.AddEvent(ctx, inc.ID, "needs_person", s.actor(ctx), "needs a person: "+why); err != nil {
		return err
	}
	n, err := s.d.Notifier()
	if err != nil {
		return s.incidents.AddEvent(ctx, inc.ID, "notify_failed", s.actor(ctx), err.Error())
	}
	if n == nil {
		return nil
	}
	text := fmt.Sprintf("Data Workers needs a person: incident #%d (%s, %s) on %s after remediate: %s. Review it with `dw-incidents console`.",
		inc.ID, inc.Severity, inc.FailureMode, inc.Asset, why)
	if err := n.Notify(ctx, notify.Message{Text: text}); err != nil {
		return s.incidents.AddEvent(ctx, inc.ID, "notify_failed", s.actor(ctx), err.Error())
	}
	return s.incidents.AddEvent(ctx, inc.ID, "notified", s.actor(ctx), "slack")
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
func (s *Service) outstandingOwnerSteps(ctx context.Context, incidentID int64) ([]string, error) {
	var out []string
	plan, err := plans.Latest(ctx, s.d.Store, incidentID)
	if err != nil && !errors.Is(err, plans.ErrNoPlan) {
		return nil, err
	}
	for _, p := range plan.Proposals {
		if p.Executor == plans.ExecutorOwner || config.IsOwnerOnly(p.Class) {
			out = append(out, fmt.Sprintf("plan #%d step %d: %s on %s", plan.ID, p.Order, p.Class, p.Target))
		}
	}
	acts, err := s.d.Executor.ForIncident(ctx, incidentID)
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

// Settle records a person's word on an interrupted action — what the target system shows — and puts
// it on the incident's timeline. Settling as failed lets the approved action run again on the next
// Remediate; nothing runs now. The timeline line is best effort: the action's record is what counts.
func (s *Service) Settle(ctx context.Context, actionID int64, outcome, person, reason string) (remediation.Action, error) {
	a, err := s.d.Executor.Settle(ctx, actionID, outcome, person, reason)
	if err != nil {
		return a, err
	}
	if a.IncidentID != 0 {
		_ = s.incidents.AddEvent(ctx, a.IncidentID, "action", person, fmt.Sprintf("#%d %s on %s settled as %s: %s", a.ID, a.Class, a.Target, a.Status, reason))
	}
	return a, nil
}

// Interrupted lists the actions left running by a process that stopped before recording their
// outcome: each blocks its approval or plan step until a person settles it.
func (s *Service) Interrupted(ctx context.Context) ([]remediation.Action, error) {
	return s.d.Executor.Interrupted(ctx)
}
