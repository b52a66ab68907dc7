package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/plans"
)

// ProposeInput asks for an incident's plan.
type ProposeInput struct {
	IncidentID int64
	// From is when corrected data starts (zero: 00:00 UTC of the onset day).
	From time.Time
	// Client are caller-written proposals, validated like the generated ones and added after them;
	// ReplaceGenerated keeps only those (the checks stay).
	Client           []plans.ClientProposal
	ReplaceGenerated bool
	// FieldMappings are the caller's reads of removed fields (old field → SQL over the new schema).
	FieldMappings map[string]string
}

// Propose writes and stores the incident's plan from its recorded diagnosis and records it on the
// timeline. A plan with no proposal is refused with the generator's reasons: nothing is stored.
func (s *Service) Propose(ctx context.Context, in ProposeInput) (plans.Plan, error) {
	src, err := s.planSources()
	if err != nil {
		return plans.Plan{}, err
	}
	inc, err := s.incidents.Get(ctx, in.IncidentID)
	if err != nil {
		return plans.Plan{}, err
	}
	diag, err := s.incidents.Diagnosis(ctx, inc.ID)
	if err != nil {
		return plans.Plan{}, err
	}
	plan, err := plans.Build(ctx, src, plans.Request{Incident: inc, Diagnosis: diag, From: in.From, Actor: s.actor(ctx), FieldMappings: in.FieldMappings}, in.Client, in.ReplaceGenerated)
	if err != nil {
		return plans.Plan{}, err
	}
	if len(plan.Proposals) == 0 {
		return plans.Plan{}, fmt.Errorf("nothing to propose for incident #%d: %s; give client-authored proposals", inc.ID, strings.Join(plan.Notes, "; "))
	}
	if plan, err = plans.Save(ctx, s.d.Store, plan, s.d.Now()); err != nil {
		return plans.Plan{}, err
	}
	classes := make([]string, len(plan.Proposals))
	for i, pr := range plan.Proposals {
		classes[i] = pr.Class
	}
	if err := s.incidents.AddEvent(ctx, inc.ID, "proposed", s.actor(ctx), fmt.Sprintf("plan #%d: %s", plan.ID, strings.Join(classes, ", "))); err != nil {
		return plan, err
	}
	return plan, nil
}

func (s *Service) planSources() (plans.Sources, error) {
	if s.d.Plans == nil {
		return plans.Sources{}, errors.New("lifecycle: no plan sources were given")
	}
	return *s.d.Plans, nil
}

// RouteInput is what to send to the approvers: a stored plan's proposals (PlanID), or proposals a
// caller wrote, for an incident (optional for raw proposals).
type RouteInput struct {
	IncidentID int64
	PlanID     int64
	Proposals  []approvals.Proposal
	// Owners are extra people to copy.
	Owners []string
}

// Routed is what routing created.
type Routed struct {
	Requests []approvals.Request
	Stop     approvals.StopState
	// Waiting are the plan steps not routed, each with why and what unblocks it (a missing mapping).
	Waiting []string
}

// Route creates one approval request per proposal, in order. Caller-written proposals are first
// checked as a plan's are (the target decides who approves, so it must be the asset the payload
// changes): one that fails stops everything before any request. A stored plan's proposals go with
// the owners of every asset the plan touches copied. When a request is refused after others were
// created, those come back with the error: the caller must report both.
func (s *Service) Route(ctx context.Context, in RouteInput) (Routed, error) {
	var out Routed
	if in.PlanID != 0 {
		if len(in.Proposals) > 0 {
			return out, errors.New("give proposals or plan_id, not both")
		}
		var err error
		if in, out.Waiting, err = s.fromPlan(ctx, in); err != nil {
			return out, err
		}
		if len(in.Proposals) == 0 && len(out.Waiting) > 0 {
			return out, fmt.Errorf("nothing routed: %s", strings.Join(out.Waiting, "; "))
		}
	} else if len(in.Proposals) > 0 {
		var err error
		if in.Proposals, err = s.validateRaw(ctx, in.Proposals); err != nil {
			return out, err
		}
	}
	if len(in.Proposals) == 0 {
		return out, errors.New("proposals: give at least one proposal, or plan_id from propose_remediation")
	}
	for i, pr := range in.Proposals {
		pr.IncidentID = in.IncidentID
		r, err := s.d.Approvals.Request(ctx, pr, s.actor(ctx), in.Owners)
		if err != nil {
			out.Stop, _ = s.d.Approvals.Stop(ctx)
			return out, fmt.Errorf("proposals[%d]: %w", i, err)
		}
		out.Requests = append(out.Requests, r)
	}
	var err error
	out.Stop, err = s.d.Approvals.Stop(ctx)
	return out, err
}

// validateRaw checks caller-written proposals with the validator plans run on client proposals and
// returns them with their payloads as they would run (the approval binds to that payload's hash).
func (s *Service) validateRaw(ctx context.Context, in []approvals.Proposal) ([]approvals.Proposal, error) {
	src, err := s.planSources()
	if err != nil {
		return nil, err
	}
	client := make([]plans.ClientProposal, len(in))
	for i, pr := range in {
		client[i] = plans.ClientProposal{Class: pr.Class, Target: pr.Target, Title: pr.Title, Payload: pr.Payload}
	}
	checked, err := plans.ValidateProposals(ctx, src, client)
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was requested", err)
	}
	out := make([]approvals.Proposal, len(checked))
	for i, pr := range checked {
		out[i] = approvals.Proposal{Class: pr.Class, Target: pr.Target, Title: pr.Title, Payload: pr.Payload}
	}
	return out, nil
}

// fromPlan turns a stored plan into what to route: every proposal in order, the plan's incident,
// and the catalog owners of the assets the plan touches copied.
// Steps that wait for a field mapping are not routed: they come back as waiting, with the fix.
func (s *Service) fromPlan(ctx context.Context, in RouteInput) (RouteInput, []string, error) {
	plan, err := plans.Get(ctx, s.d.Store, in.PlanID)
	if errors.Is(err, plans.ErrNoPlan) {
		return in, nil, fmt.Errorf("no remediation plan #%d: run propose_remediation first", in.PlanID)
	}
	if err != nil {
		return in, nil, err
	}
	if in.IncidentID != 0 && in.IncidentID != plan.IncidentID {
		return in, nil, fmt.Errorf("plan #%d belongs to incident #%d, not #%d", plan.ID, plan.IncidentID, in.IncidentID)
	}
	var waiting []string
	in.IncidentID = plan.IncidentID
	g := graph.New(s.d.Store, s.d.Now)
	seen := map[string]bool{}
	for _, o := range in.Owners {
		seen[o] = true
	}
	for _, pr := range plan.Proposals {
		if why := pr.Routable(); why != "" {
			waiting = append(waiting, why)
			continue
		}
		in.Proposals = append(in.Proposals, approvals.Proposal{Class: pr.Class, Target: pr.Target, Title: pr.Title, Payload: pr.Payload})
		for _, u := range append([]string{pr.Target}, pr.BlastRadius...) {
			a, err := g.Get(ctx, graph.URN(u))
			if err != nil {
				continue // an asset the plan creates (a -v2 table) is not in the graph yet
			}
			for _, o := range a.Owners {
				if !seen[o] {
					seen[o] = true
					in.Owners = append(in.Owners, o)
				}
			}
		}
	}
	return in, waiting, nil
}
