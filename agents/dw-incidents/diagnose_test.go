package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/lineage/scenario"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/store"
)

// The story's failing table, as the scenario graph names it.
var usageHourly = graph.WarehouseURN("snowflake", "ANALYTICS", "USAGE", "USAGE_HOURLY")

// story builds the design's scenario on a real store: the lineage graph, api-usage-value v11
// (first seen days ago) and, when v12 is not empty, that schema text as v12 first seen at 14:05,
// the egress_bytes null-rate history (0 in every run until 0.18 failing at 15:05), and the
// incident a failed check opens.
func story(t *testing.T, v12 string) (*mcpkit.Env, *store.Store, int64) {
	t.Helper()
	ctx := context.Background()
	env := mcpkittest.Env(t, "dw-incidents")
	now := time.Date(2026, 8, 14, 15, 30, 0, 0, time.UTC)
	env.Now = func() time.Time { return now }
	st, err := env.Store.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := scenario.Load(ctx, graph.New(st, env.Now), "../../pkg/lineage/testdata/scenario", "../../configs/catalog.example.yaml"); err != nil {
		t.Fatal(err)
	}
	v11 := registry.SubjectVersion{Subject: "api-usage-value", Version: 11, ID: 100011, Type: schema.Avro, Schema: scenarioSchema(t, 11)}
	if _, err := registry.RecordVersions(ctx, st, now.Add(-5*24*time.Hour), []registry.SubjectVersion{v11}); err != nil {
		t.Fatal(err)
	}
	seen := []registry.SubjectVersion{v11}
	if v12 != "" {
		seen = append(seen, registry.SubjectVersion{Subject: "api-usage-value", Version: 12, ID: 100012, Type: schema.Avro, Schema: v12})
	}
	if _, err := registry.RecordVersions(ctx, st, time.Date(2026, 8, 14, 14, 5, 0, 0, time.UTC), seen); err != nil {
		t.Fatal(err)
	}
	// The check history as pkg/quality records it (migration 0003): one run per hour, one point each.
	points := []struct {
		hour   int
		value  float64
		status string
	}{{11, 0, "pass"}, {12, 0, "pass"}, {13, 0, "pass"}, {14, 0, "pass"}, {15, 0.18, "fail"}}
	err = st.Write(ctx, func(tx *sql.Tx) error {
		for _, p := range points {
			at := store.Timestamp(time.Date(2026, 8, 14, p.hour, 5, 0, 0, time.UTC))
			res, err := tx.ExecContext(ctx, `INSERT INTO check_runs (asset, monitor, started_at, finished_at, window_label, status, summary)
VALUES (?, 'usage_hourly', ?, ?, 'last hour', ?, '')`, string(usageHourly), at, at, p.status)
			if err != nil {
				return err
			}
			run, _ := res.LastInsertId()
			if _, err := tx.ExecContext(ctx, `INSERT INTO metric_points (run_id, asset, metric, subject, at, value, status)
VALUES (?, ?, 'null_rate', 'egress_bytes', ?, ?, ?)`, run, string(usageHourly), at, p.value, p.status); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := incidents.New(st, env.Now).Open(ctx, string(usageHourly), "null_rate", "sev2", "egress_bytes 18% null against 0% in every earlier check", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	return env, st, o.ID
}

// scenarioSchema is the story's api-usage-value schema text at version v.
func scenarioSchema(t *testing.T, v int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "pkg", "schema", "testdata", "scenario", "api-usage-value.v"+strconv.Itoa(v)+".avsc"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestDiagnoseNamesV12RemovalAndTheStatementPinnedToV11(t *testing.T) {
	env, st, id := story(t, scenarioSchema(t, 12))
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
		t.Fatal(e)
	}
	t.Logf("conclusion: %s\nevidence: %+v", out.Diagnosis.Conclusion, out.Evidence)
	ev := out.Evidence
	if ev.Column != "egress_bytes" || ev.Metric != "null_rate" || !ev.Onset.Equal(time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC)) || ev.FailingRuns != 1 {
		t.Errorf("evidence: %+v", ev)
	}
	if len(ev.Versions) != 1 || ev.Versions[0].Version != 12 || ev.Versions[0].DiffedTo != 11 {
		t.Errorf("versions considered: %+v", ev.Versions)
	}
	if len(out.Diagnosis.Candidates) == 0 {
		t.Fatalf("no candidates: %+v", out)
	}
	top := out.Diagnosis.Candidates[0]
	if top.Kind != "schema_change" || top.Source != "schema:api-usage-value v12" || !strings.Contains(top.Cause, "removed response_bytes") {
		t.Errorf("top candidate: %+v", top)
	}
	ev12 := strings.Join(top.Evidence, "\n")
	for _, want := range []string{"flink:statement/usage-hourly-rollup reads SUM(response_bytes), pinned to v11", "first seen 14:05", "response_bytes lies on the upstream lineage of egress_bytes (5 hops)"} {
		if !strings.Contains(ev12, want) {
			t.Errorf("evidence misses %q:\n%s", want, ev12)
		}
	}
	for _, k := range []string{"timing", "lineage", "reader", "mode"} {
		if !contains(top.Supports, k) {
			t.Errorf("supports %v: want %s", top.Supports, k)
		}
	}
	if contains(top.Supports, "data") || top.Score != 4 {
		t.Errorf("nothing measured the data, yet supports=%v score=%d", top.Supports, top.Score)
	}
	if !strings.Contains(strings.Join(out.Diagnosis.Unchecked, "\n"), "confluent_cloud not configured") {
		t.Errorf("unchecked: %v", out.Diagnosis.Unchecked)
	}
	inc, err := incidents.New(st, env.Now).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if inc.Cause != top.Cause || out.Cause != top.Cause || inc.Status != incidents.StatusInvestigating {
		t.Errorf("incident after diagnosis: cause %q status %s, want %q", inc.Cause, inc.Status, top.Cause)
	}
	stored, err := incidents.New(st, env.Now).Diagnosis(context.Background(), id)
	if err != nil || !strings.Contains(stored, "usage-hourly-rollup") {
		t.Errorf("stored diagnosis %q, %v", stored, err)
	}
}

func TestDiagnoseWithNoUpstreamChangeSaysSo(t *testing.T) {
	v11 := scenarioSchema(t, 11)
	for name, tc := range map[string]struct {
		v12      string
		versions int
	}{
		"no new version": {"", 0},
		// status_code is not on egress_bytes' lineage: its removal must not be blamed.
		"unrelated field removed": {strings.Replace(v11, `{"name": "status_code", "type": "int"},`, "", 1), 1},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.v12 == v11 {
				t.Fatal("fixture did not change")
			}
			env, st, id := story(t, tc.v12)
			var out diagnoseResult
			if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
				t.Fatal(e)
			}
			if len(out.Diagnosis.Candidates) != 1 || out.Diagnosis.Candidates[0].Kind != "none_upstream" || len(out.Evidence.Versions) != tc.versions {
				t.Fatalf("want none_upstream: %+v", out)
			}
			if !strings.Contains(out.Diagnosis.Conclusion, "Nothing upstream changed") {
				t.Errorf("conclusion: %s", out.Diagnosis.Conclusion)
			}
			inc, err := incidents.New(st, env.Now).Get(context.Background(), id)
			if err != nil || inc.Cause == "" {
				t.Errorf("incident cause %q, %v", inc.Cause, err)
			}
		})
	}
}

