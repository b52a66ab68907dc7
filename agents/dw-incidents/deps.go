package main

import (
	"context"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/notify"
)

// approvalService opens the store and builds the approvals service (on first use, not at start-up).
func approvalService(ctx context.Context, env *mcpkit.Env) (*approvals.Service, error) {
	st, err := env.Store.Get(ctx)
	if err != nil {
		return nil, err
	}
	slack, err := notify.NewSlack(env.Config.Slack)
	if err != nil {
		return nil, err
	}
	var n notify.Notifier
	if slack != nil {
		n = slack
	}
	return approvals.New(st, env.Config, env.Now, n), nil
}
