package store

import (
	"context"
	"fmt"
	"sync"
)

// Writes behind the answer.
//
// A caller that learns nothing from a write it must make (a passing check run's record, whose id
// it reserved beforehand with ReserveIDs) may answer first and leave the write to run after:
// WriteBehind queues it, one goroutine writes the queue in order, and Close writes what is left
// before the connections close. What that risks is what the store's synchronous=NORMAL already
// risks for committed writes: a process killed (or a machine losing power) in the fraction of a
// millisecond between the answer and the commit loses that write. A write that fails stays at the
// head of the queue with its error, and the writes queued after it wait behind it, so their order
// holds: Flush writes them again and returns the error while they still fail.

// behindQueue is a store's queue of writes behind the answer.
type behindQueue struct {
	mu    sync.Mutex
	queue []func(context.Context) error // oldest first
	// failed is why the head of the queue failed when last written; no drain starts by itself
	// while it is set (Flush retries).
	failed error
	// running is set while one goroutine writes the queue; idle closes when it stops.
	running bool
	idle    chan struct{}
}

// WriteBehind queues write to run after the caller has moved on, in order with the other queued
// writes (write makes its own transactions, through Write). The queue is written at once by a
// goroutine of its own, unless an earlier queued write failed: then it waits for the next Flush.
func (s *Store) WriteBehind(write func(context.Context) error) {
	q := &s.behind
	q.mu.Lock()
	q.queue = append(q.queue, write)
	start := !q.running && q.failed == nil
	if start {
		q.running, q.idle = true, make(chan struct{})
	}
	q.mu.Unlock()
	if start {
		go func() { _ = s.writeQueue(context.Background()) }()
	}
}

// Flush returns once every write queued behind an answer has been written, writing again those
// that failed before; it returns the error of the first that still fails, which stays queued
// with those after it.
func (s *Store) Flush(ctx context.Context) error {
	q := &s.behind
	for {
		q.mu.Lock()
		if q.running {
			idle := q.idle
			q.mu.Unlock()
			select {
			case <-idle:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if len(q.queue) == 0 {
			q.mu.Unlock()
			return nil
		}
		q.running, q.idle, q.failed = true, make(chan struct{}), nil
		q.mu.Unlock()
		return s.writeQueue(ctx)
	}
}

// AwaitWrites waits while the queue is being written, so a read that follows sees every write
// this process answered before it (a failed write stays queued: AwaitWrites does not retry it,
// and the read sees the store without it). It returns only ctx's error.
func (s *Store) AwaitWrites(ctx context.Context) error {
	q := &s.behind
	q.mu.Lock()
	running, idle := q.running, q.idle
	q.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BehindFailure is the error of the queued write that failed last, while it is still queued
// (nil when none is): a caller that must not add to a failing backlog writes through Flush instead.
func (s *Store) BehindFailure() error {
	q := &s.behind
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failed
}

// writeQueue writes the queue's head until it is empty or a write fails, then marks the queue idle.
// The caller has set running.
func (s *Store) writeQueue(ctx context.Context) error {
	q := &s.behind
	var err error
	for {
		q.mu.Lock()
		if len(q.queue) == 0 {
			break
		}
		write := q.queue[0]
		q.mu.Unlock()
		if err = write(ctx); err != nil {
			q.mu.Lock()
			q.failed = err
			break
		}
		q.mu.Lock()
		q.queue[0] = nil
		q.queue = q.queue[1:]
		q.mu.Unlock()
	}
	if n := len(q.queue); err != nil && n > 1 {
		err = fmt.Errorf("%w (and %d later writes wait behind it)", err, n-1)
	}
	q.running = false
	close(q.idle)
	q.mu.Unlock()
	return err
}
