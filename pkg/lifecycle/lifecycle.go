// Package lifecycle decides what happens to an incident once it is diagnosed: storing its plan,
// routing the plan's proposals to the named approvers, carrying out what was approved (and, at L3,
// the plan steps a clean record allows), re-running and judging the incident's checks, settling
// actions a stopped process left running, and resolving it with its receipt. The MCP tools and the
// human CLI call it with typed inputs and get typed outcomes; it knows nothing of MCP.
package lifecycle

import (
	"context"
	"errors"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/auth"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/notify"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/remediation"
	"github.com/dataworkers/dw/pkg/store"
)

// Deps are what the service works with. Receipts and Notifier are opened on first use: a receipt key
// is created only when a receipt is written, and a notifier that cannot be built is recorded on the
// incident rather than failing the call.
type Deps struct {
	Store     *store.Store
	Config    *config.Config
	Approvals *approvals.Service
	Executor  *remediation.Executor
	// Receipts opens the receipt chain.
	Receipts func(context.Context) (*receipts.Chain, error)
	// Notifier tells a person (Slack); it returns nil, nil when none is configured. Nil means none.
	Notifier func() (notify.Notifier, error)
	// Plans is what plans are generated from and proposals checked against; Propose and Route need it.
	Plans *plans.Sources
	Now   func() time.Time
	// Actor is who the timeline names for what the service does (the agent's name).
	Actor string
}

// Service is the incident lifecycle over the shared store.
type Service struct {
	d         Deps
	incidents *incidents.Store
}

// New returns the service; every field of Deps but Notifier and Plans is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Config == nil || d.Approvals == nil || d.Executor == nil || d.Receipts == nil || d.Now == nil {
		return nil, errors.New("lifecycle: store, config, approvals, executor, receipts and clock are all required")
	}
	if d.Notifier == nil {
		d.Notifier = func() (notify.Notifier, error) { return nil, nil }
	}
	return &Service{d: d, incidents: incidents.New(d.Store, d.Now)}, nil
}

// actor names the agent, and the authenticated caller it acts for when there is one, on every
// timeline event and approval request the service records.
func (s *Service) actor(ctx context.Context) string {
	return auth.OnBehalf(ctx, s.d.Actor)
}
