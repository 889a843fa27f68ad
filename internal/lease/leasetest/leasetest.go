// Package leasetest runs a backend's campaigner in a test and records the
// terms it leads, and holds the contract tests every lease-style backend
// passes, each backend with its own server. It imports only the
// scheduler's root package, package lease, testenv and the standard
// library.
package leasetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/lease"
)

// Campaigner is what Run drives: a backend's campaigner.
type Campaigner interface {
	Run(ctx context.Context, lead lease.LeadFunc) error
}

// Event is a term starting or ending, numbered in the order seen by the
// test across every campaigner that shares the counter.
type Event struct {
	// Term is the term led.
	Term scheduler.Term
	// Seq is the event's place in the order seen by the test.
	Seq int64
	// Cause is context.Cause of the term's context when it ended; nil when
	// it started.
	Cause error
}

// Campaign is a campaigner running in the background until Stop is called
// or the test ends.
type Campaign struct {
	// Won and Lost receive the terms as they start and end.
	Won, Lost chan Event
	cancel    context.CancelFunc
	done      chan struct{}
}

// Run starts c.Run with a lead that records its terms on seq and, when hold
// is set, leads until its context ends; else it returns at once. The
// campaign stops when the test ends.
func Run(t *testing.T, c Campaigner, seq *atomic.Int64, hold bool) *Campaign {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Campaign{Won: make(chan Event, 64), Lost: make(chan Event, 64), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		err := c.Run(ctx, func(ctx context.Context, term scheduler.Term) error {
			r.Won <- Event{Term: term, Seq: seq.Add(1)}
			if hold {
				<-ctx.Done()
			}
			r.Lost <- Event{Term: term, Seq: seq.Add(1), Cause: context.Cause(ctx)}
			return nil
		})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(r.Stop)
	return r
}

// Stop cancels the campaign and waits for Run to return.
func (r *Campaign) Stop() {
	r.cancel()
	<-r.done
}

// Next returns the next event from ch, failing t after within.
func Next(t *testing.T, ch <-chan Event, within time.Duration, what string) Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(within):
		t.Fatalf("no %s within %v", what, within)
		return Event{}
	}
}
