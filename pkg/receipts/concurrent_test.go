package receipts

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// Writers on separate store handles (separate connections, as separate processes have) append
// while verifiers on other handles walk the chain: every verification passes, no append is lost
// and no sequence number is taken twice — on both engines.
func TestTheChainVerifiesUnderConcurrentAppendsAndVerifications(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		path, opts := storetest.LocationOn(t, d)
		key, err := LoadOrCreateKey(KeyPath(path))
		if err != nil {
			t.Fatal(err)
		}
		chain := func() *Chain {
			st, err := store.Open(ctx, path, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			c, err := Open(ctx, st, key, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		const writers, verifiers, each = 4, 3, 40
		chains := make([]*Chain, writers+verifiers)
		for i := range chains {
			chains[i] = chain()
		}
		var wg sync.WaitGroup
		errs := make(chan error, writers*each+verifiers*1000)
		done := make(chan struct{})
		// The verifiers start first and each verifies at least once, so the writers' appends
		// always meet running verifications, however the goroutines are scheduled.
		var vwg, running sync.WaitGroup
		running.Add(verifiers)
		verified := make([]int, verifiers)
		for v := 0; v < verifiers; v++ {
			vwg.Add(1)
			go func(c *Chain) {
				defer vwg.Done()
				running.Done()
				for {
					res, err := c.Verify(ctx)
					if err != nil {
						errs <- err
						return
					}
					if !res.OK {
						errs <- fmt.Errorf("verification during appends failed at %d receipts: %+v", res.Receipts, res.Problems)
						return
					}
					verified[v]++
					select {
					case <-done:
						return
					default:
					}
				}
			}(chains[writers+v])
		}
		running.Wait()
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(c *Chain) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if _, err := c.Append(ctx, int64(w+1), body{Cause: fmt.Sprintf("writer %d receipt %d", w, i)}); err != nil {
						errs <- err
					}
				}
			}(chains[w])
		}
		wg.Wait()
		close(done)
		vwg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		final, err := chains[0].Verify(ctx)
		if err != nil || !final.OK || final.Receipts != writers*each {
			t.Fatalf("final verification = %+v, %v; want %d receipts, ok", final, err, writers*each)
		}
		for v, n := range verified {
			if n == 0 {
				t.Errorf("verifier %d never ran", v)
			}
		}
	})
}
