package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

// routingWorld has two Airflow jobs in the context graph, each in its own domain: the Stripe sync
// (billing, L2, approver ann) and a sandbox DAG (sandbox at the given autonomy, approver intern).
func routingWorld(t *testing.T, sandboxAutonomy string) *mcpkit.Env {
	t.Helper()
	env := mcpkittest.Env(t, "dw-incidents")
	env.Config.Domains = []config.Domain{
		{Name: "billing", Assets: []string{"job:airflow/sync_*", "dbt:*"}, Autonomy: "L2",
			Approvers: []config.Approver{{Name: "ann", TokenSHA256: strings.Repeat("ab", 32)}}},
		{Name: "sandbox", Assets: []string{"job:airflow/sandbox_*"}, Autonomy: sandboxAutonomy,
			Approvers: []config.Approver{{Name: "intern", TokenSHA256: strings.Repeat("cd", 32)}}},
	}
	st, err := env.Store.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graph.New(st, env.Now).Import(context.Background(), graph.Batch{Source: "test:airflow", Assets: []graph.Asset{
		{URN: "job:airflow/sync_metered_usage_to_stripe", Kind: graph.KindJob},
		{URN: "job:airflow/sandbox_x", Kind: graph.KindJob},
	}}); err != nil {
		t.Fatal(err)
	}
	return env
}

