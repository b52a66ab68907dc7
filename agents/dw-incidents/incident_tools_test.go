package main

import (
	"strings"
	"testing"

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
