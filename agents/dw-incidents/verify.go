package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/remediation"
)

type verifyParams struct {
	IncidentID      int64    `json:"incident_id" jsonschema:"The incident to verify"`
	Window          string   `json:"window,omitempty" jsonschema:"today (default), yesterday or a duration such as 6h: the data the checks re-run over"`
	TimeZone        string   `json:"time_zone,omitempty" jsonschema:"IANA zone for today/yesterday (default UTC)"`
	TimestampColumn string   `json:"timestamp_column,omitempty" jsonschema:"The tables' event-time column (default: detected per table)"`
	KeyColumns      []string `json:"key_columns,omitempty" jsonschema:"The key for a uniqueness incident (default: the key of the failing check)"`
}

type verifyCheck struct {
	Asset   string  `json:"asset"`
	Origin  string  `json:"origin" jsonschema:"incident (its own failing check) or the plan check it came from"`
	Check   string  `json:"check"`
	Metric  string  `json:"metric"`
	Subject string  `json:"subject,omitempty"`
	Value   float64 `json:"value"`
	Status  string  `json:"status" jsonschema:"pass, warn, fail, or not_judged (too little history to judge: does not count as passing)"`
	Why     string  `json:"why"`
}

type verifyResult struct {
	Incident   incidents.Incident `json:"incident" jsonschema:"The incident after verification"`
	Checks     []verifyCheck      `json:"checks"`
	Superseded string             `json:"superseded,omitempty" jsonschema:"Why the incident's own check was replaced by a plan check on the table the data now lands in"`
	Resolved   bool               `json:"resolved"`
	Failed     bool               `json:"failed" jsonschema:"true when a check still fails; the incident stays open"`
	ReceiptSeq int64              `json:"receipt_seq,omitempty"`
	Receipt    string             `json:"receipt_markdown,omitempty"`
	Next       string             `json:"next"`
}

// failureMetric is the history metric each failure mode is judged by.
var failureMetric = map[string]quality.Check{
	"null_rate":             quality.NullRate,
	"rows_per_hour":         quality.Volume,
	"freshness_lag_seconds": quality.Freshness,
	"duplicate_rows":        quality.Uniqueness,
}

func metricOf(mode string) (string, quality.Check, error) {
	for m, c := range failureMetric {
		if string(c) == mode {
			return m, c, nil
		}
	}
	switch mode {
	case "custom":
		return "", "", fmt.Errorf("custom assertions are not kept in the check history, so they cannot be re-run here: run run_quality_check (dw-quality) with the assertion, then resolve the incident")
	case "schema":
		return "", "", fmt.Errorf("a schema incident has no data check to re-run: verify the schema with dw-schema")
	}
	return "", "", fmt.Errorf("failure mode %q has no quality check to re-run", mode)
}

// tableOf reads the table out of a warehouse URN (warehouse:<engine>/<db.schema.table>).
func tableOf(asset, engine string) (string, error) {
	rest, ok := strings.CutPrefix(asset, "warehouse:")
	eng, table, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || table == "" {
		return "", fmt.Errorf("asset %q is not a warehouse table URN (warehouse:<engine>/<table>); only warehouse checks can be re-run", asset)
	}
	if !strings.EqualFold(eng, engine) {
		return "", fmt.Errorf("asset %q is on %s but warehouse.engine is %s: point the config at the asset's warehouse", asset, eng, engine)
	}
	return table, nil
}

func verifyIncident(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Write("verify_incident",
		"Re-run the incident's failing check and the checks of its latest plan over the window (default today). Resolves the incident and writes its "+
			"hash-chained receipt only when every result passes; otherwise records what still fails and returns failed=true.",
		func(ctx context.Context, p verifyParams) (verifyResult, error) {
			incs, err := incidentStore(ctx, env)
			if err != nil {
				return verifyResult{}, err
			}
			inc, err := incs.Get(ctx, p.IncidentID)
			if err != nil {
				return verifyResult{}, err
			}
			if !incidents.IsOpen(inc.Status) {
				return verifyResult{}, fmt.Errorf("incident #%d is already %s; nothing to verify", inc.ID, inc.Status)
			}
			run, err := runIncidentChecks(ctx, env, inc, checkOptions{Window: p.Window, TimeZone: p.TimeZone, TimestampColumn: p.TimestampColumn, KeyColumns: p.KeyColumns})
			if err != nil {
				return verifyResult{}, err
			}
			out := verifyResult{Checks: run.Checks, Superseded: run.Superseded}
			if !run.Passed() {
				detail := fmt.Sprintf("re-ran %s: still not passing: %s", run.Summary(), strings.Join(run.Failing, "; "))
				if err := incs.AddEvent(ctx, inc.ID, "verified", env.Agent, detail); err != nil {
					return verifyResult{}, err
				}
				if out.Incident, err = incs.Get(ctx, inc.ID); err != nil {
					return verifyResult{}, err
				}
				out.Failed = true
				out.Next = "The incident stays open. Fix what still fails (see checks), then run verify_incident again."
				return out, nil
			}
			resolved, err := incs.SetStatus(ctx, inc.ID, incidents.StatusResolved, env.Agent, "verify_incident: all passed: "+run.Summary())
			if err != nil {
				return verifyResult{}, err
			}
			body, err := receiptBody(ctx, env, incs, resolved, run.Before, run.After)
			if err != nil {
				return verifyResult{}, fmt.Errorf("incident #%d is resolved but its receipt could not be assembled: %w", inc.ID, err)
			}
			chain, err := receiptChain(ctx, env)
			if err != nil {
				return verifyResult{}, err
			}
			rc, err := chain.Append(ctx, inc.ID, body)
			if err != nil {
				return verifyResult{}, fmt.Errorf("incident #%d is resolved but its receipt was not written: %w", inc.ID, err)
			}
			out.Incident, out.Resolved, out.ReceiptSeq = resolved, true, rc.Seq
			out.Receipt = receipts.Markdown(rc, body)
			out.Next = fmt.Sprintf("Resolved. get_receipt with incident_id %d reads the receipt; verify_receipts checks the chain.", inc.ID)
			return out, nil
		})
}

