package jobs

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/parallel"
	"scheduler/internal/jobs/internal/refusal"
	"scheduler/internal/jobs/internal/runkey"
)

// A slot is claimed in the ledger before it fires, in one ClaimMany with the other slots due by
// then, so that firing makes no round trip to the store. Only slots the loop can tell will run
// are claimed ahead (not paused, no run in the way unless overlap is allow or replace); pause and
// overlap are decided again when the slot fires, and one that must not run after all is
// completed skipped. A herd is claimed early enough, at the rate measured before, to land in time.
// A run claimed ahead is not started (attempt 0) until its slot fires (started.go); a tenure that
// ends first leaves it running, as a crash does, for the next leader (jobState.ahead).

// Bounds of claiming ahead.
const (
	maxClaimBatch     = 1000 // slots per ClaimMany or RecordMany: a fenced batch holds a lock per job
	maxClaimsInFlight = 2    // concurrent ClaimMany calls
)

// claimsAhead is the tenure's state of claiming ahead.
type claimsAhead struct {
	ahead         time.Duration // Options.ClaimAhead; negative: slots are claimed when they fire
	queue         claimQueue    // scheduled slots not yet claimed
	pendingClaims [][]*fireEntry
	claiming      int // claim batches in flight
	claims        chan *claimBatch
	claimCtx      context.Context
}

func newClaimsAhead(ahead time.Duration) claimsAhead {
	return claimsAhead{ahead: ahead, queue: newClaimQueue(), claims: make(chan *claimBatch, maxClaimsInFlight)}
}

// claimBatch is one ClaimAheadMany, and its answer.
type claimBatch struct {
	entries []*fireEntry
	claimed []scheduler.Result
	err     error
	took    time.Duration // on the runner's clock
}

// claimAhead moves the slots whose claim time has come to the fire heap and claims those that
// will run.
func (t *tenure) claimAhead(now time.Time) {
	if t.ahead < 0 || t.draining {
		return
	}
	by, _ := t.queue.Plan(now, t.ahead)
	var batch []*fireEntry
	for t.queue.Len() > 0 && t.queue.Peek().at.Before(by) {
		e := t.queue.Pop()
		js := e.js
		if js.entry != e {
			continue // superseded by a reload
		}
		t.heap.push(e)
		if !t.claimable(js) {
			continue
		}
		e.claim = claimSent
		batch = append(batch, e)
		if len(batch) == maxClaimBatch {
			t.pendingClaims = append(t.pendingClaims, batch)
			batch = nil
		}
	}
	if len(batch) > 0 {
		t.pendingClaims = append(t.pendingClaims, batch)
	}
	t.sendClaims()
}

// claimable reports whether js's next slot will run unless something changes before it fires.
func (t *tenure) claimable(js *jobState) bool {
	if t.paused(js.spec.Name) {
		return false
	}
	if len(js.active) == 0 && len(js.queue) == 0 {
		return true
	}
	return js.spec.Overlap == OverlapAllow || js.spec.Overlap == OverlapReplace
}

func (t *tenure) paused(job string) bool { return t.r.opts.Paused != nil && t.r.opts.Paused(job) }

// sendClaims starts the waiting claim batches, up to maxClaimsInFlight at once. A claim ahead
// leaves its runs not started, so that the attempt count counts only attempts that started.
func (t *tenure) sendClaims() {
	for len(t.pendingClaims) > 0 && t.claiming < maxClaimsInFlight {
		b := &claimBatch{entries: t.pendingClaims[0]}
		t.pendingClaims[0], t.pendingClaims = nil, t.pendingClaims[1:] // its entries let go once fired
		slots := slotsOf(b.entries)
		t.claiming++
		go func() {
			start := t.r.clock.Now()
			b.claimed, b.err = t.led.ClaimAheadMany(t.claimCtx, t.token, t.r.opts.Node, slots)
			b.took = t.r.clock.Now().Sub(start)
			t.claims <- b
		}()
	}
}

func slotsOf(entries []*fireEntry) []scheduler.SlotKey {
	slots := make([]scheduler.SlotKey, len(entries))
	for i, e := range entries {
		slots[i] = e.slot
	}
	return slots
}

