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
	final  bool                    // no attempt is to start after the current one (Final)
	wait   context.CancelFunc      // ends the run's wait before a retry; nil while not waiting
}

// Final lets the run's current attempt end, but starts no other: a run waiting to retry ends
// failed at once, with the last attempt's error. It is how a run of a job taken out of the table
// ends without killing the work under way.
func (c *Cancel) Final() {
	c.mu.Lock()
	c.final = true
	wait := c.wait
	c.mu.Unlock()
	if wait != nil {
		wait()
	}
}

func (c *Cancel) isFinal() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.final
}

// waiting returns ctx, ended early by Final, for the wait before a retry; end must be called
// once the wait is over.
func (c *Cancel) waiting(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	if c.final {
		cancel()
	}
	c.wait = cancel
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		c.wait = nil
		c.mu.Unlock()
		cancel()
	}
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
