package quality

import (
	"context"
	"sync"
)

// runIDBlock is how many run ids a History reserves at once (store.ReserveIDs): one store write
// per this many runs. Ids a process reserves and never uses are gaps in the run ids.
const runIDBlock = 16

// runIDPool is a History's reserved run ids, oldest first, and the reservation in flight.
type runIDPool struct {
	mu      sync.Mutex
	ids     []int64
	filling chan struct{} // closed when the reservation in flight ends; nil when none is
	err     error         // the last reservation's error (nil when it reserved ids)
}

// reserveRunIDs starts reserving run ids when the pool is empty, so that the run that needs one
// after its warehouse statements finds it there: a run calls it before its statements.
func (h *History) reserveRunIDs(ctx context.Context) {
	p := &h.runIDs
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ids) > 0 || p.filling != nil {
		return
	}
	p.filling = make(chan struct{})
	go h.fillRunIDs(context.WithoutCancel(ctx))
}

// fillRunIDs reserves a block of run ids into the pool; the caller has set filling.
func (h *History) fillRunIDs(ctx context.Context) {
	ids, err := h.st.ReserveIDs(ctx, "check_runs", runIDBlock)
	p := &h.runIDs
	p.mu.Lock()
	p.ids, p.err = append(p.ids, ids...), err
	close(p.filling)
	p.filling = nil
	p.mu.Unlock()
}

// takeRunID takes the next reserved run id, waiting for a reservation in flight or making one. It
// fails with the error of the reservation it waited for when that left no id; an older failure is
// not held against it.
func (h *History) takeRunID(ctx context.Context) (int64, error) {
	p := &h.runIDs
	for waited := false; ; waited = true {
		p.mu.Lock()
		if len(p.ids) > 0 {
			id := p.ids[0]
			p.ids = p.ids[1:]
			p.mu.Unlock()
			return id, nil
		}
		if waited && p.err != nil {
			err := p.err
			p.mu.Unlock()
			return 0, err
		}
		filling := p.filling
		if filling == nil {
			p.filling = make(chan struct{})
			filling = p.filling
			go h.fillRunIDs(context.WithoutCancel(ctx))
		}
		p.mu.Unlock()
		select {
		case <-filling:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