func requestCount(t *testing.T, env *mcpkit.Env) int {
	t.Helper()
	st, err := env.Store.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.DB.QueryRow(`SELECT count(*) FROM approval_requests`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The target decides whose approval a request needs, so a raw proposal whose payload changes
// another asset than its target is refused before anything is routed: otherwise the sandbox's
// approver could approve pausing the Stripe sync.
func TestRequestApprovalRefusesAPayloadThatChangesAnotherTarget(t *testing.T) {
	stripe := map[string]any{"dag_id": "sync_metered_usage_to_stripe"}
	for _, tc := range []struct {
		name, sandbox string
		proposal      map[string]any
		want          string
	}{
		{"the reproduction: an L0 sandbox target, the Stripe DAG in the payload", "L0",
			map[string]any{"class": "pause_job", "target": "job:airflow/sandbox_x", "title": "Pause sandbox", "payload": stripe},
			`payload.dag_id "sync_metered_usage_to_stripe" is not the DAG of job:airflow/sandbox_x`},
		{"the same with the sandbox at L2", "L2",
			map[string]any{"class": "pause_job", "target": "job:airflow/sandbox_x", "title": "Pause sandbox", "payload": stripe},
			`payload.dag_id "sync_metered_usage_to_stripe" is not the DAG of job:airflow/sandbox_x`},
		{"trigger_job", "L2",
			map[string]any{"class": "trigger_job", "target": "job:airflow/sandbox_x", "title": "Run sandbox", "payload": stripe},
			"is not the DAG of job:airflow/sandbox_x"},
		{"a target outside the graph", "L2",
			map[string]any{"class": "unpause_job", "target": "job:airflow/sandbox_unknown", "title": "x", "payload": map[string]any{"dag_id": "sandbox_unknown"}},
			"not a known job in the context graph"},
		{"a key the executor would not run", "L2",
			map[string]any{"class": "pause_job", "target": "job:airflow/sync_metered_usage_to_stripe", "title": "x",
				"payload": map[string]any{"dag_id": "sync_metered_usage_to_stripe", "is_paused": true}},
			"is_paused would not be executed"},
		{"a dbt run aimed at a job", "L2",
			map[string]any{"class": "trigger_dbt_run", "target": "job:airflow/sandbox_x", "title": "x", "payload": map[string]any{"job_id": 55}},
			"a trigger_dbt_run targets the dbt asset"},
		{"a schema whose subject is not the target", "L2",
			map[string]any{"class": "register_schema", "target": "job:airflow/sandbox_x", "title": "x",
				"payload": map[string]any{"subject": "api-usage-value", "schema_type": "AVRO", "schema": `{"type":"string"}`}},
			"does not match payload.subject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := routingWorld(t, tc.sandbox)
			e := mcpkittest.Call(t, requestApproval(env), map[string]any{"proposals": []any{tc.proposal}}, nil)
			if !strings.Contains(e, tc.want) || !strings.Contains(e, "nothing was requested") {
				t.Fatalf("error %q, want it to mention %q", e, tc.want)
			}
			if n := requestCount(t, env); n != 0 {
				t.Fatalf("%d requests stored", n)
			}
		})
	}
}

// One bad proposal refuses the whole call: none of the proposals before it is routed.
func TestRequestApprovalChecksEveryProposalBeforeRoutingAny(t *testing.T) {
	env := routingWorld(t, "L2")
	good := map[string]any{"class": "pause_job", "target": "job:airflow/sync_metered_usage_to_stripe", "title": "Pause the Stripe sync",
		"payload": map[string]any{"dag_id": "sync_metered_usage_to_stripe"}}
	bad := map[string]any{"class": "pause_job", "target": "job:airflow/sandbox_x", "title": "Pause sandbox",
		"payload": map[string]any{"dag_id": "sync_metered_usage_to_stripe"}}
	if e := mcpkittest.Call(t, requestApproval(env), map[string]any{"proposals": []any{good, bad}}, nil); !strings.Contains(e, "proposals[1]") {
		t.Fatalf("error %q, want proposals[1] named", e)
	}
	if n := requestCount(t, env); n != 0 {
		t.Fatalf("%d requests stored", n)
	}
}

func TestRequestApprovalRoutesAMatchingProposalAtL2(t *testing.T) {
	env := routingWorld(t, "L2")
	var out approvalsResult
	e := mcpkittest.Call(t, requestApproval(env), map[string]any{"proposals": []any{
		map[string]any{"class": "pause_job", "target": "job:airflow/sync_metered_usage_to_stripe", "title": "Pause the Stripe sync",
			"payload": map[string]any{"dag_id": "sync_metered_usage_to_stripe"}},
		map[string]any{"class": "pause_job", "target": "job:airflow/sandbox_x", "title": "Pause sandbox", "payload": map[string]any{"dag_id": "sandbox_x"}},
	}}, &out)
	if e != "" {
		t.Fatal(e)
	}
	if len(out.Requests) != 2 || out.Requests[0].Domain != "billing" || strings.Join(out.Requests[0].Approvers, ",") != "ann" ||
		out.Requests[1].Domain != "sandbox" || strings.Join(out.Requests[1].Approvers, ",") != "intern" || out.Requests[1].Payload["dag_id"] != "sandbox_x" {
		t.Fatalf("%+v", out.Requests)
	}
}

// L0 answers questions only and L1 changes nothing: a well-formed proposal for such a domain is
// refused with the config key to raise.
func TestRequestApprovalRefusesDomainsBelowL2(t *testing.T) {
	for _, level := range []string{"L0", "L1"} {
		t.Run(level, func(t *testing.T) {
			env := routingWorld(t, level)
			e := mcpkittest.Call(t, requestApproval(env), map[string]any{"proposals": []any{
				map[string]any{"class": "pause_job", "target": "job:airflow/sandbox_x", "title": "Pause sandbox", "payload": map[string]any{"dag_id": "sandbox_x"}},
			}}, nil)
			if !strings.Contains(e, "domain sandbox") || !strings.Contains(e, `"`+level+`"`) || !strings.Contains(e, "domains[1].autonomy") {
				t.Fatalf("error %q", e)
			}
			if n := requestCount(t, env); n != 0 {
				t.Fatalf("%d requests stored", n)
			}
		})
	}
}

// A request refused after others were created comes back with those it created and what failed,
// not as an error that hides requests already waiting for their approvers.
func TestRequestApprovalReturnsTheRequestsItCreatedBeforeAFailure(t *testing.T) {
	env := routingWorld(t, "L1")
	tool := requestApproval(env)
	res, err := tool.Handler(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"proposals": []any{
		map[string]any{"class": "pause_job", "target": "job:airflow/sync_metered_usage_to_stripe", "title": "Pause the sync", "payload": map[string]any{"dag_id": "sync_metered_usage_to_stripe"}},
		map[string]any{"class": "pause_job", "target": "job:airflow/sandbox_x", "title": "Pause sandbox", "payload": map[string]any{"dag_id": "sandbox_x"}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !mcpkit.IsPartial(res) {
		t.Fatalf("isError=%v partial=%v", res.IsError, mcpkit.IsPartial(res))
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out approvalsResult
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Requests) != 1 || out.Requests[0].Target != "job:airflow/sync_metered_usage_to_stripe" {
		t.Fatalf("%s %v", raw, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if !strings.Contains(text, "proposals[1]") || !strings.Contains(text, "domain sandbox") || !strings.Contains(out.Next, "Only the first 1 requests") {
		t.Fatalf("text %q next %q", text, out.Next)
	}
	if n := requestCount(t, env); n != 1 {
		t.Fatalf("%d requests stored", n)
	}
}
