package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/remediation"
)

func TestRegistrationNeedsAnApprovalForExactlyThatSchemaAndHonoursTheStop(t *testing.T) {
	env, srv, tl := story(t)
	ctx := context.Background()
	sum := sha256.Sum256([]byte("owner-token"))
	env.Config.Domains = []config.Domain{{Name: "platform", Assets: []string{"schema:*"}, Autonomy: "L4",
		Approvers: []config.Approver{{Name: "streaming-platform-owner", TokenSHA256: hex.EncodeToString(sum[:])}}}}
	v13 := readFile(t, filepath.Join("..", "..", "pkg", "schema", "testdata", "scenario", "api-usage-value.v13.avsc"))
	v12 := readFile(t, v12File)
	reg := tl["register_stream_schema"]

	// Without an approval: refused, with the exact request to make.
	msg := mcpkittest.Call(t, reg, map[string]any{"subject": "api-usage-value", "schema": v13}, nil)
	if !strings.Contains(msg, "needs a named approval") || !strings.Contains(msg, `"class":"register_schema"`) {
		t.Fatalf("%q", msg)
	}
	st, _ := env.Store.Get(ctx)
	svc := approvals.New(st, env.Config, env.Now, nil)
	s, err := (&deps{env: env}).load(schemaInput{Text: v13}, "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := svc.Request(ctx, approvals.Proposal{Class: config.ClassRegisterSchema, Target: "schema:api-usage-value",
		Title: "Register v13", Payload: registerPayload("api-usage-value", s)}, "dw-incidents", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Pending: refused.
	if msg := mcpkittest.Call(t, reg, map[string]any{"subject": "api-usage-value", "schema": v13, "approval_request_id": r.ID}, nil); !strings.Contains(msg, "not approved") {
		t.Fatalf("pending: %q", msg)
	}
	if _, err := svc.Decide(ctx, approvals.Decision{RequestID: r.ID, Approver: "streaming-platform-owner", Token: "owner-token", Approve: true, PayloadSHA256: r.PayloadSHA256}); err != nil {
		t.Fatal(err)
	}
	// Approved for v13, not for v12: another schema is refused.
	if msg := mcpkittest.Call(t, reg, map[string]any{"subject": "api-usage-value", "schema": v12, "approval_request_id": r.ID}, nil); !strings.Contains(msg, "does not cover this subject and schema") {
		t.Fatalf("other schema: %q", msg)
	}
	// The stop blocks it.
	if _, err := svc.SetStop(ctx, "streaming-platform-owner", "owner-token", true, "hold everything"); err != nil {
		t.Fatal(err)
	}
	if msg := mcpkittest.Call(t, reg, map[string]any{"subject": "api-usage-value", "schema": v13, "approval_request_id": r.ID}, nil); !strings.Contains(msg, "org-wide stop is on") {
		t.Fatalf("stopped: %q", msg)
	}
	svc.SetStop(ctx, "streaming-platform-owner", "owner-token", false, "")
	var res registerResult
	if msg := mcpkittest.Call(t, reg, map[string]any{"subject": "api-usage-value", "schema": v13, "approval_request_id": r.ID}, &res); msg != "" {
		t.Fatal(msg)
	}
	if res.Action.Status != remediation.StatusSucceeded || res.Action.ApprovedBy != "streaming-platform-owner" || res.Action.Result["version"] != float64(12) {
		t.Fatalf("%+v", res.Action)
	}
	got, ok := srv.Registry.GetSchema("api-usage-value", 12)
	if !ok || !strings.Contains(got.Schema.Schema, "response_bytes") || !strings.Contains(got.Schema.Schema, "response_kib") {
		t.Fatalf("the registry does not hold the approved v13 schema as version 12: %v %q", ok, got.Schema.Schema)
	}
	// An approval is used once.
	if msg := mcpkittest.Call(t, reg, map[string]any{"subject": "api-usage-value", "schema": v13, "approval_request_id": r.ID}, nil); !strings.Contains(msg, "used once") {
		t.Fatalf("second use: %q", msg)
	}
}
