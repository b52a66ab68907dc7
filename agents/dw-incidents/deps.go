package main

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lifecycle"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/notify"
	"github.com/dataworkers/dw/pkg/orchestrators"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/remediation"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/store"
)

// approvalService opens the store and builds the approvals service (on first use, not at start-up).
func approvalService(ctx context.Context, env *mcpkit.Env) (*approvals.Service, error) {
	st, err := env.Store.Get(ctx)
	if err != nil {
		return nil, err
	}
	n, err := notifier(env)
	if err != nil {
		return nil, err
	}
	return approvals.New(st, env.Config, env.Now, n), nil
}

// notifier is the Slack incoming webhook when slack.webhook_url is set, else nil.
func notifier(env *mcpkit.Env) (notify.Notifier, error) {
	slack, err := notify.NewSlack(env.Config.Slack)
	if err != nil || slack == nil {
		return nil, err
	}
	return slack, nil
}

// receiptChain opens the receipt chain, with its key beside the store.
func receiptChain(ctx context.Context, env *mcpkit.Env) (*receipts.Chain, error) {
	st, err := env.Store.Get(ctx)
	if err != nil {
		return nil, err
	}
	key, err := receipts.LoadOrCreateKey(receipts.KeyPath(st.Path()))
	if err != nil {
		return nil, err
	}
	env.AddSecret(hex.EncodeToString(key)) // never shown in a result or a log, whatever a backend echoes
	return receipts.Open(ctx, st, key, env.Now)
}

// executor builds the remediation executor over the configured orchestrators.
func executor(st *store.Store, env *mcpkit.Env, svc *approvals.Service) *remediation.Executor {
	return remediation.New(st, env.Config, svc, remediation.Backends{
		Airflow:  func() (*orchestrators.Airflow, error) { return orchestrators.NewAirflow(env.Config.Airflow) },
		DBTCloud: func() (*orchestrators.DBTCloud, error) { return orchestrators.NewDBTCloud(env.Config.DBT) },
	}, env.Now)
}

// lifecycleService wires the incident lifecycle to this process's store, config and backends.
func lifecycleService(ctx context.Context, env *mcpkit.Env) (*lifecycle.Service, error) {
	svc, err := approvalService(ctx, env)
	if err != nil {
		return nil, err
	}
	st, err := env.Store.Get(ctx)
	if err != nil {
		return nil, err
	}
	src := planSources(env, st)
	if k := env.Config.Kafka; k != nil && len(k.BootstrapServers) > 0 {
		src.Offsets = plans.KafkaOffsets(k)
	}
	return lifecycle.New(lifecycle.Deps{Store: st, Config: env.Config, Approvals: svc, Executor: executor(st, env, svc), Plans: &src,
		Receipts: func(ctx context.Context) (*receipts.Chain, error) { return receiptChain(ctx, env) },
		Notifier: func() (notify.Notifier, error) { return notifier(env) }, Now: env.Now, Actor: env.Agent})
}

// planSources is what plans reads to check proposals: the store, the context graph, the config,
// and the registry's compatibility rule of a subject when schema_registry is configured.
func planSources(env *mcpkit.Env, st *store.Store) plans.Sources {
	src := plans.Sources{Store: st, Graph: graph.New(st, env.Now), Config: env.Config, Now: env.Now}
	if sr := env.Config.SchemaRegistry; sr != nil && sr.URL != "" {
		src.Level = func(ctx context.Context, subject string) (compat.Level, error) {
			rc, err := registry.New(sr)
			if err != nil {
				return "", err
			}
			c, err := rc.SubjectConfig(ctx, subject)
			if err != nil {
				return "", fmt.Errorf("read the compatibility rule of %s: %w", subject, err)
			}
			return c.Level, nil
		}
	}
	return src
}
