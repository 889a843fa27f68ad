package outcomes

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"scheduler"

	"scheduler/internal/jobs/internal/backoff"
	"scheduler/internal/jobs/internal/clock"
)

// The wait before the next write of outcomes whose write failed: retryDelay, doubled per
// failed write, at most MaxRetryDelay (see Backoff).
const (
	retryDelay = 250 * time.Millisecond
	// MaxRetryDelay is the longest wait before the next write of outcomes whose write failed.
	MaxRetryDelay = 5 * time.Second
)

// HeldBackRetry is the wait before the next write of an outcome held back (ErrHeldBack).
const HeldBackRetry = time.Second

// MaxBatch bounds the outcomes written by one Sink.Write.
const MaxBatch = 1000

// Backoff is the wait before the next write of an outcome after failures consecutive failed
// ones: doubled per failure, capped, and drawn from its upper half so that the runs cut off
// together do not retry together.
func Backoff(failures int) time.Duration {
	d := backoff.Wait(retryDelay, MaxRetryDelay, failures)
	return d/2 + rand.N(d/2+1)
}

// Retryable reports whether the failed write of an outcome is to be tried again: the store did
// not answer, as opposed to refusing the token or finding the run finished.
func Retryable(err error) bool {
	return err != nil && !errors.Is(err, scheduler.ErrFenced) && !errors.Is(err, scheduler.ErrNotRunning)
}

// Sink is what a Writer writes outcomes of type T to, and hands them over to. Its methods are
// called on the Writer's goroutine.
type Sink[T any] interface {
	// Ready is called before each round of writes; it may wait for work that is to come first.
	Ready()
	// Write writes the outcomes, at most MaxBatch, and returns each one's error.
	Write(outs []T) []error
	// Done hands over outcomes whose write is settled (written, refused, or failed for good);
	// errs follow outs.
	Done(outs []T, errs []error)
	// Retrying reports a failed write of n outcomes, first the first of them, that is tried
	// again in wait, after failures consecutive failed writes.
	Retrying(first T, n, failures int, wait time.Duration, err error)
}

// Writer writes outcomes in batches through a Sink; make one with New and start Run.
type Writer[T any] struct {
	clock clock.Clock
	sink  Sink[T]
	stop  chan struct{} // closed by Stop
	once  sync.Once

	mu   sync.Mutex
	q    []entry[T]
	wake chan struct{}

	// Owned by Run's goroutine.
	retry    []entry[T] // outcomes whose last write failed
	failures int        // consecutive failed writes
	retryAt  time.Time  // when retry is written again
}

// entry is an outcome and the error of its last write.
type entry[T any] struct {
	out T
	err error
}

// New returns a Writer that writes to sink on clock c.
func New[T any](c clock.Clock, sink Sink[T]) *Writer[T] {
	return &Writer[T]{clock: c, sink: sink, stop: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// Add hands out over; the Writer hands it to Sink.Done once its write is settled.
func (w *Writer[T]) Add(out T) {
	w.mu.Lock()
	w.q = append(w.q, entry[T]{out: out})
	w.mu.Unlock()
	w.poke()
}

// poke wakes the Writer.
func (w *Writer[T]) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Stop ends the retries: a failure already met is final, an outcome not tried yet is written
// once. It may be called more than once, from any goroutine.
func (w *Writer[T]) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.poke()
}

// Stopped reports whether Stop was called.
func (w *Writer[T]) Stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// Run writes batches until done is closed; its caller closes it once no outcome is to come.
func (w *Writer[T]) Run(done <-chan struct{}) {
	for {
		var (
			timer  clock.Timer
			timerC <-chan time.Time
		)
		if len(w.retry) > 0 {
			timer = w.clock.NewTimer(w.retryAt.Sub(w.clock.Now()))
			timerC = timer.C()
		}
		select {
		case <-w.wake:
		case <-timerC:
		case <-done:
			if timer != nil {
				timer.Stop()
			}
			return
		}
		if timer != nil {
			timer.Stop()
		}
		w.requeue()
		w.sink.Ready()
		for {
			w.mu.Lock()
			batch := w.q
			if len(batch) > MaxBatch {
				batch, w.q = batch[:MaxBatch:MaxBatch], batch[MaxBatch:]
			} else {
				w.q = nil
			}
			w.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			w.write(batch)
		}
	}
}

// requeue puts the outcomes to retry back in the queue when their time has come, or at once
// when the Writer was stopped: then their last write's failure is final.
func (w *Writer[T]) requeue() {
	if len(w.retry) == 0 {
		return
	}
	if !w.Stopped() && w.clock.Now().Before(w.retryAt) {
		return
	}
	w.mu.Lock()
	w.q = append(w.retry, w.q...)
	w.mu.Unlock()
	w.retry = nil
}

// write writes a batch and hands the outcomes over as done, but for those whose write failed
// and is to be retried: they stay with the Writer.
func (w *Writer[T]) write(batch []entry[T]) {
	stopped := w.Stopped()
	errs := make([]error, len(batch))
	var (
		outs []T
		idx  []int
	)
	for i, e := range batch {
		if stopped && e.err != nil {
			// The writes are over: a failure already met is final, without another try; an
			// outcome not tried yet is written once.
			errs[i] = e.err
			continue
		}
		outs = append(outs, e.out)
		idx = append(idx, i)
	}
	if len(outs) > 0 {
		for k, err := range w.sink.Write(outs) {
			errs[idx[k]] = err
		}
	}
	done := make([]T, 0, len(batch))
	doneErrs := make([]error, 0, len(batch))
	failed, heldBack := false, false
	for i, e := range batch {
		if err := errs[i]; Retryable(err) && !stopped {
			// An outcome held back is not a failed write: it waits, unreported, for its job.
			heldBack = heldBack || errors.Is(err, ErrHeldBack)
			failed = failed || !errors.Is(err, ErrHeldBack)
			e.err = err
			w.retry = append(w.retry, e)
			continue
		}
		done = append(done, e.out)
		doneErrs = append(doneErrs, errs[i])
	}
	switch {
	case failed:
		w.failures++
		wait := Backoff(w.failures)
		w.retryAt = w.clock.Now().Add(wait)
		first := w.retry[slices.IndexFunc(w.retry, func(e entry[T]) bool { return !errors.Is(e.err, ErrHeldBack) })]
		w.sink.Retrying(first.out, len(w.retry), w.failures, wait, first.err)
	case !stopped:
		w.failures = 0
		if heldBack {
			w.retryAt = w.clock.Now().Add(HeldBackRetry)
		}
	}
	if len(done) > 0 {
		w.sink.Done(done, doneErrs)
	}
}
