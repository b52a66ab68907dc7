package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/connect"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

type diagnoseParams struct {
	IncidentID    int64 `json:"incident_id" jsonschema:"The incident to diagnose (from open_incident or get_incident_history)"`
	LookBackHours int   `json:"look_back_hours,omitempty" jsonschema:"How long before the onset a change still counts as near it (default 24)"`
}

type diagnoseResult struct {
	IncidentID int64              `json:"incident_id"`
	Diagnosis  diagnosis.Result   `json:"diagnosis"`
	Evidence   diagnosis.Evidence `json:"evidence"`
	Impact     diagnosis.Impact   `json:"impact" jsonschema:"What the failure reaches downstream and the severity that follows (rule stated)"`
	Cause      string             `json:"cause" jsonschema:"The one-line cause recorded on the incident"`
	Severity   string             `json:"severity" jsonschema:"The incident's severity after this diagnosis (the rule's, or a worse one a person set)"`
	Next       string             `json:"next"`
}

func diagnoseIncident(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Write("diagnose_incident",
		"Diagnose an incident from evidence only: the failing check's onset, the failing column's upstream lineage, schema versions near the onset "+
			"with field diffs and the Flink statements pinned to older ones, live connector, statement and Tableflow states on the path, and a bounded "+
			"topic sample spanning the onset (version mix, source null rate by version). Ranks causes by a stated rule, gives the blast radius and the severity it sets, "+
			"names what it could not check, and records the cause. Next: propose_remediation.",
		func(ctx context.Context, p diagnoseParams) (diagnoseResult, error) {
			if p.LookBackHours < 0 || p.LookBackHours > 24*30 {
				return diagnoseResult{}, fmt.Errorf("look_back_hours %d: use 1 to 720 (default 24)", p.LookBackHours)
			}
			st, err := env.Store.Get(ctx)
			if err != nil {
				return diagnoseResult{}, err
			}
			s := incidents.New(st, env.Now)
			inc, err := s.Get(ctx, p.IncidentID)
			if err != nil {
				return diagnoseResult{}, err
			}
			g := withWatch(env, diagnosis.NewGatherer(st, graph.New(st, env.Now), env.Config, env.Now, liveReaders(env), env.Redact, 0))
			rep, err := g.Diagnose(ctx, inc, time.Duration(p.LookBackHours)*time.Hour)
			if err != nil {
				return diagnoseResult{}, err
			}
			sev, err := diagnosis.Record(ctx, s, rep, env.Agent)
			if err != nil {
				return diagnoseResult{}, err
			}
			next := fmt.Sprintf("propose_remediation for incident %d; get_incident_history with assets on this path for earlier incidents", inc.ID)
			if len(rep.Impact.SinkJobs) > 0 {
				next = fmt.Sprintf("propose_remediation for incident %d: hold %s before its next run first", inc.ID, rep.Impact.SinkJobs[0].Job)
			}
			return diagnoseResult{IncidentID: inc.ID, Diagnosis: rep.Result, Evidence: rep.Evidence, Impact: rep.Impact,
				Cause: rep.Cause, Severity: sev, Next: next}, nil
		})
}

// liveReaders builds the live-state readers from the config: nil where a backend is not
// configured (the diagnosis names the key to set), a reader that returns the construction error
// where the config is there but unusable (the diagnosis shows the error).
func liveReaders(env *mcpkit.Env) diagnosis.Live {
	var live diagnosis.Live
	cfg := env.Config
	switch cl, err := connect.FromConfig(cfg); {
	case errors.Is(err, connect.ErrNotConfigured):
	case err != nil:
		live.ConnectorStatus = func(context.Context, string) (connect.Status, error) { return connect.Status{}, err }
	default:
		live.ConnectorStatus = cl.Status
	}
	if cc := cfg.ConfluentCloud; cc != nil {
		cl, err := confluent.New(cc)
		if cc.FlinkURL != "" {
			live.Statement = func(ctx context.Context, name string) (confluent.Statement, error) {
				if err != nil {
					return confluent.Statement{}, err
				}
				return cl.GetStatement(ctx, name)
			}
		}
		if cc.APIKey != "" {
			live.Tableflow = func(ctx context.Context, topic string) (confluent.TableflowTopic, error) {
				if err != nil {
					return confluent.TableflowTopic{}, err
				}
				return cl.GetTableflowTopic(ctx, topic)
			}
		}
	}
	if k := cfg.Kafka; k != nil && len(k.BootstrapServers) > 0 {
		live.Sample = func(ctx context.Context, topic string, opt kafka.SampleOptions) (kafka.Sample, error) {
			return kafka.SampleFromConfig(ctx, k, cfg.SchemaRegistry, topic, opt)
		}
	}
	return live
}
