package diagnosis

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)

func scenarioChange() SchemaChange {
	return SchemaChange{
		Subject: "api-usage-value", Version: 12, FirstSeen: t0.Add(-55 * time.Minute),
		Changes:  []FieldChange{{Path: "response_bytes", Change: "removed"}, {Path: "response_kib", Change: "added"}},
		OnPath:   []string{"response_bytes"},
		Distance: 4,
		Readers: []Reader{{URN: "flink:statement/usage-hourly-rollup", PinnedVersion: 11, ReadsFields: []string{"response_bytes"},
			Expression: "SUM(response_bytes)"}},
		NewVersionShare: 0.18, FieldNullRate: 0.18,
	}
}

func TestTheScenarioNamesV12AndThePinnedStatement(t *testing.T) {
	unrelated := SchemaChange{Subject: "orders-value", Version: 5, FirstSeen: t0.Add(-10 * time.Minute),
		Changes: []FieldChange{{Path: "coupon", Change: "removed"}}, Distance: 0, NewVersionShare: -1, FieldNullRate: -1}
	res := Rank(Input{FailureMode: ModeNullRate, Column: "egress_bytes", Onset: t0, PathKnown: true,
		SchemaChanges: []SchemaChange{unrelated, scenarioChange()},
		Components:    []ComponentState{{URN: "connect:connector/usage-sink", Kind: "connector", State: "RUNNING", Distance: 1}}})
	if len(res.Candidates) != 1 {
		t.Fatalf("want only the v12 candidate (the unrelated change has timing alone), got %+v", res.Candidates)
	}
	top := res.Candidates[0]
	if top.Score != 5 || !strings.Contains(top.Cause, "api-usage-value v12 removed response_bytes") {
		t.Fatalf("%+v", top)
	}
	ev := strings.Join(top.Evidence, " | ")
	for _, want := range []string{"55m0s before the onset", "flink:statement/usage-hourly-rollup reads SUM(response_bytes), pinned to v11", "18% of the topic sample"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q: %s", want, ev)
		}
	}
	if !strings.Contains(res.Conclusion, "5 of 5") || res.Rule == "" {
		t.Errorf("conclusion %q", res.Conclusion)
	}
}

func TestAFailedConnectorTaskExplainsStaleness(t *testing.T) {
	res := Rank(Input{FailureMode: ModeFreshness, Onset: t0, PathKnown: true,
		SchemaChanges: []SchemaChange{{Subject: "orders-value", Version: 3, FirstSeen: t0.Add(-20 * time.Hour),
			Changes: []FieldChange{{Path: "note", Change: "added"}}, NewVersionShare: -1, FieldNullRate: -1}},
		Components: []ComponentState{{URN: "connect:connector/orders-snowflake-sink", Kind: "connector", State: "FAILED",
			Detail: "task 1 FAILED: org.apache.kafka.connect.errors.ConnectException: …", Since: t0.Add(-30 * time.Minute), Distance: 1}}})
	top := res.Candidates[0]
	if top.Kind != "component_failure" || top.Score != 4 || !strings.Contains(top.Cause, "orders-snowflake-sink is FAILED") {
		t.Fatalf("%+v", res.Candidates)
	}
}

func TestAStoppedStatementExplainsMissingVolumeAheadOfAnOlderChange(t *testing.T) {
	older := scenarioChange()
	older.FirstSeen = t0.Add(-20 * time.Hour)
	older.NewVersionShare, older.FieldNullRate = -1, -1
	res := Rank(Input{FailureMode: ModeVolume, Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{older},
		Components: []ComponentState{{URN: "flink:statement/usage-hourly-rollup", Kind: "statement", State: "STOPPED", Since: t0.Add(-10 * time.Minute), Distance: 3}}})
	if res.Candidates[0].Kind != "component_failure" {
		t.Fatalf("%+v", res.Candidates)
	}
}

func TestAnUpstreamTypeChangeIsNamed(t *testing.T) {
	res := Rank(Input{FailureMode: ModeCustom, Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{{
		Subject: "payments-value", Version: 8, FirstSeen: t0.Add(-2 * time.Hour), Distance: 2,
		Changes: []FieldChange{{Path: "amount", Change: "type_changed", Detail: "long → string"}}, OnPath: []string{"amount"},
		NewVersionShare: -1, FieldNullRate: -1}}})
	if top := res.Candidates[0]; !strings.Contains(top.Cause, "type_changed amount") || !has(top.Supports, KindMode) {
		t.Fatalf("%+v", top)
	}
}

func TestNoUpstreamChangeIsSaidNotBlamedOnTheDeepestNode(t *testing.T) {
	res := Rank(Input{FailureMode: ModeNullRate, Onset: t0, PathKnown: true,
		Components: []ComponentState{{URN: "kafka:topic/raw-events", Kind: "connector", State: "RUNNING", Distance: 6}},
		Unchecked:  []string{"Tableflow: confluent_cloud.kafka_cluster_id is not configured"}})
	if len(res.Candidates) != 1 || res.Candidates[0].Kind != "none_upstream" || !strings.Contains(res.Conclusion, "not at the deepest upstream node") {
		t.Fatalf("%+v", res)
	}
	if !strings.Contains(res.Conclusion, "Not checked: Tableflow") {
		t.Errorf("unchecked backends must be named: %q", res.Conclusion)
	}
	unknown := Rank(Input{FailureMode: ModeNullRate, Onset: t0})
	if len(unknown.Candidates) != 0 || !strings.Contains(unknown.Conclusion, "No upstream lineage is known") {
		t.Fatalf("%+v", unknown)
	}
}

func TestTableLevelLineageCountsButFieldLevelIsNamed(t *testing.T) {
	sc := scenarioChange()
	sc.OnPath, sc.SubjectUpstream = nil, true
	res := Rank(Input{FailureMode: ModeNullRate, Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{sc}})
	top := res.Candidates[0]
	if !has(top.Supports, KindLineage) || !has(top.Supports, KindMode) || !strings.Contains(strings.Join(top.Evidence, " "), "field-level lineage unknown") {
		t.Fatalf("%+v", top)
	}
}
