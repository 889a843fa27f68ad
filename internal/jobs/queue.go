package jobs

import (
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/catchup"
	"scheduler/internal/jobs/internal/runkey"
	"scheduler/internal/jobs/internal/slotqueue"
)

// claimState is where a scheduled slot is in claiming ahead.
type claimState uint8

const (
	claimNone   claimState = iota // not claimed ahead: claimed when it fires
	claimSent                     // in a claim batch whose answer has not come back
	claimDone                     // answered: run says what the ledger holds for the slot
	claimFailed                   // the batch failed: claimed when it fires
)

// fireEntry is a slot waiting on the firing loop: a job's next scheduled slot, or a slot whose
// claim failed and is retried (retry set).
type fireEntry struct {
	at    time.Time // when it fires: the slot plus its jitter, or the retry time
	slot  scheduler.SlotKey
	js    *jobState
	retry *pending
	held  *heldWrite // a write that failed, written again (no slot or js; backlog.go)

	run   runkey.Claim // with claimDone: the slot's run as the ledger left it
	moved *fireEntry   // the entry that took its claim over when a reload kept its slot (reload.go)
	claim claimState
	// written: with claimDone, this term's claim created run; late: due while its claim was in
	// flight, it fires when the answer comes; dropped: superseded, a run claimed for it is
	// closed, not started; carried: a reload kept its slot and claim.
	written, late, dropped, carried bool
}

// addJob adds a job of the table to the tenure.
func (t *tenure) addJob(s *Spec) { t.jobs[s.Name] = &jobState{ord: len(t.jobs), spec: s} }

// schedule queues the job's first slot firing after now.
func (t *tenure) schedule(js *jobState, now time.Time) {
	if !js.spec.Enabled || js.removed || js.blocked {
		return
	}
	// Slots whose jittered fire time is still ahead may lie before now.
	after := now.Add(-js.spec.Jitter)
	for {
		sl := js.spec.Schedule.Next(after)
		if sl.At.IsZero() {
			return
		}
		if at := js.spec.FireAt(sl.At); at.After(now) {
			t.enqueue(js, &fireEntry{at: at, slot: scheduler.SlotKey{Job: js.spec.Name, At: sl.At}, js: js})
			return
		}
		after = sl.At
	}
}

// scheduleAfter queues the job's slot following slot, fired at or before now. One due more than
// catchup.LateLimit ago means the wall clock leapt forward: the slots it leapt over are decided
// as after an outage (leapt), not run in turn.
func (t *tenure) scheduleAfter(js *jobState, slot, now time.Time) {
	if !js.spec.Enabled || js.removed || js.blocked {
		return
	}
	if sl := js.spec.Schedule.Next(slot); !sl.At.IsZero() {
		if at := js.spec.FireAt(sl.At); at.Before(now.Add(-catchup.LateLimit)) && js.spec.Misfire != MisfireAll {
			if sl.At = t.leapt(js, slot, now); sl.At.IsZero() {
				return
			}
		}
		t.enqueue(js, &fireEntry{at: js.spec.FireAt(sl.At), slot: scheduler.SlotKey{Job: js.spec.Name, At: sl.At}, js: js})
	}
}

// leapt records the slots of js the clock leapt over after slot missed, as its misfire policy
// says, and returns the one to run now (misfire once), or zero after queueing the next to come.
func (t *tenure) leapt(js *jobState, slot, now time.Time) time.Time {
	plan, _ := catchup.Leapt(catchupJob(js.spec), slot, now)
	t.lg.Warn("the clock leapt over slots; decided by the job's misfire policy", zap.String("job", js.spec.Name),
		zap.Time("after", slot), zap.Time("now", now), zap.Int("missed", len(plan.Missed)), zap.Int("run", len(plan.Run)))
	if err := t.record(t.claimCtx, plan.Missed); err != nil {
		t.end(err)
	}
	if len(plan.Run) == 0 {
		t.schedule(js, now)
		return time.Time{}
	}
	return plan.Run[len(plan.Run)-1].Key.At
}

// enqueue makes e the job's next slot: in the claim queue, or on the fire heap when slots are
// claimed as they fire.
func (t *tenure) enqueue(js *jobState, e *fireEntry) {
	js.entry = e
	if t.takeCarried(js, e) || t.ahead < 0 {
		t.heap.push(e)
		return
	}
	t.queue.push(e)
}

// fireHeap is the tenure's slots to fire, by fire time and, for a herd, in table order.
type fireHeap struct{ slotqueue.Heap[*fireEntry] }

func (h *fireHeap) push(e *fireEntry) { h.Push(e.at, e.order(), e) }

// claimQueue is the tenure's scheduled slots not yet claimed (claim.go).
type claimQueue struct{ slotqueue.Claims[*fireEntry] }

func newClaimQueue() claimQueue { return claimQueue{slotqueue.NewClaims[*fireEntry]()} }

func (q *claimQueue) push(e *fireEntry) { q.Push(e.at, e.order(), e) }

// order is the entry's place among entries firing at the same instant: its job's in the table.
func (e *fireEntry) order() int {
	if e.js == nil {
		return 0
	}
	return e.js.ord
}
