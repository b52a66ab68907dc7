package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// deps holds what the tools share: the env and a warehouse pool opened on first use (building
// tools must not connect anywhere; `tools` lists them without a warehouse).
type deps struct {
	env *mcpkit.Env

	mu   sync.Mutex
	wh   *warehouse.DB
	hist *quality.History // on hist's store; one per process (history)
}

func newDeps(env *mcpkit.Env) *deps { return &deps{env: env} }

func (d *deps) now() time.Time {
	if d.env.Now != nil {
		return d.env.Now()
	}
	return time.Now()
}

func (d *deps) warehouse() (*warehouse.DB, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wh != nil {
		return d.wh, nil
	}
	if d.env.Config.Warehouse == nil {
		return nil, fmt.Errorf("warehouse is not configured: set warehouse.engine and warehouse.dsn in %s (see configs/confluent-cloud.example.yaml)", d.env.Config.Source)
	}
	wh, err := warehouse.Connect(d.env.Config.Warehouse)
	if err != nil {
		return nil, err
	}
	d.wh = wh
	return wh, nil
}

// history is the process's one History: its series cache serves the next run of a monitor from
// memory, and it settles the points it wrote pending in batches (a History per call would read
// every series from the store and settle at every run). It writes behind: a run that fails no
// check answers before its record is written, and the store writes what is queued before it
// closes (the process's exit).
func (d *deps) history(ctx context.Context) (*quality.History, error) {
	st, err := d.env.Store.Get(ctx)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hist == nil || d.hist.Store() != st {
		d.hist = quality.NewHistory(st).WriteBehind()
	}
	return d.hist, nil
}

func (d *deps) checker(ctx context.Context) (*quality.Checker, *quality.History, error) {
	wh, err := d.warehouse()
	if err != nil {
		return nil, nil, err
	}
	h, err := d.history(ctx)
	if err != nil {
		return nil, nil, err
	}
	return quality.NewChecker(wh, h, d.now), h, nil
}

// incidentPolicy opens incidents when asked explicitly, else when the asset's domain (the
// monitor's, or the first whose patterns match) has autonomy L1 or higher: L1 observe includes
// opening incidents; L0 only answers questions.
func (d *deps) incidentPolicy(explicit *bool, domain string) func(asset string) bool {
	return func(asset string) bool {
		if explicit != nil {
			return *explicit
		}
		return quality.DomainFor(d.env.Config.Domains, domain, asset).Level >= 1
	}
}

func progress(ctx context.Context) func(done, total int, msg string) {
	return func(done, total int, msg string) {
		mcpkit.ReportProgress(ctx, float64(done), float64(total), msg)
	}
}
