package main

import (
	"context"
	"encoding/hex"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/notify"
	"github.com/dataworkers/dw/pkg/receipts"
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
