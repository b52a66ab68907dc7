package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/receipts"
)

func TestReceiptsReadAsJSONAndMarkdownAndTamperingIsDetected(t *testing.T) {
	env := mcpkittest.Env(t, "dw-incidents")
	ctx := context.Background()
	chain, err := receiptChain(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	decided := time.Date(2026, 11, 29, 15, 40, 0, 0, time.UTC)
	body := receipts.Body{
		Incident:  receipts.IncidentSummary{ID: 4, Asset: "warehouse:sqlite/main.usage_hourly", FailureMode: "null_rate", Severity: "sev1", Summary: "egress_bytes 18% null", OpenedAt: decided.Add(-35 * time.Minute)},
		Cause:     "v12 of api-usage-value removed response_bytes; usage-hourly-rollup is pinned to v11 and sums it",
		Approvals: []receipts.Approval{{RequestID: 1, Class: "pause_job", Title: "Pause the 23:00 Stripe sync", PayloadSHA256: "ab12", Status: "approved", DecidedBy: "streaming-platform-owner", DecidedAt: &decided}},
		Actions:   []receipts.Action{{ID: 1, Class: "pause_job", Target: "job:airflow/sync_metered_usage_to_stripe", Status: "succeeded", Result: "paused", Undo: "unpause"}},
		Undo:      []string{"unpause sync_metered_usage_to_stripe"},
		Outcome:   "resolved",
	}
	if _, err := chain.Append(ctx, 4, body); err != nil {
		t.Fatal(err)
	}
	var got getReceiptResult
	if e := mcpkittest.Call(t, getReceipt(env), map[string]any{"incident_id": 4, "format": "markdown"}, &got); e != "" {
		t.Fatal(e)
	}
	md := got.Receipts[0].Markdown
	for _, want := range []string{"# Receipt #1 — incident #4", "streaming-platform-owner", "2026-11-29 15:40 UTC", "| #1 | pause_job | approved |", "## Undo"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if e := mcpkittest.Call(t, getReceipt(env), map[string]any{"incident_id": 99}, nil); !strings.Contains(e, "no receipt yet") {
		t.Errorf("missing receipt: %q", e)
	}
	var v receipts.Verification
	if e := mcpkittest.Call(t, verifyReceipts(env), nil, &v); e != "" || !v.OK || v.Receipts != 1 {
		t.Fatalf("%s %+v", e, v)
	}
	st, _ := env.Store.Get(ctx)
	st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE receipts SET body = replace(body, 'streaming-platform-owner', 'someone-else')`)
		return err
	})
	if e := mcpkittest.Call(t, verifyReceipts(env), nil, &v); e != "" || v.OK || !v.Failed || !strings.Contains(v.Problems[0].Reason, "edited") {
		t.Fatalf("%s %+v", e, v)
	}
}