// receiptBody assembles the receipt from what the store records: the incident, its diagnosis, the
// approvals, the actions with their undo, and the checks before and after. Succeeded Data Workers
// actions are marked verified, which the L3 clean-record rule reads (MarkVerified never raises an
// action whose checks failed right after it).
func receiptBody(ctx context.Context, env *mcpkit.Env, incs *incidents.Store, inc incidents.Incident, before, after []receipts.Check) (receipts.Body, error) {
	b := receipts.Body{
		Incident: receipts.IncidentSummary{ID: inc.ID, Asset: inc.Asset, FailureMode: inc.FailureMode, Severity: inc.Severity,
			Summary: inc.Summary, OpenedAt: inc.OpenedAt, ResolvedAt: inc.ResolvedAt},
		Cause: inc.Cause, Evidence: []receipts.Evidence{}, Proposals: []receipts.Proposal{}, Approvals: []receipts.Approval{},
		Actions: []receipts.Action{}, ChecksBefore: before, ChecksAfter: after, Undo: []string{}, Outcome: incidents.StatusResolved,
	}
	if b.ChecksBefore == nil {
		b.ChecksBefore = []receipts.Check{}
	}
	if b.Cause == "" {
		b.Cause = "not diagnosed (no diagnose_incident recorded a cause)"
	}
	raw, err := incs.Diagnosis(ctx, inc.ID)
	if err != nil {
		return b, err
	}
	if raw != "" {
		// Lenient: a diagnosis stored by an older shape simply contributes no evidence.
		var d struct {
			Result diagnosis.Result `json:"result"`
		}
		if json.Unmarshal([]byte(raw), &d) == nil && len(d.Result.Candidates) > 0 {
			top := d.Result.Candidates[0]
			for _, e := range top.Evidence {
				b.Evidence = append(b.Evidence, receipts.Evidence{Kind: top.Kind, Source: top.Source, Detail: e})
			}
		}
	}
	svc, err := approvalService(ctx, env)
	if err != nil {
		return b, err
	}
	reqs, err := svc.List(ctx, "", inc.ID)
	if err != nil {
		return b, err
	}
	slices.SortFunc(reqs, func(x, y approvals.Request) int { return int(x.ID - y.ID) })
	st, err := env.Store.Get(ctx)
	if err != nil {
		return b, err
	}
	// The plan's proposals, in order, each with the request routed for it; then requests no plan
	// step accounts for (client-authored proposals requested directly).
	plan, err := plans.Latest(ctx, st, inc.ID)
	if err != nil && !errors.Is(err, plans.ErrNoPlan) {
		return b, err
	}
	b.PlanID = plan.ID
	used := map[int64]bool{}
	for _, p := range plan.Proposals {
		rp := receipts.Proposal{Order: p.Order, Class: p.Class, Target: p.Target, Title: p.Title, Executor: p.Executor,
			Reversible: p.Reversible, Undo: p.Undo, Why: p.Why}
		if _, h, err := approvals.Canonical(p.Payload); err == nil {
			rp.PayloadSHA256 = h
		}
		if i := remediation.RequestFor(p, reqs, used); i >= 0 {
			rp.RequestID = reqs[i].ID
		}
		b.Proposals = append(b.Proposals, rp)
	}
	for _, r := range reqs {
		if !used[r.ID] {
			b.Proposals = append(b.Proposals, receipts.Proposal{Class: r.Class, Target: r.Target, Title: r.Title, Executor: r.Executor,
				PayloadSHA256: r.PayloadSHA256, RequestID: r.ID})
		}
		b.Approvals = append(b.Approvals, receipts.Approval{RequestID: r.ID, Class: r.Class, Title: r.Title, PayloadSHA256: r.PayloadSHA256,
			Status: r.Status, DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt})
	}
	exec := executor(st, env, svc)
	acts, err := exec.ForIncident(ctx, inc.ID)
	if err != nil {
		return b, err
	}
	for _, a := range acts {
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
		if a.Status == remediation.StatusSucceeded {
			if err := exec.MarkVerified(ctx, a.ID, true); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}
