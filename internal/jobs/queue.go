package jobs

import (
	"time"

	"scheduler"

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

// scheduleAfter queues the job's slot following slot.
func (t *tenure) scheduleAfter(js *jobState, slot time.Time) {
	if !js.spec.Enabled || js.removed || js.blocked {
		return
	}
	if sl := js.spec.Schedule.Next(slot); !sl.At.IsZero() {
		t.enqueue(js, &fireEntry{at: js.spec.FireAt(sl.At), slot: scheduler.SlotKey{Job: js.spec.Name, At: sl.At}, js: js})
	}
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
