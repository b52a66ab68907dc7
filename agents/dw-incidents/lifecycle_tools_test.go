package main

import (
	"context"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

// The lifecycle tools adapt pkg/lifecycle (tested there); here: a call that changed nothing is an
// isError result naming what to fix.
func TestLifecycleToolsReportErrorsThatChangedNothing(t *testing.T) {
	ctx := context.Background()
	env := mcpkittest.Env(t, "dw-incidents")
	env.Config.Warehouse = nil
	incs, err := incidentStore(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	o, err := incs.Open(ctx, "warehouse:sqlite/main.t1", "null_rate", "sev2", "s", "test")
	if err != nil {
		t.Fatal(err)
	}
	if e := mcpkittest.Call(t, verifyIncident(env), map[string]any{"incident_id": o.ID}, nil); !strings.Contains(e, "warehouse.dsn") {
		t.Errorf("verify_incident without a warehouse: %q", e)
	}
	if e := mcpkittest.Call(t, remediate(env), map[string]any{"incident_id": 999}, nil); !strings.Contains(e, "no incident #999") {
		t.Errorf("remediate of an unknown incident: %q", e)
	}
	inc, err := incs.Get(ctx, o.ID)
	if err != nil || inc.Status != "open" {
		t.Fatalf("%+v %v", inc, err)
	}
}