// claimed records a batch's answer in its entries and fires those that came due meanwhile.
func (t *tenure) claimed(ctx context.Context, b *claimBatch) error {
	t.claiming--
	defer t.sendClaims()
	switch {
	case refusal.RefusedOrHeld(b.err):
		if err := t.refused(ctx, refusal.BatchJob(slotsOf(b.entries), slotJob), b.err); err != nil {
			return err
		}
		// Refused (or held) for a job now blocked: the others are claimed when they fire.
	case b.err == nil && len(b.claimed) != len(b.entries):
		b.err = errors.New("the ledger answered a claim for a different number of slots")
	}
	if b.err != nil {
		t.lg.Warn("claim slots ahead; claiming them when they fire", zap.Int("slots", len(b.entries)), zap.Error(b.err))
		t.doubted.Add(slotsOf(b.entries)...)
	} else {
		t.retryHeld() // the store is back
		t.queue.Measure(len(b.entries), b.took)
	}
	var (
		due    []pending
		closes []scheduler.Completion
	)
	for i, e := range b.entries {
		if b.err != nil {
			e.claim = claimFailed
		} else {
			e.claim, e.run, e.written = claimDone, runkey.ClaimOf(b.claimed[i].Run), b.claimed[i].Written
		}
		for ; e.moved != nil; e = e.moved {
			e.moved.claim, e.moved.run, e.moved.written = e.claim, e.run, e.written
		}
		switch {
		case e.dropped && e.written:
			closes = append(closes, skippedRun(e.run.RunID, e.slot.Job, e.js.dropReason(e.slot)))
		case e.late:
			if p, ok := t.firing(e); ok {
				due = append(due, p)
			}
		}
	}
	if t.draining {
		return nil // the slots claimed stay running, for the next leader
	}
	if err := t.closeRuns(ctx, closes); err != nil {
		return err
	}
	return t.dispatch(ctx, due)
}

// start claims fresh slots in one batch, takes over orphans and launches the runs, those claimed
// ahead at once. A ledger failure other than the fence puts the slots back to be retried shortly.
func (t *tenure) start(ctx context.Context, ps []pending) error {
	var (
		fresh   []scheduler.SlotKey
		orphans []scheduler.Run
	)
	for _, p := range ps {
		switch {
		case p.claimed:
			t.launch(p.js, p.claim.Run(p.slot))
		case p.orphan != nil:
			orphans = append(orphans, *p.orphan)
		default:
			fresh = append(fresh, p.slot)
		}
	}
	if err := t.reclaimAll(ctx, orphans); err != nil {
		return err
	}
	if len(fresh) == 0 {
		return nil
	}
	// A large batch (a takeover's catch-up) is claimed in parts; the runs of each part are
	// launched here, on the loop goroutine, as soon as it is claimed.
	n := (len(fresh) + maxClaimBatch - 1) / maxClaimBatch
	claimed, errs := make([][]scheduler.Result, n), make([]error, n)
	return parallel.Batches(len(fresh), maxClaimBatch, maxClaimsInFlight, func(k, lo, hi int) {
		claimed[k], errs[k] = t.led.ClaimMany(ctx, t.token, t.r.opts.Node, fresh[lo:hi])
	}, func(k, lo, hi int) error {
		return t.claimedNow(ctx, fresh[lo:hi], claimed[k], errs[k])
	})
}

// claimedNow launches the runs of fresh slots claimed now.
func (t *tenure) claimedNow(ctx context.Context, fresh []scheduler.SlotKey, claimed []scheduler.Result, err error) error {
	fresh, err, end := withoutRefused(ctx, t, fresh, slotJob, err, func(rest []scheduler.SlotKey) (err error) {
		claimed, err = t.led.ClaimMany(ctx, t.token, t.r.opts.Node, rest)
		return err
	})
	switch {
	case end != nil || len(fresh) == 0:
		return end
	case err != nil:
		t.retryLater(fresh, err)
		return nil
	}
	t.failures = 0
	t.retryHeld()
	for _, c := range claimed {
		switch {
		case c.Written || t.ownClaim(c.Run):
			t.launch(nil, c.Run)
		case c.Run.Status == scheduler.StatusRunning && c.Run.Token < t.token:
			if err := t.reclaim(ctx, c.Run); err != nil {
				return err
			}
		default:
			t.lg.Info("slot already has a run", zap.String("job", c.Run.Job), zap.Time("slot", c.Run.ScheduledAt),
				zap.String("status", string(c.Run.Status)), zap.Int64("run_token", c.Run.Token))
		}
	}
	return nil
}

func slotJob(s scheduler.SlotKey) string { return s.Job }

// ownClaim reports whether run, found in a claim's (or a record's) way, is the term's own claim or
// takeover of a doubted slot, committed with its answer lost (running under the token, not in
// progress): then it is run, once (or closed).
func (t *tenure) ownClaim(run scheduler.Run) bool {
	js := t.jobs[run.Job]
	if run.Status != scheduler.StatusRunning || run.Token != t.token || js == nil ||
		slices.ContainsFunc(js.active, func(a activeRun) bool { return a.runID == run.RunID }) || !t.doubted.Take(run.Key()) {
		return false
	}
	t.lg.Warn("the slot's claim or takeover committed though its answer was lost", zap.String("job", run.Job),
		zap.Time("slot", run.ScheduledAt), zap.Int64("run_id", run.RunID), zap.Int64("token", run.Token))
	return true
}
