package main

import (
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// unitlessV12 is the story's v12 with the replacement named without a unit: no factor can be
// derived, so the plan waits for a mapping instead of guessing one.
func unitlessV12(t *testing.T) string {
	t.Helper()
	return strings.Replace(scenarioSchema(t, 12), `"name": "response_kib"`, `"name": "response_size"`, 1)
}

func TestAPlanWithoutAMappingIsWholeAndItsStatementWaits(t *testing.T) {
	env, id := diagnosedStoryWith(t, unitlessV12(t))
	out := propose(t, env, map[string]any{"incident_id": id})
	p := out.Plan
	var classes []string
	for _, pr := range p.Proposals {
		classes = append(classes, pr.Class)
		t.Logf("%d %s %s: %s [%s] needs=%v", pr.Order, pr.Class, pr.Target, pr.Title, pr.Validation, pr.NeedsMapping)
	}
	if strings.Join(classes, " ") != "pause_job register_schema flink_statement dbt_code" {
		t.Fatalf("the plan must stay whole without a mapping: %v (notes %v)", classes, p.Notes)
	}
	stmt, dbt := p.Proposals[2], p.Proposals[3]
	if strings.Join(stmt.NeedsMapping, ",") != "response_bytes" || stmt.Title != "Needs a mapping for response_bytes: Run usage-hourly-rollup-v2: writes usage-hourly-v2 from 2026-08-14 00:00 UTC" ||
		!strings.Contains(stmt.Why, "tried: no field added beside the removal of response_bytes carries the same quantity") || !strings.Contains(stmt.Validation, "needs a mapping for response_bytes") {
		t.Errorf("the statement must say it needs a mapping and what was tried: %+v", stmt)
	}
	if strings.Join(dbt.NeedsMapping, ",") != "response_bytes" {
		t.Errorf("the dbt change reads what the waiting statement writes, so it waits too: %+v", dbt)
	}
	if !strings.Contains(out.Next, "field_mappings") {
		t.Errorf("next must say how to unblock it: %s", out.Next)
	}

	// request_approval routes the hold and the restore, and refuses the waiting steps with the fix.
	var routed approvalsResult
	res := mcpkittest.Call(t, requestApproval(env), map[string]any{"plan_id": p.ID}, &routed)
	if res != "" {
		t.Fatal(res)
	}
	if len(routed.Requests) != 2 || routed.Requests[0].Class != config.ClassPauseJob || routed.Requests[1].Class != config.ClassRegisterSchema {
		t.Errorf("only the hold and the restore may be routed: %+v", routed.Requests)
	}
	if len(routed.Waiting) != 2 || !strings.Contains(routed.Waiting[0], "run propose_remediation again with field_mappings") ||
		!strings.Contains(routed.Next, "Not routed") {
		t.Errorf("waiting: %v next: %s", routed.Waiting, routed.Next)
	}

	// Given the mapping, the statement reads it and says who gave it; nothing waits.
	p = propose(t, env, map[string]any{"incident_id": id, "field_mappings": map[string]any{"response_bytes": "response_size * 1024"}}).Plan
	if len(p.Proposals) != 4 {
		t.Fatalf("plan with the mapping: %+v", p.Proposals)
	}
	stmt = p.Proposals[2]
	sql, _ := stmt.Payload["sql"].(string)
	if len(stmt.NeedsMapping) != 0 || len(p.Proposals[3].NeedsMapping) != 0 || !strings.Contains(sql, "COALESCE((response_size * 1024), response_bytes)") ||
		!strings.Contains(stmt.Why, "in field_mappings") || len(stmt.Mappings) != 1 || stmt.Mappings[0].Origin != plans.OriginMappingClient {
		t.Errorf("the statement must read the client's mapping: %+v\n%s", stmt, sql)
	}
	if _, err := sqlparse.Parse(sql); err != nil {
		t.Errorf("the statement does not parse: %v", err)
	}
	routed = approvalsResult{}
	if res := mcpkittest.Call(t, requestApproval(env), map[string]any{"plan_id": p.ID}, &routed); res != "" || len(routed.Requests) != 4 || len(routed.Waiting) != 0 {
		t.Errorf("every step routes once mapped: %s %+v", res, routed)
	}
}

func TestFieldMappingsAreValidatedAgainstTheNewSchema(t *testing.T) {
	env, id := diagnosedStoryWith(t, unitlessV12(t))
	for _, tc := range []struct {
		mapping map[string]any
		want    string
	}{
		{map[string]any{"response_bytes": "response_kib * 1024"}, "api-usage-value v12: \"response_kib * 1024\" is not an expression over fields usage_id"},
		{map[string]any{"response_bytes": "response_bytes"}, "reads api-usage.response_bytes, which the pinned schema does not have"},
		{map[string]any{"response_bytes": "(SELECT max(x) FROM other)"}, "without SELECT"},
		{map[string]any{"response_bytes": "response_size) AS mapped FROM t UNION (response_size"}, "without FROM"},
		{map[string]any{"response_bytes": "1024"}, "a constant is not a mapping"},
		{map[string]any{"response_bytes": "endpoint"}, "reads no number"},
		{map[string]any{"response_bytes": "response_size * 1024; DROP TABLE x"}, "one SQL expression"},
		{map[string]any{"response_bytes": "response_size *"}, "is not an expression"},
		{map[string]any{"status_code": "response_size"}, "did not remove or rename"},
	} {
		e := mcpkittest.Call(t, proposeRemediation(env), map[string]any{"incident_id": id, "field_mappings": tc.mapping}, nil)
		if !strings.Contains(e, tc.want) {
			t.Errorf("%v: want %q, got %q", tc.mapping, tc.want, e)
		}
	}
	// A mapping that CASTs a string is a number.
	p := propose(t, env, map[string]any{"incident_id": id, "field_mappings": map[string]any{"response_bytes": "CAST(endpoint AS BIGINT)"}}).Plan
	if len(p.Proposals) != 4 || len(p.Proposals[2].NeedsMapping) != 0 {
		t.Errorf("plan: %+v", p.Proposals)
	}
}

// The derived conversion of the story says where it came from.
func TestDerivedReplacementSaysItCameFromUnits(t *testing.T) {
	env, id := diagnosedStory(t)
	p := propose(t, env, map[string]any{"incident_id": id}).Plan
	stmt := p.Proposals[2]
	if stmt.Class != config.ClassFlinkStatement || len(stmt.NeedsMapping) != 0 || !strings.Contains(stmt.Why, plans.UnitRule) ||
		len(stmt.Mappings) != 1 || stmt.Mappings[0].Origin != plans.OriginMappingUnits || stmt.Mappings[0].With != "response_kib" {
		t.Errorf("statement: %+v", stmt)
	}
}
