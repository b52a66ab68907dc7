package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/orchestrators"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/remediation"
	"github.com/dataworkers/dw/pkg/warehouse"
)

type verifyParams struct {
	IncidentID      int64    `json:"incident_id" jsonschema:"The incident to verify"`
	Window          string   `json:"window,omitempty" jsonschema:"today (default), yesterday or a duration such as 6h: the data the checks re-run over"`
	TimeZone        string   `json:"time_zone,omitempty" jsonschema:"IANA zone for today/yesterday (default UTC)"`
	TimestampColumn string   `json:"timestamp_column,omitempty" jsonschema:"The table's event-time column (default: detected)"`
	KeyColumns      []string `json:"key_columns,omitempty" jsonschema:"The key for a uniqueness incident (default: the key of the failing check)"`
}

type verifyCheck struct {
	Check   string  `json:"check"`
	Metric  string  `json:"metric"`
	Subject string  `json:"subject,omitempty"`
	Value   float64 `json:"value"`
	Status  string  `json:"status" jsonschema:"pass, warn or fail"`
	Why     string  `json:"why"`
}

type verifyResult struct {
	Incident   incidents.Incident `json:"incident" jsonschema:"The incident after verification"`
	Checks     []verifyCheck      `json:"checks"`
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
		"Re-run the incident's failing check over the window (default today) on the columns that failed. Resolves the incident and writes its "+
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
			metric, check, err := metricOf(inc.FailureMode)
			if err != nil {
				return verifyResult{}, err
			}
			if env.Config.Warehouse == nil {
				return verifyResult{}, fmt.Errorf("warehouse is not configured: set warehouse.engine and warehouse.dsn in %s", env.Config.Source)
			}
			table, err := tableOf(inc.Asset, env.Config.Warehouse.Engine)
			if err != nil {
				return verifyResult{}, err
			}
			now := env.Now()
			w, err := quality.ParseWindow(quality.WindowSpec{Window: p.Window, TimeZone: p.TimeZone}, now)
			if err != nil {
				return verifyResult{}, err
			}
			st, err := env.Store.Get(ctx)
			if err != nil {
				return verifyResult{}, err
			}
			hist := quality.NewHistory(st)
			// The last run with a failing point of this metric says which subjects failed.
			runs, err := hist.Runs(ctx, quality.HistoryQuery{Asset: inc.Asset, Metric: metric, Limit: 200})
			if err != nil {
				return verifyResult{}, err
			}
			var before []receipts.Check
			var subjects []string
			for _, r := range runs {
				if r.Asset != inc.Asset {
					continue
				}
				for _, m := range r.Metrics {
					if m.Status == string(quality.Fail) || m.Status == string(quality.Warn) {
						before = append(before, receipts.Check{At: r.StartedAt, Asset: r.Asset, Metric: m.Metric, Subject: m.Subject, Value: m.Value, Status: m.Status})
						if m.Subject != "" && !slices.Contains(subjects, m.Subject) {
							subjects = append(subjects, m.Subject)
						}
					}
				}
				if len(before) > 0 {
					break
				}
			}
			req := quality.Request{Table: table, TimestampColumn: p.TimestampColumn, Window: w, Checks: []quality.Check{check}}
			switch check {
			case quality.NullRate:
				req.Columns = subjects
			case quality.Uniqueness:
				req.KeyColumns = p.KeyColumns
				if len(req.KeyColumns) == 0 && len(subjects) > 0 {
					req.KeyColumns = strings.Split(subjects[0], ",")
				}
			}
			wh, err := warehouse.Connect(env.Config.Warehouse)
			if err != nil {
				return verifyResult{}, err
			}
			defer wh.Close()
			rep, err := quality.NewChecker(wh, hist, env.Now).Run(ctx, req)
			if err != nil {
				return verifyResult{}, fmt.Errorf("re-run %s on %s: %w", check, table, err)
			}
			out := verifyResult{Checks: []verifyCheck{}}
			var after []receipts.Check
			var failing []string
			for _, r := range rep.Results {
				out.Checks = append(out.Checks, verifyCheck{Check: r.Check, Metric: r.Metric, Subject: r.Subject, Value: r.Value, Status: string(r.Status), Why: r.Why})
				after = append(after, receipts.Check{At: now, Asset: rep.Asset, Metric: r.Metric, Subject: r.Subject, Value: r.Value, Status: string(r.Status), Why: r.Why})
				if r.Status != quality.Pass {
					name := r.Metric
					if r.Subject != "" {
						name += " (" + r.Subject + ")"
					}
					failing = append(failing, fmt.Sprintf("%s %s: %s", name, r.Status, r.Why))
				}
			}
			if len(rep.Results) == 0 {
				failing = append(failing, "the re-run produced no result for "+string(check))
			}
			if len(failing) > 0 {
				detail := fmt.Sprintf("re-ran %s %s (check run #%d): still not passing: %s", check, w.Label, rep.RunID, strings.Join(failing, "; "))
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
			note := fmt.Sprintf("verify_incident: %s passed %s on %s (check run #%d)", check, w.Label, strings.Join(subjectsOf(rep.Results), ", "), rep.RunID)
			resolved, err := incs.SetStatus(ctx, inc.ID, incidents.StatusResolved, env.Agent, note)
			if err != nil {
				return verifyResult{}, err
			}
			body, err := receiptBody(ctx, env, incs, resolved, before, after)
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

func subjectsOf(rs []quality.Result) []string {
	var out []string
	for _, r := range rs {
		s := r.Metric
		if r.Subject != "" {
			s = r.Subject
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// receiptBody assembles the receipt from what the store records: the incident, its diagnosis, the
// approvals, the actions with their undo, and the checks before and after. Succeeded Data Workers
// actions are marked verified, which the L3 clean-record rule reads.
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
	for _, r := range reqs {
		b.Proposals = append(b.Proposals, receipts.Proposal{Class: r.Class, Target: r.Target, Title: r.Title, Executor: r.Executor})
		b.Approvals = append(b.Approvals, receipts.Approval{RequestID: r.ID, Class: r.Class, Title: r.Title, PayloadSHA256: r.PayloadSHA256,
			Status: r.Status, DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt})
	}
	st, err := env.Store.Get(ctx)
	if err != nil {
		return b, err
	}
	exec := remediation.New(st, env.Config, svc, remediation.Backends{
		Airflow:  func() (*orchestrators.Airflow, error) { return orchestrators.NewAirflow(env.Config.Airflow) },
		DBTCloud: func() (*orchestrators.DBTCloud, error) { return orchestrators.NewDBTCloud(env.Config.DBT) },
	}, env.Now)
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
		b.Actions = append(b.Actions, receipts.Action{ID: a.ID, Class: a.Class, Target: a.Target, Status: a.Status, Result: result, Undo: a.Undo.Description})
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