func TestDiagnoseUpstreamTypeChange(t *testing.T) {
	v11 := scenarioSchema(t, 11)
	v12 := strings.Replace(v11, `{"name": "response_bytes", "type": ["null", "long"], "default": null}`, `{"name": "response_bytes", "type": ["null", "string"], "default": null}`, 1)
	if v12 == v11 {
		t.Fatal("fixture did not change")
	}
	env, _, id := story(t, v12)
	var out diagnoseResult
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, &out); e != "" {
		t.Fatal(e)
	}
	top := out.Diagnosis.Candidates[0]
	if top.Kind != "schema_change" || !strings.Contains(top.Cause, "type_changed response_bytes") || !contains(top.Supports, "reader") || !contains(top.Supports, "mode") {
		t.Fatalf("top candidate: %+v", top)
	}
}

func TestDiagnoseUnknownIncidentAndUnknownAsset(t *testing.T) {
	env := mcpkittest.Env(t, "dw-incidents")
	tool := diagnoseIncident(env)
	if e := mcpkittest.Call(t, tool, map[string]any{"incident_id": 99}, nil); !strings.Contains(e, "99") {
		t.Errorf("unknown incident: %q", e)
	}
	st, err := env.Store.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o, err := incidents.New(st, env.Now).Open(context.Background(), "warehouse:sqlite/main.nowhere", "volume", "sev3", "no rows", "test")
	if err != nil {
		t.Fatal(err)
	}
	var out diagnoseResult
	if e := mcpkittest.Call(t, tool, map[string]any{"incident_id": o.ID}, &out); e != "" {
		t.Fatal(e)
	}
	if out.Diagnosis.Candidates == nil || len(out.Diagnosis.Candidates) != 0 || !strings.Contains(out.Diagnosis.Conclusion, "No upstream lineage") ||
		!strings.Contains(strings.Join(out.Diagnosis.Unchecked, " "), "not in the context graph") {
		t.Errorf("unknown asset: %+v", out.Diagnosis)
	}
	if e := mcpkittest.Call(t, tool, map[string]any{"incident_id": o.ID, "look_back_hours": -1}, nil); !strings.Contains(e, "look_back_hours") {
		t.Errorf("bad look-back: %q", e)
	}
}
