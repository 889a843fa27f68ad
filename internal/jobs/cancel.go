package jobs

import (
	"context"
	"sync"
)

// runCancel cancels a run: its current attempt, or its wait before the next one.
//
// A run could own a context of its own with each attempt's context below it, but then starting
// an attempt registers it with the run's context and makes that context's channel: two
// allocations and a lock on the firing path of every run, for a cancellation that almost never
// comes. Instead each attempt's context hangs off the term's (which is never cancelled), and the
// run keeps only the cause and the cancel function of what it is doing now.
type runCancel struct {
	mu     sync.Mutex
	cause  error                   // why the run was cancelled; nil while it was not
	cancel context.CancelCauseFunc // the current attempt's or wait's; nil between them
}

// do cancels the run with cause; the first cause is kept.
func (c *runCancel) do(cause error) {
	c.mu.Lock()
	if c.cause == nil {
		c.cause = cause
	}
	cause, cancel := c.cause, c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// err returns the cause of the run's cancellation, or nil.
func (c *runCancel) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// begin returns the context of the run's next attempt or wait, derived from parent, which the
// run's cancellation cancels, and its own cancel function; end must be called when it is over.
func (c *runCancel) begin(parent context.Context) (ctx context.Context, cancel context.CancelCauseFunc, end func()) {
	ctx, cancel = context.WithCancelCause(parent)
	c.mu.Lock()
	if c.cause != nil {
		cancel(c.cause)
	}
	c.cancel = cancel
	c.mu.Unlock()
	return ctx, cancel, func() {
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
		cancel(nil)
	}
}
