package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// maxCompleteBatch bounds the runs finished by one CompleteMany.
const maxCompleteBatch = 1000

// errNotRunning reports a completion of a run that was no longer running.
var errNotRunning = errors.New("the run is no longer running")

// completer writes the outcomes of finished runs in batches, when the Ledger is a
// BatchCompleter: a run hands its outcome over and its goroutine ends; the completer writes
// everything handed over since its last write in one CompleteMany, then tells the loop that
// those runs are done. A lone run is written at once, so batching adds no delay; a herd of
// short runs costs a few round trips instead of one per run, and no goroutine waits on the
// ledger per run.
type completer struct {
	t    *term
	mu   sync.Mutex
	q    []*finished
	wake chan struct{}
}

// finished is a run whose outcome is to be written; the completer queues pointers to it. It is
// kept small: a herd's runs may all wait in the completer at once.
type finished struct {
	c       Completion
	slot    time.Time
	attempt int
	took    time.Duration
	done    runDone
	err     error // the write's answer, set by finish
}

func newCompleter(t *term) *completer {
	return &completer{t: t, wake: make(chan struct{}, 1)}
}

// add hands f over; the completer reports it to the loop once written.
func (c *completer) add(f *finished) {
	c.mu.Lock()
	c.q = append(c.q, f)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run writes batches until stop is closed; the term closes it once no run is left.
func (c *completer) run(stop <-chan struct{}) {
	for {
		select {
		case <-c.wake:
		case <-stop:
			return
		}
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

func (c *completer) write(batch []*finished) {
	t := c.t
	cs := make([]Completion, len(batch))
	for i, f := range batch {
		cs[i] = f.c
	}
	ctx, cancel := t.writeCtx(t.runsCtx)
	errs := t.completeAll(ctx, cs)
	cancel()
	ds := make([]runDone, len(batch))
	for i, f := range batch {
		t.finish(f, errs[i])
		ds[i] = f.done
		ds[i].out = f
	}
	t.doneMany <- ds
}

// completeAll finishes runs: in batches of CompleteMany when the Ledger has it, else one by one.
// A batch refused by the fence is retried run by run, so that the runs of jobs whose fences were
// not raised yet are still recorded. The errors follow cs.
func (t *term) completeAll(ctx context.Context, cs []Completion) []error {
	errs := make([]error, len(cs))
	bc, ok := t.r.opts.Ledger.(BatchCompleter)
	if !ok || len(cs) == 1 {
		for i, c := range cs {
			errs[i] = t.r.opts.Ledger.Complete(ctx, t.token, c)
		}
		return errs
	}
	for lo := 0; lo < len(cs); lo += maxCompleteBatch {
		part := cs[lo:min(lo+maxCompleteBatch, len(cs))]
		done, err := bc.CompleteMany(ctx, t.token, part)
		switch {
		case errors.Is(err, ErrFenced):
			for i, c := range part {
				errs[lo+i] = t.r.opts.Ledger.Complete(ctx, t.token, c)
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
				if !done[i] {
					errs[lo+i] = fmt.Errorf("complete run %d of job %q: %w", part[i].RunID, part[i].Job, errNotRunning)
				}
			}
		}
	}
	return errs
}
