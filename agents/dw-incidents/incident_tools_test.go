package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lineage/scenario"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

func TestOpenIncidentDeduplicatesAndHistoryShowsIt(t *testing.T) {
	env := mcpkittest.Env(t, "dw-incidents")
	open, hist := openIncident(env), getIncidentHistory(env)
	args := map[string]any{"asset": "warehouse:sqlite/main.usage_hourly", "failure_mode": "null_rate",
		"summary": "egress_bytes 18% null today against 0% in every earlier check"}
	var first, second openIncidentResult
	if e := mcpkittest.Call(t, open, args, &first); e != "" || !first.Opened {
		t.Fatalf("%s %+v", e, first)
	}
	if e := mcpkittest.Call(t, open, args, &second); e != "" || second.Opened || second.Incident.ID != first.Incident.ID || second.Incident.Occurrences != 2 {
		t.Fatalf("%s %+v", e, second)
	}
	var h historyResult
	if e := mcpkittest.Call(t, hist, map[string]any{"assets": []any{"warehouse:sqlite/main.usage_hourly"}, "status": "open"}, &h); e != "" || len(h.Incidents) != 1 {
		t.Fatalf("%s %+v", e, h)
	}
	if e := mcpkittest.Call(t, hist, map[string]any{"incident_id": first.Incident.ID}, &h); e != "" || len(h.Incidents[0].Events) != 2 {
		t.Fatalf("%s %+v", e, h)
	}
	if e := mcpkittest.Call(t, open, map[string]any{"asset": "x", "failure_mode": "boom", "summary": "s"}, nil); !strings.Contains(e, "failure_mode") {
		t.Fatalf("bad mode: %q", e)
	}
	if e := mcpkittest.Call(t, hist, map[string]any{"since": "yesterday"}, nil); !strings.Contains(e, "RFC 3339") {
		t.Fatalf("bad since: %q", e)
	}
}

// "Has this feed broken before?": lineage_of gathers the incidents on the asset and on everything
// upstream or downstream of it, and none from an unrelated feed.
func TestHistoryAlongALineagePath(t *testing.T) {
	ctx := context.Background()
	env := mcpkittest.Env(t, "dw-incidents")
	st, err := env.Store.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := scenario.Load(ctx, graph.New(st, env.Now), "../../pkg/lineage/testdata/scenario", "../../configs/catalog.example.yaml"); err != nil {
		t.Fatal(err)
	}
	open := openIncident(env)
	for _, a := range []string{"warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY", "dbt:model.billing.fct_billable_egress", "dbt:model.billing.dim_accounts"} {
		if e := mcpkittest.Call(t, open, map[string]any{"asset": a, "failure_mode": "volume", "summary": "rows dropped"}, nil); e != "" {
			t.Fatal(e)
		}
	}
	var h historyResult
	if e := mcpkittest.Call(t, getIncidentHistory(env), map[string]any{"lineage_of": "flink:statement/usage-hourly-rollup"}, &h); e != "" {
		t.Fatal(e)
	}
	var got []string
	for _, i := range h.Incidents {
		got = append(got, i.Asset)
	}
	slices.Sort(got)
	if want := []string{"dbt:model.billing.fct_billable_egress", "warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY"}; !slices.Equal(got, want) {
		t.Fatalf("incidents on the path = %v, want %v", got, want)
	}
	if e := mcpkittest.Call(t, getIncidentHistory(env), map[string]any{"lineage_of": "kafka:topic/nowhere"}, nil); !strings.Contains(e, "not in the context graph") {
		t.Fatalf("unknown asset: %q", e)
	}
}
