package jobs

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// Claiming ahead keeps the ledger off the firing path. A scheduled slot first waits in the
// claim queue; shortly before it fires (Options.ClaimAhead) it is claimed in one ClaimMany with
// the other slots due by then, fenced like any claim, by a goroutine of the term, and moves to
// the fire heap. When it fires, the loop only starts its run.
//
// A slot is claimed ahead only when the loop can tell at claim time that it will run: its job is
// not paused, and has no run in progress and no slot queued unless its overlap is allow or
// replace. Other slots are decided and claimed when they fire, as before. Pause and overlap are
// checked again at fire time: a slot claimed ahead that must not run after all is completed
// skipped with its reason.
//
// Herds: a claim of many slots takes time (tens of thousands of slots a second on Postgres, ten
// thousand on SQLite). The queue counts its slots per second of fire time and claims a second's slots
// early enough to claim them, and every earlier one, at half the claim rate it measured, before
// they fire; at most maxClaimLead ahead. Batches hold at most maxClaimBatch slots: a fenced batch
// takes a lock per job, and Postgres's shared lock table holds about 6,400 by default.
//
// A slot claimed ahead by a term that ends before the slot fires stays running in the ledger
// under that term's token, as a run cut off by a crash does. The next leader takes it over: at
// catch-up if the slot is due by then (misfire policy, like any orphan), else when the slot
// fires: planCatchup leaves such an orphan to the firing loop, which reclaims it or,
// if the job is paused or busy by then, closes it skipped. A run claimed ahead is running in the
// ledger up to ClaimAhead (and a herd's lead) before its slot; it is not started (attempt 0)
// until it fires and its start is recorded (started.go), so that one taken over before it
// started runs as attempt 1.

// Bounds of claiming ahead.
const (
	defaultClaimAhead = time.Second
	maxClaimBatch     = 1000             // slots per ClaimMany or RecordMany: a fenced batch holds a lock per job
	maxClaimsInFlight = 2                // concurrent ClaimMany calls
	maxClaimLead      = 30 * time.Second // how far ahead a herd may be claimed
	initialClaimRate  = 20000.0          // slots per second assumed before the first measurement
	minRateSample     = 200              // smallest batch whose duration updates the rate
	// claimSlack is how much slower than the measured rate claims are planned: the rate is
	// measured on the batches before, and a herd's claims meet a database (or a machine) that
	// may be busier by then; a herd's slots claimed late wait for their claims when they fire.
	claimSlack = 2
)

// claimQueue holds the scheduled slots not yet claimed, by fire time, and counts them per second
// of fire time.
type claimQueue struct {
	heap  fireHeap
	count map[int64]int
	rate  float64 // measured claim throughput, slots per second
}

func newClaimQueue() claimQueue {
	return claimQueue{count: map[int64]int{}, rate: initialClaimRate}
}

func (q *claimQueue) push(e *fireEntry) {
	q.heap.push(e)
	q.count[e.at.Unix()]++
}

func (q *claimQueue) pop() *fireEntry {
	e := q.heap.pop()
	s := e.at.Unix()
	if q.count[s]--; q.count[s] <= 0 {
		delete(q.count, s)
	}
	return e
}

func (q *claimQueue) reset() {
	q.heap = q.heap[:0]
	clear(q.count)
}

// claimTime is how long claiming n slots is planned to take: at the measured rate, with
// claimSlack.
func (q *claimQueue) claimTime(n int) time.Duration {
	return min(time.Duration(claimSlack*float64(n)/q.rate*float64(time.Second)), maxClaimLead)
}

