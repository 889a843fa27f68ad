// Package bounded bounds in time the ledger calls the runner waits for: a claim, ahead or at
// fire, a slot recorded, a run started, taken over or finished. A store that stops answering
// without closing its connection (a frozen server, a network that drops packets) then fails the
// call when its bound ends, and the runner retries it as any failed write, instead of holding
// the slots, and every slot behind them, for as long as the store hangs. A context with an
// earlier deadline keeps it. The takeover's raise and its reads of the ledger (Window,
// LastScheduled, Orphans) are left to their callers' bounds.
package bounded

import (
	"context"
	"time"

	"scheduler"
)

// Ledger is a ledger whose calls the runner waits for end within Timeout.
type Ledger struct {
	scheduler.Ledger
	Timeout time.Duration
}

// ClaimMany is the ledger's, bounded.
func (l Ledger) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	return l.Ledger.ClaimMany(ctx, token, node, slots)
}

// ClaimAheadMany is the ledger's, bounded.
func (l Ledger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	return l.Ledger.ClaimAheadMany(ctx, token, node, slots)
}

// StartMany is the ledger's, bounded.
func (l Ledger) StartMany(ctx context.Context, token int64, refs []scheduler.RunRef) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	return l.Ledger.StartMany(ctx, token, refs)
}

// Reclaim is the ledger's, bounded.
func (l Ledger) Reclaim(ctx context.Context, token int64, node string, slot scheduler.SlotKey) (scheduler.Run, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	return l.Ledger.Reclaim(ctx, token, node, slot)
}

// ReclaimMany is the ledger's, bounded.
func (l Ledger) ReclaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	return l.Ledger.ReclaimMany(ctx, token, node, slots)
}

// RecordMany is the ledger's, bounded.
func (l Ledger) RecordMany(ctx context.Context, token int64, node string, outs []scheduler.Outcome) ([]scheduler.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	return l.Ledger.RecordMany(ctx, token, node, outs)
}

// Complete is the ledger's, bounded.
func (l Ledger) Complete(ctx context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	return l.Ledger.Complete(ctx, token, c)
}

// CompleteMany is the ledger's, bounded.
func (l Ledger) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	return l.Ledger.CompleteMany(ctx, token, cs)
}

// NextAttempt is the ledger's, bounded.
func (l Ledger) NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	return l.Ledger.NextAttempt(ctx, token, job, runID)
}
