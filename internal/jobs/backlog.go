package jobs

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/backoff"
)

// Slots that fire while the store cannot be reached are held: their claims, and the records of
// slots that end without running, wait for one retry together, and fire as soon as a write
// lands again: a backlog fires together, not spread over retries that grow apart.

// The wait before the held writes are retried: retryDelay, doubled per failed write, at most
// maxRetryDelay.
const (
	retryDelay    = 500 * time.Millisecond
	maxRetryDelay = 30 * time.Second
)

// backlog is the tenure's state of the writes that wait for the store.
type backlog struct {
	failures int          // consecutive failed ledger writes in the loop
	held     []*fireEntry // retries of slots whose claims failed (retryLater), some popped already
	heldAt   time.Time    // when they are retried, all together
}

// retryLater puts slots whose claim failed back on the heap, with a growing delay. Every slot
// waiting so joins the retry already set, if any: the backlog is retried, and fires, together.
func (t *tenure) retryLater(slots []scheduler.SlotKey, err error) {
	at, in := t.heldRetry()
	t.lg.Warn("claim slots; retrying", zap.Int("slots", len(slots)), zap.Duration("in", in), zap.Int("failures", t.failures), zap.Error(err))
	t.doubted.Add(slots...)
	for _, s := range slots {
		p := pending{slot: s, held: true}
		e := &fireEntry{at: at, slot: s, js: t.jobs[s.Job], retry: &p}
		t.heap.push(e)
		t.held = append(t.held, e)
	}
}

// heldWrite is a write that waits for the store with the claims: the records of slots that end
// without running, or the closes of runs that do (a run claimed ahead and then skipped must not
// stay running, for a later leader to take over and run).
type heldWrite struct {
	records []scheduler.Outcome
	closes  []scheduler.Completion
}

// writeLater writes w again with the claims that wait for the store.
func (t *tenure) writeLater(w heldWrite, err error) {
	at, in := t.heldRetry()
	t.lg.Warn("record slots or close runs; retrying", zap.Int("slots", len(w.records)), zap.Int("runs", len(w.closes)),
		zap.Duration("in", in), zap.Int("failures", t.failures), zap.Error(err))
	e := &fireEntry{at: at, held: &heldWrite{records: slices.Clone(w.records), closes: slices.Clone(w.closes)}}
	t.heap.push(e)
	t.held = append(t.held, e)
}

// heldRetry counts a failed write and returns when the writes waiting for the store are retried,
// and how long from now that is.
func (t *tenure) heldRetry() (time.Time, time.Duration) {
	t.failures++
	now := t.r.clock.Now()
	at := now.Add(backoff.Wait(retryDelay, maxRetryDelay, t.failures))
	if t.heldAt.After(now) && t.heldAt.Before(at) {
		at = t.heldAt
	}
	t.heldAt = at
	t.held = slices.DeleteFunc(t.held, func(e *fireEntry) bool { return e.dropped })
	return at, at.Sub(now)
}

// retryHeld fires the slots waiting for a retry of their claims now, once a claim succeeded:
// the store is back, and a backlog left to the retry would wait up to maxRetryDelay, and run
// then behind the slots that came after it.
func (t *tenure) retryHeld() {
	held := t.held
	t.held = nil
	now := t.r.clock.Now()
	t.heldAt = now
	for _, e := range held {
		if e.dropped {
			continue // fired
		}
		e.dropped = true // the entry left on the heap is skipped when it pops
		if e.held != nil {
			t.heap.push(&fireEntry{at: now, held: e.held})
			continue
		}
		p := *e.retry
		t.heap.push(&fireEntry{at: now, slot: e.slot, js: e.js, retry: &p})
	}
}

// skipped is a slot dispatch skips, and why.
type skipped struct {
	p      pending
	reason string
}

// settleBehind records the slots skipped for a slot that started in the same dispatch, once it
// runs. If its claim failed instead, they were skipped for nothing: they wait for the store
// with it, and fire again together.
func (t *tenure) settleBehind(ctx context.Context, behind []skipped) error {
	var records []scheduler.Outcome
	for _, b := range behind {
		if len(b.p.js.active) > 0 {
			records = append(records, scheduler.Outcome{Slot: b.p.slot, Status: scheduler.StatusSkipped, Reason: b.reason})
			continue
		}
		at := t.heldAt
		if now := t.r.clock.Now(); !at.After(now) {
			at = now.Add(retryDelay)
		}
		p := pending{slot: b.p.slot, held: true}
		e := &fireEntry{at: at, slot: p.slot, js: b.p.js, retry: &p}
		t.heap.push(e)
		t.held = append(t.held, e)
	}
	return t.record(ctx, records)
}