// plan returns, for the queue as it is: by, the fire time before which slots are to be claimed
// at now; and wake, the earliest time at which that moves past the first queued slot (zero when
// the queue is empty).
func (q *claimQueue) plan(now time.Time, ahead time.Duration) (by, wake time.Time) {
	by = now.Add(ahead + 1)
	if len(q.heap) == 0 {
		return by, time.Time{}
	}
	wake = q.heap.peek().at.Add(-ahead)
	first := q.heap.peek().at.Unix()
	last := first + int64((ahead+maxClaimLead)/time.Second) + 1
	cum := 0
	for s := first; s <= last; s++ {
		n := q.count[s]
		if n == 0 {
			continue
		}
		cum += n
		start := time.Unix(s, 0).Add(-ahead - q.claimTime(cum))
		if start.Before(wake) {
			wake = start
		}
		if !start.After(now) {
			by = maxTime(by, time.Unix(s+1, 0))
		}
	}
	return by, wake
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// claimBatch is one ClaimMany of claiming ahead, and its answer.
type claimBatch struct {
	entries []*fireEntry
	claimed []scheduler.Result
	err     error
	took    time.Duration
}

// claimAhead moves the slots whose claim time has come to the fire heap and claims those that
// will run.
func (t *term) claimAhead(now time.Time) {
	if t.ahead < 0 || t.draining {
		return
	}
	by, _ := t.queue.plan(now, t.ahead)
	var batch []*fireEntry
	for len(t.queue.heap) > 0 && t.queue.heap.peek().at.Before(by) {
		e := t.queue.pop()
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
func (t *term) claimable(js *jobState) bool {
	if t.paused(js.spec.Name) {
		return false
	}
	if len(js.active) == 0 && len(js.queue) == 0 {
		return true
	}
	return js.spec.Overlap == OverlapAllow || js.spec.Overlap == OverlapReplace
}

func (t *term) paused(job string) bool {
	return t.r.opts.Paused != nil && t.r.opts.Paused(job)
}

// sendClaims starts the waiting claim batches, up to maxClaimsInFlight at once.
func (t *term) sendClaims() {
	for len(t.pendingClaims) > 0 && t.claiming < maxClaimsInFlight {
		b := &claimBatch{entries: t.pendingClaims[0]}
		t.pendingClaims = t.pendingClaims[1:]
		slots := make([]scheduler.SlotKey, len(b.entries))
		for i, e := range b.entries {
			slots[i] = e.slot
		}
		t.claiming++
		go func() {
			start := time.Now()
			b.claimed, b.err = t.claimSlotsAhead(t.claimCtx, slots)
			b.took = time.Since(start)
			t.claims <- b
		}()
	}
}

// claimed records a batch's answer in its entries and fires those that came due meanwhile.
func (t *term) claimed(ctx context.Context, b *claimBatch) error {
	t.claiming--
	defer t.sendClaims()
	switch {
	case errors.Is(b.err, scheduler.ErrFenced):
		slots := make([]scheduler.SlotKey, len(b.entries))
		for i, e := range b.entries {
			slots[i] = e.slot
		}
		if err := t.refused(ctx, batchJob(slots), b.err); err != nil {
			return err
		}
		// The batch was refused for a job now blocked: the others are claimed when they fire.
	case b.err == nil && len(b.claimed) != len(b.entries):
		b.err = errors.New("the ledger answered a claim for a different number of slots")
	}
	if b.err != nil {
		t.lg.Warn("claim slots ahead; claiming them when they fire", zap.Int("slots", len(b.entries)), zap.Error(b.err))
	} else {
		t.retryHeld() // the store is back
		if len(b.entries) >= minRateSample && b.took > 0 {
			rate := float64(len(b.entries)) / b.took.Seconds()
			t.queue.rate = 0.5*t.queue.rate + 0.5*rate
		}
	}
	var (
		due    []pending
		closes []scheduler.Completion
	)
	for i, e := range b.entries {
		if b.err != nil {
			e.claim = claimFailed
		} else {
			e.claim, e.run, e.written = claimDone, b.claimed[i].Run, b.claimed[i].Written
		}
		switch {
		case e.dropped && e.written:
			closes = append(closes, scheduler.Completion{RunID: e.run.RunID, Job: e.slot.Job, Status: scheduler.StatusSkipped, Reason: reasonReloaded})
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

// firing turns a slot that fires into what dispatch decides on: a run claimed ahead, an orphan to
// take over, or a slot to claim now. false: the slot already has a run of its own.
func (t *term) firing(e *fireEntry) (pending, bool) {
	p := pending{slot: e.slot, js: e.js}
	if o, ok := e.js.ahead[e.slot.At.UnixMicro()]; ok {
		delete(e.js.ahead, e.slot.At.UnixMicro())
		if e.claim != claimDone {
			p.orphan = &o
			return p, true
		}
	}
	if e.claim != claimDone {
		return p, true
	}
	switch {
	case e.written:
		p.claimed = &e.run
	case e.run.Status == scheduler.StatusRunning && e.run.Token < t.token:
		p.orphan = &e.run
	default:
		t.lg.Info("slot already has a run", zap.String("job", e.slot.Job), zap.Time("slot", e.slot.At),
			zap.String("status", string(e.run.Status)), zap.Int64("run_token", e.run.Token))
		return p, false
	}
	return p, true
}
