package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/receipts"
)

type getReceiptParams struct {
	IncidentID int64  `json:"incident_id,omitempty" jsonschema:"Every receipt of this incident"`
	Seq        int64  `json:"seq,omitempty" jsonschema:"One receipt by its number in the chain"`
	Format     string `json:"format,omitempty" jsonschema:"json (default) or markdown"`
}

type receiptView struct {
	Seq      int64         `json:"seq"`
	MAC      string        `json:"mac"`
	PrevMAC  string        `json:"prev_mac"`
	Body     receipts.Body `json:"body"`
	Markdown string        `json:"markdown,omitempty"`
}

type getReceiptResult struct {
	Receipts []receiptView `json:"receipts"`
}

func getReceipt(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("get_receipt",
		"Read the receipt of an incident: cause, evidence, proposals, approvals (who, when, which payload hash), actions and their results, "+
			"checks before and after, and the undo. format=markdown adds a rendering for people.",
		func(ctx context.Context, p getReceiptParams) (getReceiptResult, error) {
			if (p.IncidentID == 0) == (p.Seq == 0) {
				return getReceiptResult{}, errors.New("give exactly one of incident_id or seq")
			}
			if p.Format != "" && p.Format != "json" && p.Format != "markdown" {
				return getReceiptResult{}, fmt.Errorf("format %q: use json or markdown", p.Format)
			}
			chain, err := receiptChain(ctx, env)
			if err != nil {
				return getReceiptResult{}, err
			}
			var rs []receipts.Receipt
			if p.Seq != 0 {
				r, err := chain.Get(ctx, p.Seq)
				if err != nil {
					return getReceiptResult{}, err
				}
				rs = []receipts.Receipt{r}
			} else if rs, err = chain.ForIncident(ctx, p.IncidentID); err != nil {
				return getReceiptResult{}, err
			}
			if len(rs) == 0 {
				return getReceiptResult{}, fmt.Errorf("incident #%d has no receipt yet: one is written when verify_incident resolves it", p.IncidentID)
			}
			out := getReceiptResult{}
			for _, r := range rs {
				b, err := receipts.DecodeBody(r)
				if err != nil {
					return getReceiptResult{}, err
				}
				v := receiptView{Seq: r.Seq, MAC: r.MAC, PrevMAC: r.PrevMAC, Body: b}
				if p.Format == "markdown" {
					v.Markdown = receipts.Markdown(r, b)
				}
				out.Receipts = append(out.Receipts, v)
			}
			return out, nil
		}, mcpkit.LocalOnly())
}

type verifyReceiptsParams struct{}

func verifyReceipts(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("verify_receipts",
		"Recompute the receipt chain's MACs from the first receipt to the head and report any receipt that was edited, removed, reordered or truncated.",
		func(ctx context.Context, _ verifyReceiptsParams) (receipts.Verification, error) {
			chain, err := receiptChain(ctx, env)
			if err != nil {
				return receipts.Verification{}, err
			}
			return chain.Verify(ctx)
		}, mcpkit.LocalOnly())
}
