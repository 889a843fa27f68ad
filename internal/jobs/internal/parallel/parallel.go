package parallel

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"scheduler/internal/jobs/internal/clock"
)

// Do calls fn(i) for i in [0, n), at most limit at once, and hands each i to done on the
// calling goroutine as soon as its fn has returned, in the order they return: a takeover's
// batches of writes go to the ledger side by side, and the runs of each batch start as soon as
// its answer is in. When done returns an error, Do starts no further call, waits for those in
// flight and returns the error.
func Do(n, limit int, fn func(i int), done func(i int) error) error {
	ended := make(chan int, n)
	sem := make(chan struct{}, limit)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			select {
			case sem <- struct{}{}:
			case <-stop:
				return
			}
			wg.Go(func() {
				defer func() { <-sem }()
				fn(i)
				ended <- i
			})
		}
	})
	defer wg.Wait()
	for range n {
		if err := done(<-ended); err != nil {
			close(stop)
			return err
		}
	}
	return nil
}

// Batches splits n items into batches of at most size and calls write(k, lo, hi) for batch k
// of items [lo, hi), limit at once, and settle for it on the calling goroutine as soon as its
// write returned (see Do). One batch is written on the calling goroutine.
func Batches(n, size, limit int, write func(k, lo, hi int), settle func(k, lo, hi int) error) error {
	batches := (n + size - 1) / size
	if batches == 1 {
		write(0, 0, n)
		return settle(0, 0, n)
	}
	bounds := func(k int) (int, int, int) { return k, k * size, min((k+1)*size, n) }
	return Do(batches, limit, func(k int) { write(bounds(k)) }, func(k int) error { return settle(bounds(k)) })
}

// MaxYield bounds how long Yield holds its caller back.
const MaxYield = 100 * time.Millisecond

// Yield gives the processors to other goroutines until done reports true, or MaxYield passed
// on c: a loop lets the goroutines it just started run before it goes on with work that can wait.
func Yield(c clock.Clock, done func() bool) {
	var deadline time.Time
	for i := 0; !done(); i++ {
		if i%64 == 0 {
			now := c.Now()
			if deadline.IsZero() {
				deadline = now.Add(MaxYield)
			} else if now.After(deadline) {
				return
			}
		}
		runtime.Gosched()
	}
}

// Parts splits items into at most parts parts and calls fn on each, all at once; the first
// error cancels the ctx of the others, and is returned once all have.
func Parts[T any](ctx context.Context, items []T, parts int, fn func(ctx context.Context, part []T) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for part := range slices.Chunk(items, max(1, (len(items)+parts-1)/parts)) {
		g.Go(func() error { return fn(gctx, part) })
	}
	return g.Wait()
}
