package main

import (
	"context"
	"fmt"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

func incidentStore(ctx context.Context, env *mcpkit.Env) (*incidents.Store, error) {
	st, err := env.Store.Get(ctx)
	if err != nil {
		return nil, err
	}
	return incidents.New(st, env.Now), nil
}

type openIncidentParams struct {
	Asset       string `json:"asset" jsonschema:"URN of the asset whose check failed, e.g. warehouse:snowflake/ANALYTICS.SALES.ORDERS"`
	FailureMode string `json:"failure_mode" jsonschema:"null_rate, volume, freshness, uniqueness or custom; with the asset it deduplicates open incidents"`
	Summary     string `json:"summary" jsonschema:"What failed, with the evidence, e.g. amount_cents 18% null today against 0% in every earlier check"`
	Severity    string `json:"severity,omitempty" jsonschema:"sev1 (worst) … sev4; when given it is kept as set (a diagnosis never lowers it); default sev2, which a diagnosis may change"`
}

type openIncidentResult struct {
	Incident incidents.Incident `json:"incident"`
	Opened   bool               `json:"opened" jsonschema:"false when the failure joined an incident already open for this asset and failure mode"`
	Next     string             `json:"next"`
}

func openIncident(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Write("open_incident",
		"Open an incident for a failed check, or join the one already open for the same asset and failure mode. "+
			"dw-quality opens them itself when the domain's autonomy is L1 or above. Next: diagnose_incident.",
		func(ctx context.Context, p openIncidentParams) (openIncidentResult, error) {
			if p.Severity != "" && !incidents.ValidSeverity(p.Severity) {
				return openIncidentResult{}, fmt.Errorf("severity %q: use sev1, sev2, sev3 or sev4", p.Severity)
			}
			if err := incidents.CheckFailureMode(p.FailureMode); err != nil {
				return openIncidentResult{}, err
			}
			if err := incidents.ValidateOpen(p.Asset, p.Summary); err != nil {
				return openIncidentResult{}, err
			}
			s, err := incidentStore(ctx, env)
			if err != nil {
				return openIncidentResult{}, err
			}
			// An explicit severity is the caller's decision, recorded as set so the blast-radius rule
			// never lowers it; the default is the rule's to change.
			var o incidents.Opened
			if p.Severity != "" {
				o, err = s.OpenWithSeverity(ctx, p.Asset, p.FailureMode, p.Severity, p.Summary, env.Agent)
			} else {
				o, err = s.Open(ctx, p.Asset, p.FailureMode, "sev2", p.Summary, env.Agent)
			}
			if err != nil {
				return openIncidentResult{}, err
			}
			inc, err := s.Get(ctx, o.ID)
			if err != nil {
				return openIncidentResult{}, err
			}
			return openIncidentResult{Incident: inc, Opened: o.Opened, Next: fmt.Sprintf("diagnose_incident with incident_id %d", o.ID)}, nil
		})
}

type historyParams struct {
	IncidentID  int64    `json:"incident_id,omitempty" jsonschema:"One incident with its full timeline"`
	Assets      []string `json:"assets,omitempty" jsonschema:"Incidents on any of these asset URNs"`
	LineageOf   string   `json:"lineage_of,omitempty" jsonschema:"An asset URN: incidents on it and on every asset upstream or downstream of it in the context graph (\"has this feed broken before?\")"`
	Domain      string   `json:"domain,omitempty" jsonschema:"Incidents of one domain"`
	FailureMode string   `json:"failure_mode,omitempty" jsonschema:"null_rate, volume, freshness, uniqueness, custom or schema"`
	Status      string   `json:"status,omitempty" jsonschema:"open, closed, or one status (acknowledged, investigating, mitigated, resolved, false_positive, expected)"`
	Since       string   `json:"since,omitempty" jsonschema:"RFC 3339 time; only incidents opened since"`
	Limit       int      `json:"limit,omitempty" jsonschema:"At most this many (default 50, max 500)"`
}

type historyResult struct {
	Incidents []incidents.Incident `json:"incidents"`
	Summary   string               `json:"summary"`
}

func getIncidentHistory(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("get_incident_history",
		"Past and open incidents for assets, a domain or a failure mode, newest first, each with its cause and resolution: "+
			"\"has this feed broken before, and what fixed it?\". Give incident_id for one incident's full timeline.",
		func(ctx context.Context, p historyParams) (historyResult, error) {
			s, err := incidentStore(ctx, env)
			if err != nil {
				return historyResult{}, err
			}
			if p.IncidentID != 0 {
				inc, err := s.Get(ctx, p.IncidentID)
				if err != nil {
					return historyResult{}, err
				}
				return historyResult{Incidents: []incidents.Incident{inc}, Summary: fmt.Sprintf("incident #%d: %s, %s", inc.ID, inc.Status, inc.Summary)}, nil
			}
			q := incidents.Query{Assets: p.Assets, Domain: p.Domain, FailureMode: p.FailureMode, Status: p.Status, Limit: p.Limit}
			if p.Since != "" {
				if q.Since, err = time.Parse(time.RFC3339, p.Since); err != nil {
					return historyResult{}, fmt.Errorf("since %q is not an RFC 3339 time (e.g. 2026-11-01T00:00:00Z)", p.Since)
				}
			}
			life, err := lifecycleService(ctx, env)
			if err != nil {
				return historyResult{}, err
			}
			list, err := life.History(ctx, q, graph.URN(p.LineageOf))
			if err != nil {
				return historyResult{}, err
			}
			open, withCause := 0, 0
			for _, i := range list {
				if incidents.IsOpen(i.Status) {
					open++
				}
				if i.Cause != "" {
					withCause++
				}
			}
			return historyResult{Incidents: list, Summary: fmt.Sprintf("%d incidents (%d open); %d with a recorded cause", len(list), open, withCause)}, nil
		})
}
