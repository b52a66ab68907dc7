package main

import (
	"context"

	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

type listStatementsParams struct {
	ComputePoolID string `json:"compute_pool_id,omitempty" jsonschema:"Only this compute pool (default confluent_cloud.compute_pool_id, else all)"`
	Phase         string `json:"phase,omitempty" jsonschema:"Only statements in this phase, e.g. RUNNING, FAILED, STOPPED, DEGRADED"`
	LabelSelector string `json:"label_selector,omitempty" jsonschema:"Confluent label selector, e.g. team=payments"`
	Limit         int    `json:"limit,omitempty" jsonschema:"At most this many statements (default all, paged through)"`
}

type listStatementsResult struct {
	Statements []confluent.Statement `json:"statements"`
	Count      int                   `json:"count"`
}

func listFlinkStatements(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("list_flink_statements",
		"List Confluent Cloud Flink SQL statements with their SQL, phase, creation time (when they pinned their read "+
			"schemas), properties, compute pool and latest offsets. Use get_flink_statement for one statement.",
		func(ctx context.Context, p listStatementsParams) (listStatementsResult, error) {
			c, err := confluent.New(env.Config.ConfluentCloud)
			if err != nil {
				return listStatementsResult{}, err
			}
			st, err := c.ListStatements(ctx, confluent.StatementFilter{ComputePoolID: p.ComputePoolID, Phase: p.Phase,
				LabelSelector: p.LabelSelector, Limit: p.Limit})
			if err != nil {
				return listStatementsResult{}, err
			}
			return listStatementsResult{Statements: st, Count: len(st)}, nil
		})
}

type getStatementParams struct {
	StatementName string `json:"statement_name" jsonschema:"The statement's name, e.g. orders-enrich"`
}

func getFlinkStatement(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("get_flink_statement",
		"One Confluent Cloud Flink statement: SQL text, phase and detail, creation time, properties, compute pool, "+
			"principal and latest offsets per source topic. Changing or stopping it is the statement owner's action.",
		func(ctx context.Context, p getStatementParams) (confluent.Statement, error) {
			c, err := confluent.New(env.Config.ConfluentCloud)
			if err != nil {
				return confluent.Statement{}, err
			}
			return c.GetStatement(ctx, p.StatementName)
		})
}

type listTableflowParams struct {
	Topic string `json:"topic,omitempty" jsonschema:"Only this topic's Tableflow (by Kafka topic name)"`
}

type listTableflowResult struct {
	Topics    []confluent.TableflowTopic `json:"topics"`
	Count     int                        `json:"count"`
	Unhealthy int                        `json:"unhealthy" jsonschema:"Topics not RUNNING, suspended, failing a format or a catalog sync"`
}

func listTableflowTopics(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("list_tableflow_topics",
		"List Tableflow-enabled topics of the configured cluster: table formats (Iceberg, Delta), phase, suspension, "+
			"failing formats and each catalog integration's sync status. Tableflow names each table after its topic.",
		func(ctx context.Context, p listTableflowParams) (listTableflowResult, error) {
			c, err := confluent.New(env.Config.ConfluentCloud)
			if err != nil {
				return listTableflowResult{}, err
			}
			var ts []confluent.TableflowTopic
			if p.Topic != "" {
				t, err := c.GetTableflowTopic(ctx, p.Topic)
				if err != nil {
					return listTableflowResult{}, err
				}
				ts = []confluent.TableflowTopic{t}
			} else if ts, err = c.ListTableflowTopics(ctx); err != nil {
				return listTableflowResult{}, err
			}
			r := listTableflowResult{Topics: ts, Count: len(ts)}
			for _, t := range ts {
				if !t.Healthy {
					r.Unhealthy++
				}
			}
			return r, nil
		})
}
