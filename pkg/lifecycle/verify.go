package lifecycle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/remediation"
)

// VerifyInput says which incident to verify and how its checks re-run.
type VerifyInput struct {
	IncidentID int64
	Checks     CheckOptions
}

// Verification is what a verification found and did.
type Verification struct {
	Incident   incidents.Incident `json:"incident" jsonschema:"The incident after verification"`
	Checks     []Check            `json:"checks"`
	Values     ValueCheck         `json:"values" jsonschema:"The corrected statement's column recomputed from a topic sample (with the plan's mapping) and compared with the warehouse rows it wrote; a fail keeps the incident open"`
	Superseded string             `json:"superseded,omitempty" jsonschema:"Why the incident's own check was replaced by a plan check on the table the data now lands in"`
	Resolved   bool               `json:"resolved"`
	Failed     bool               `json:"failed" jsonschema:"true when a check still fails; the incident stays open"`
	NotPassing []string           `json:"not_passing,omitempty" jsonschema:"One line for each thing that keeps the incident open: a failing result, a check not judged (e.g. a table the corrected statement has not created yet), restored values that differ"`
	ReceiptSeq int64              `json:"receipt_seq,omitempty"`
	Receipt    string             `json:"receipt_markdown,omitempty"`
	Next       string             `json:"next"`
}

// Verify re-runs the incident's checks. When every result passes it resolves the incident, marks its
// succeeded actions verified (the L3 clean-record rule reads that) and appends its receipt, all in
// one store transaction: a failure anywhere leaves the incident open, the actions as they were and
// no receipt. When anything still fails it records what, and the incident stays open.
func (s *Service) Verify(ctx context.Context, in VerifyInput) (Verification, error) {
	inc, err := s.incidents.Get(ctx, in.IncidentID)
	if err != nil {
		return Verification{}, err
	}
	if !incidents.IsOpen(inc.Status) {
		return Verification{}, fmt.Errorf("incident #%d is already %s; nothing to verify", inc.ID, inc.Status)
	}
	checks, err := s.runChecks(ctx, inc, in.Checks)
	if err != nil {
		return Verification{}, err
	}
	out := Verification{Checks: checks.Checks, Superseded: checks.Superseded, Values: s.compareValues(ctx, inc)}
	if v := out.Values; v.Status != ValuesNotPossible {
		checks.After = append(checks.After, receipts.Check{At: s.d.Now(), Asset: v.Asset, Metric: "restored_values", Subject: v.Column,
			Value: float64(v.Mismatched), Status: v.Status, Why: v.Why})
		if v.Status == ValuesFail {
			checks.Failing = append(checks.Failing, "restored values on "+v.Asset+": "+v.Why)
		}
	}
	if !checks.Passed() {
		detail := fmt.Sprintf("re-ran %s: still not passing: %s", checks.Summary(), strings.Join(checks.Failing, "; "))
		if err := s.incidents.AddEvent(ctx, inc.ID, "verified", s.actor(ctx), detail); err != nil {
			return Verification{}, err
		}
		if out.Incident, err = s.incidents.Get(ctx, inc.ID); err != nil {
			return Verification{}, err
		}
		out.Failed, out.NotPassing = true, checks.Failing
		out.Next = "The incident stays open. Fix what still fails (see not_passing), then run verify_incident again."
		return out, nil
	}
	rec, err := s.receiptRecord(ctx, inc, checks)
	if err != nil {
		return Verification{}, fmt.Errorf("incident #%d stays open: reading what its receipt records: %w", inc.ID, err)
	}
	chain, err := s.d.Receipts(ctx)
	if err != nil {
		return Verification{}, fmt.Errorf("incident #%d stays open: %w", inc.ID, err)
	}
	body := AssembleReceipt(rec)
	var rc receipts.Receipt
	err = s.d.Store.Write(ctx, func(tx *sql.Tx) error {
		if err := incidents.SetStatusTx(ctx, tx, inc.ID, incidents.StatusResolved, s.actor(ctx), "verify_incident: all passed: "+checks.Summary(), rec.ResolvedAt); err != nil {
			return err
		}
		for _, a := range rec.Actions {
			if a.Status == remediation.StatusSucceeded {
				if err := remediation.MarkVerifiedTx(ctx, tx, a.ID, true, rec.ResolvedAt); err != nil {
					return err
				}
			}
		}
		var err error
		rc, err = chain.AppendTx(ctx, tx, inc.ID, body)
		return err
	})
	if err != nil {
		return Verification{}, fmt.Errorf("incident #%d stays open with no receipt: resolving it failed: %w", inc.ID, err)
	}
	if out.Incident, err = s.incidents.Get(ctx, inc.ID); err != nil {
		return Verification{}, err
	}
	out.Resolved, out.ReceiptSeq = true, rc.Seq
	out.Receipt = receipts.Markdown(rc, body)
	out.Next = fmt.Sprintf("Resolved. get_receipt with incident_id %d reads the receipt; verify_receipts checks the chain.", inc.ID)
	return out, nil
}

// receiptRecord reads what the receipt of inc records.
func (s *Service) receiptRecord(ctx context.Context, inc incidents.Incident, checks CheckRun) (ReceiptRecord, error) {
	rec := ReceiptRecord{Incident: inc, ResolvedAt: s.d.Now().UTC(), Before: checks.Before, After: checks.After}
	var err error
	if rec.Diagnosis, err = s.incidents.Diagnosis(ctx, inc.ID); err != nil {
		return rec, err
	}
	if rec.Requests, err = s.d.Approvals.List(ctx, "", inc.ID); err != nil {
		return rec, err
	}
	slices.SortFunc(rec.Requests, func(x, y approvals.Request) int { return int(x.ID - y.ID) })
	if rec.Plan, err = plans.Latest(ctx, s.d.Store, inc.ID); err != nil && !errors.Is(err, plans.ErrNoPlan) {
		return rec, err
	}
	rec.Actions, err = s.d.Executor.ForIncident(ctx, inc.ID)
	return rec, err
}
