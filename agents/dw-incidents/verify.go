package main

import (
	"context"

	"github.com/dataworkers/dw/pkg/lifecycle"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

type verifyParams struct {
	IncidentID      int64    `json:"incident_id" jsonschema:"The incident to verify"`
	Window          string   `json:"window,omitempty" jsonschema:"today (default), yesterday or a duration such as 6h: the data the checks re-run over"`
	TimeZone        string   `json:"time_zone,omitempty" jsonschema:"IANA zone for today/yesterday (default UTC)"`
	TimestampColumn string   `json:"timestamp_column,omitempty" jsonschema:"The tables' event-time column (default: detected per table)"`
	KeyColumns      []string `json:"key_columns,omitempty" jsonschema:"The key for a uniqueness incident (default: the key of the failing check)"`
}

func verifyIncident(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Write("verify_incident",
		"Re-run the incident's failing check and the checks of its latest plan over the window (default today). Only when every result passes does it "+
			"resolve the incident, mark its actions verified and write its hash-chained receipt, all in one transaction (never resolved without a receipt); "+
			"otherwise it records what still fails and returns failed=true. Where the plan has a corrected Flink statement, values recomputes its restored column "+
			"from a bounded topic sample (each record decoded with its writer's schema, the plan's mapping applied) and compares it with the warehouse rows of the same keys and windows: "+
			"a mismatch (a wrong factor, a filter not widened) keeps the incident open; "+
			"values.why says when no comparison is possible and why.",
		func(ctx context.Context, p verifyParams) (lifecycle.Verification, error) {
			svc, err := lifecycleService(ctx, env)
			if err != nil {
				return lifecycle.Verification{}, err
			}
			return svc.Verify(ctx, lifecycle.VerifyInput{IncidentID: p.IncidentID,
				Checks: lifecycle.CheckOptions{Window: p.Window, TimeZone: p.TimeZone, TimestampColumn: p.TimestampColumn, KeyColumns: p.KeyColumns}})
		})
}
