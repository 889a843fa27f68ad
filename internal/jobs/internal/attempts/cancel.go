package attempts

import (
	"context"
	"sync"
)

// Cancel cancels a run: its current attempt, or its wait before the next one. The zero Cancel
// has not been cancelled; it is safe for concurrent use.
//
// A run could own a context of its own with each attempt's context below it, but then starting
// an attempt registers it with the run's context and makes that context's channel: two
// allocations and a lock on the firing path of every run, for a cancellation that almost never
// comes. Instead each attempt's context hangs off the term's (which is never cancelled), and the
// run keeps only the cause and the cancel function of what it is doing now.
type Cancel struct {
	mu     sync.Mutex
	cause  error                   // why the run was cancelled; nil while it was not
	cancel context.CancelCauseFunc // the current attempt's or wait's; nil between them
}

// Do cancels the run with cause; the first cause is kept.
func (c *Cancel) Do(cause error) {
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

// Err returns the cause of the run's cancellation, or nil.
func (c *Cancel) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// begin returns the context of the run's next attempt or wait, derived from parent, which the
// run's cancellation cancels, and its own cancel function; end must be called when it is over.
func (c *Cancel) begin(parent context.Context) (ctx context.Context, cancel context.CancelCauseFunc, end func()) {
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
