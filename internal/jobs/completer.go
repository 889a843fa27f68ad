package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"scheduler"
)

// maxCompleteBatch bounds the runs finished by one CompleteMany.
const maxCompleteBatch = 1000

// completer writes the outcomes of finished runs in batches: a run hands its outcome over and its
// goroutine ends; the completer writes everything handed over since its last write in one
// CompleteMany, then tells the loop that those runs are done. A lone run is written at once, so
// batching adds no delay, and no goroutine waits on the ledger per run. Outcomes whose write
// failed are written again, with the next batch or after a backoff, until the tenure's outcome
// writes are stopped (outcome.go).
type completer struct {
	t    *tenure
	mu   sync.Mutex
	q    []*finished
	wake chan struct{}

	// Owned by the completer's goroutine (run).
	retry    []*finished // outcomes whose last write failed
	failures int         // consecutive failed writes
	retryAt  time.Time   // when retry is written again
}

// finished is a run whose outcome is to be written; the completer queues pointers to it. It is
// kept small: a herd's runs may all wait in the completer at once.
type finished struct {
	c       scheduler.Completion
	slot    time.Time
	attempt int
	took    time.Duration
	done    runDone
	err     error // the write's answer, set by finish
}

func newCompleter(t *tenure) *completer {
	return &completer{t: t, wake: make(chan struct{}, 1)}
}

// add hands f over; the completer reports it to the loop once written.
func (c *completer) add(f *finished) {
	c.mu.Lock()
	c.q = append(c.q, f)
	c.mu.Unlock()
	c.poke()
}

// poke wakes the completer.
func (c *completer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run writes batches until stop is closed; the term closes it once no run is left.
func (c *completer) run(stop <-chan struct{}) {
	for {
		var (
			timer  Timer
			timerC <-chan time.Time
		)
		if len(c.retry) > 0 {
			timer = c.t.r.clock.NewTimer(c.retryAt.Sub(c.t.r.clock.Now()))
			timerC = timer.C()
		}
		select {
		case <-c.wake:
		case <-timerC:
		case <-stop:
			if timer != nil {
				timer.Stop()
			}
			return
		}
		if timer != nil {
			timer.Stop()
		}
		c.requeue()
		// A herd's first runs end while later ones are still starting: their outcomes wait
		// for the starts.
		c.t.yieldToStarts()
		for {
			c.mu.Lock()
			batch := c.q
			if len(batch) > maxCompleteBatch {
				batch, c.q = batch[:maxCompleteBatch:maxCompleteBatch], batch[maxCompleteBatch:]
			} else {
				c.q = nil
			}
			c.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			c.write(batch)
		}
	}
}

// requeue puts the outcomes to retry back in the queue when their time has come, or at once
// when the term's outcome writes were stopped: then their last write's failure is final.
func (c *completer) requeue() {
	if len(c.retry) == 0 {
		return
	}
	if !c.t.outcomes.stopped() && c.t.r.clock.Now().Before(c.retryAt) {
		return
	}
	c.mu.Lock()
	c.q = append(c.retry, c.q...)
	c.mu.Unlock()
	c.retry = nil
}

// write writes a batch and reports the runs done, but for those whose write failed and is to
// be retried: they stay with the completer.
func (c *completer) write(batch []*finished) {
	t := c.t
	stopped := t.outcomes.stopped()
	errs := make([]error, len(batch))
	var (
		cs  []scheduler.Completion
		idx []int
	)
	for i, f := range batch {
		if stopped && f.err != nil {
			// The term's writes are over: a failure already met is final, without
			// another try; an outcome not tried yet is written once.
			errs[i] = f.err
			continue
		}
		cs = append(cs, f.c)
		idx = append(idx, i)
	}
	if len(cs) > 0 {
		ctx, cancel := t.writeCtx(t.runsCtx)
		for k, err := range t.completeAll(ctx, cs) {
			errs[idx[k]] = err
		}
		cancel()
	}
	ds := make([]runDone, 0, len(batch))
	failed := false
	for i, f := range batch {
		if err := errs[i]; retryable(err) && !stopped {
			failed = true
			f.err = err
			c.retry = append(c.retry, f)
			continue
		}
		t.finish(f, errs[i])
		d := f.done
		d.out = f
		ds = append(ds, d)
	}
	if failed {
		c.failures++
		wait := outcomeBackoff(c.failures)
		c.retryAt = t.r.clock.Now().Add(wait)
		t.outcomeFailed(c.retry[0], len(c.retry), c.failures, wait, c.retry[0].err)
	} else if !stopped {
		c.failures = 0
	}
	if len(ds) > 0 {
		t.doneMany <- ds
	}
}

// completeAll finishes runs: one alone with Complete, more in batches of CompleteMany.
// A batch refused by the fence is retried run by run, so that the runs of jobs whose fences were
// not raised yet are still recorded. The errors follow cs. Like recordAll it reads only t.token
// and t.r.opts, so the completer and a takeover call it off the loop.
func (t *tenure) completeAll(ctx context.Context, cs []scheduler.Completion) []error {
	errs := make([]error, len(cs))
	if len(cs) == 1 {
		_, errs[0] = t.r.opts.Ledger.Complete(ctx, t.token, cs[0])
		return errs
	}
	for lo := 0; lo < len(cs); lo += maxCompleteBatch {
		part := cs[lo:min(lo+maxCompleteBatch, len(cs))]
		done, err := t.r.opts.Ledger.CompleteMany(ctx, t.token, part)
		switch {
		case errors.Is(err, scheduler.ErrFenced):
			for i, c := range part {
				_, errs[lo+i] = t.r.opts.Ledger.Complete(ctx, t.token, c)
			}
		case err == nil && len(done) != len(part):
			err = fmt.Errorf("the ledger answered %d completions for %d runs", len(done), len(part))
			fallthrough
		case err != nil:
			for i := range part {
				errs[lo+i] = err
			}
		default:
			for i := range part {
				if !done[i].Written {
					errs[lo+i] = fmt.Errorf("complete run %d of job %q: %w", part[i].RunID, part[i].Job, scheduler.ErrNotRunning)
				}
			}
		}
	}
	return errs
}
