package parallel

import "sync"

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
