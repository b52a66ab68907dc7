package store

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Writes behind the answer.
//
// A caller that learns nothing from a write it must make (a passing check run's record, whose id
// it reserved beforehand with ReserveIDs; an audit line) may answer first and leave the write to
// run after: WriteBehind queues it, one goroutine writes the queue in order, and Close writes what
// is left before the connections close. What that risks is what the store's synchronous=NORMAL
// already risks for committed writes: a process killed (or a machine losing power) between the
// answer and the commit loses that write. A write that fails stays at the head of the queue with
// its error, and the writes queued after it wait behind it, so their order holds: the queue is
// written again after a pause (behindRetry, doubling to behindRetryMax) and at every Flush, and
// Flush returns the error while it still fails. Writes run on a context of their own: a caller's
// cancelled request must not fail the writes other callers queued.

// behindRetry and behindRetryMax bound the pause before a failed queue is written again.
const (
	behindRetry    = 250 * time.Millisecond
	behindRetryMax = 30 * time.Second
)

// behindQueue is a store's queue of writes behind the answer.
type behindQueue struct {
	mu    sync.Mutex
	queue []func(context.Context) error // oldest first
	// queued and written count the writes ever queued and written: a write is the n-th queued,
	// and it is written once written ≥ n (AwaitWrites waits for no write queued after it).
	queued, written int64
	// failed is why the head of the queue failed when last written, until a write of it succeeds;
	// no drain starts for a new write while it is set (a retry, or Flush, writes it first).
	failed error
	pause  time.Duration // the pause before the next retry
	// running is set while one goroutine writes the queue; changed closes (and is replaced)
	// whenever a write is written or the goroutine stops.
	running bool
	changed chan struct{}
	// closed is set by Close: a pending retry no longer starts.
	closed bool
}

// WriteBehind queues write to run after the caller has moved on, in order with the other queued
// writes (write makes its own transactions, through Write, and never waits for the queue). The
// queue is written at once by a goroutine of its own, unless an earlier queued write failed: then
// it is written after that one, at the next retry or Flush.
func (s *Store) WriteBehind(write func(context.Context) error) {
	q := &s.behind
	q.mu.Lock()
	q.queue = append(q.queue, write)
	q.queued++
	start := !q.running && q.failed == nil
	if start {
		q.startLocked(s)
	}
	q.mu.Unlock()
}

// startLocked starts the goroutine that writes the queue; q.mu is held and nothing is running.
func (q *behindQueue) startLocked(s *Store) {
	q.running = true
	if q.changed == nil {
		q.changed = make(chan struct{})
	}
	go s.writeQueue()
}

// Flush returns once every write queued behind an answer has been written, writing again one
// that failed before; it returns the error of the first that still fails, which stays queued with
// those after it. ctx bounds the wait, not the writes.
func (s *Store) Flush(ctx context.Context) error {
	q := &s.behind
	q.mu.Lock()
	if !q.running && len(q.queue) > 0 {
		q.startLocked(s)
	}
	q.mu.Unlock()
	if err := q.wait(ctx, func() bool { return !q.running }); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	err := q.failed
	if n := len(q.queue); err != nil && n > 1 {
		err = fmt.Errorf("%w (and %d later writes wait behind it)", err, n-1)
	}
	return err
}

// AwaitWrites waits until the writes queued before it are written, so a read that follows sees
// every write this process answered before it. It does not wait for writes queued after it was
// called, nor for a failed write (the read then sees the store without it and what is queued
// behind it). It returns only ctx's error.
func (s *Store) AwaitWrites(ctx context.Context) error {
	q := &s.behind
	q.mu.Lock()
	target := q.queued
	q.mu.Unlock()
	return q.wait(ctx, func() bool { return q.written >= target || !q.running })
}

// wait blocks until done, asked with q.mu held, says so, or ctx ends.
func (q *behindQueue) wait(ctx context.Context, done func() bool) error {
	for {
		q.mu.Lock()
		if done() {
			q.mu.Unlock()
			return nil
		}
		changed := q.changed
		q.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
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

// writeQueue writes the queue's head until it is empty or a write fails, which it keeps and
// retries after a pause. The caller has set running.
func (s *Store) writeQueue() {
	q := &s.behind
	ctx := context.Background()
	q.mu.Lock()
	for len(q.queue) > 0 {
		write := q.queue[0]
		q.mu.Unlock()
		err := write(ctx)
		q.mu.Lock()
		if err != nil {
			q.failed = err
			q.pause = min(max(2*q.pause, behindRetry), behindRetryMax)
			time.AfterFunc(q.pause, func() {
				q.mu.Lock()
				if !q.running && !q.closed && len(q.queue) > 0 {
					q.startLocked(s)
				}
				q.mu.Unlock()
			})
			break
		}
		q.queue[0] = nil
		q.queue = q.queue[1:]
		q.written++
		q.failed, q.pause = nil, 0
		q.notifyLocked()
	}
	q.running = false
	q.notifyLocked()
	q.mu.Unlock()
}

// notifyLocked wakes every waiter; q.mu is held.
func (q *behindQueue) notifyLocked() {
	if q.changed != nil {
		close(q.changed)
	}
	q.changed = make(chan struct{})
}

// closeQueue stops the retries of a closed store.
func (q *behindQueue) closeQueue() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}
