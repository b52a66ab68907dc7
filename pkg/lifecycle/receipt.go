package lifecycle

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/remediation"
)

// ReceiptRecord is everything a receipt is made of, as read from the store before the incident is
// resolved.
type ReceiptRecord struct {
	Incident   incidents.Incident
	ResolvedAt time.Time
	// Diagnosis is the stored diagnosis JSON ("" when none).
	Diagnosis string
	// Requests are the incident's approval requests, oldest first.
	Requests []approvals.Request
	// Plan is the incident's latest plan (the zero plan when none).
	Plan    plans.Plan
	Actions []remediation.Action
	// Before are the failing points that opened the incident; After the passing re-run.
	Before, After []receipts.Check
}

// AssembleReceipt is the receipt of a resolved incident: its cause and the top candidate's evidence,
// the plan's proposals (each with the request routed for it) and any request no plan step accounts
// for, the decisions, the actions with their undo, and the checks before and after. It only reads
// its argument, so what is written is exactly what was read.
func AssembleReceipt(r ReceiptRecord) receipts.Body {
	inc := r.Incident
	resolvedAt := r.ResolvedAt
	b := receipts.Body{
		Incident: receipts.IncidentSummary{ID: inc.ID, Asset: inc.Asset, FailureMode: inc.FailureMode, Severity: inc.Severity,
			Summary: inc.Summary, OpenedAt: inc.OpenedAt, ResolvedAt: &resolvedAt},
		Cause: inc.Cause, Evidence: []receipts.Evidence{}, Proposals: []receipts.Proposal{}, Approvals: []receipts.Approval{},
		Actions: []receipts.Action{}, ChecksBefore: r.Before, ChecksAfter: r.After, Undo: []string{}, Outcome: incidents.StatusResolved,
		PlanID: r.Plan.ID,
	}
	if b.ChecksBefore == nil {
		b.ChecksBefore = []receipts.Check{}
	}
	if b.ChecksAfter == nil {
		b.ChecksAfter = []receipts.Check{}
	}
	if b.Cause == "" {
		b.Cause = "not diagnosed (no diagnose_incident recorded a cause)"
	}
	b.Evidence = topEvidence(r.Diagnosis)
	used := map[int64]bool{}
	for _, p := range r.Plan.Proposals {
		rp := receipts.Proposal{Order: p.Order, Class: p.Class, Target: p.Target, Title: p.Title, Executor: p.Executor,
			Reversible: p.Reversible, Undo: p.Undo, Why: p.Why}
		if _, h, err := approvals.Canonical(p.Payload); err == nil {
			rp.PayloadSHA256 = h
		}
		if i := remediation.RequestFor(p, r.Requests, used); i >= 0 {
			rp.RequestID = r.Requests[i].ID
		}
		b.Proposals = append(b.Proposals, rp)
	}
	for _, q := range r.Requests {
		if !used[q.ID] {
			b.Proposals = append(b.Proposals, receipts.Proposal{Class: q.Class, Target: q.Target, Title: q.Title, Executor: q.Executor,
				PayloadSHA256: q.PayloadSHA256, RequestID: q.ID})
		}
		b.Approvals = append(b.Approvals, receipts.Approval{RequestID: q.ID, Class: q.Class, Title: q.Title, PayloadSHA256: q.PayloadSHA256,
			Status: q.Status, DecidedBy: q.DecidedBy, DecidedAt: q.DecidedAt})
	}
	for _, a := range r.Actions {
		result := a.Error
		if a.Result != nil {
			if raw, err := json.Marshal(a.Result); err == nil {
				result = string(raw)
			}
		}
		if a.Status == remediation.StatusOwnerSteps {
			result = strings.Join(a.Steps, "; ")
		}
		b.Actions = append(b.Actions, receipts.Action{ID: a.ID, Class: a.Class, Target: a.Target, Status: a.Status, Result: result, Undo: a.Undo.Description,
			Authority: a.Authority, RequestID: a.RequestID, ApprovedBy: a.ApprovedBy, Rule: a.Rule, PayloadSHA256: a.PayloadSHA256})
		if a.Undo.Description != "" {
			b.Undo = append(b.Undo, fmt.Sprintf("action #%d (%s on %s): %s", a.ID, a.Class, a.Target, a.Undo.Description))
		}
	}
	return b
}

// topEvidence is the evidence of the diagnosis's top-ranked cause. It is lenient: a diagnosis stored
// in an older shape simply contributes none.
func topEvidence(raw string) []receipts.Evidence {
	out := []receipts.Evidence{}
	if raw == "" {
		return out
	}
	var d struct {
		Result diagnosis.Result `json:"result"`
	}
	if json.Unmarshal([]byte(raw), &d) != nil || len(d.Result.Candidates) == 0 {
		return out
	}
	top := d.Result.Candidates[0]
	for _, e := range top.Evidence {
		out = append(out, receipts.Evidence{Kind: top.Kind, Source: top.Source, Detail: e})
	}
	return out
}
