package jobs

import "sync"

// inParallel calls fn(i) for i in [0, n), at most limit at once, and hands each i to done on the
// calling goroutine as soon as its fn has returned, in the order they return: a takeover's
// batches of writes go to the ledger side by side, and the runs of each batch start as soon as
// its answer is in. When done returns an error, inParallel starts no further call, waits for
// those in flight and returns the error.
func inParallel(n, limit int, fn func(i int), done func(i int) error) error {
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
