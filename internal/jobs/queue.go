package jobs

import (
	"time"

	"scheduler"
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
	// records: slots that end without running whose write failed, written again (no slot or js)
	records []scheduler.Outcome

	claim   claimState
	run     scheduler.Run // with claimDone: the slot's run as the ledger left it
	written bool          // with claimDone: this term's claim created run
	late    bool          // due while its claim was in flight: it fires when the answer comes
	dropped bool          // superseded by a reload: a run claimed for it is closed, not started
}

// addJob adds a job of the table to the tenure.
func (t *tenure) addJob(s *Spec) {
	t.jobs[s.Name] = &jobState{ord: len(t.jobs), spec: s}
}

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
		if at := js.spec.fireAt(sl.At); at.After(now) {
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
		t.enqueue(js, &fireEntry{at: js.spec.fireAt(sl.At), slot: scheduler.SlotKey{Job: js.spec.Name, At: sl.At}, js: js})
	}
}

// enqueue makes e the job's next slot: in the claim queue, or on the fire heap when slots are
// claimed as they fire.
func (t *tenure) enqueue(js *jobState, e *fireEntry) {
	js.entry = e
	if t.ahead < 0 {
		t.heap.push(e)
		return
	}
	t.queue.push(e)
}

// fireHeap orders entries by fire time, so the loop arms one timer for the earliest and each
// fire costs O(log n) whatever the table size. Its items carry their sort key inline, so that
// sifting compares neighbouring items in one slice instead of following a pointer each time.
type fireHeap []heapItem

type heapItem struct {
	key int64 // the fire time in Unix nanoseconds
	ord int   // the job's place in the table: a herd fires in table order
	e   *fireEntry
}

func (a heapItem) less(b heapItem) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.ord < b.ord
}

// push adds e.
func (h *fireHeap) push(e *fireEntry) {
	it := heapItem{key: e.at.UnixNano(), e: e}
	if e.js != nil {
		it.ord = e.js.ord
	}
	*h = append(*h, it)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].less(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

// peek returns the earliest entry; the heap must not be empty.
func (h fireHeap) peek() *fireEntry { return h[0].e }

// pop removes and returns the earliest entry; the heap must not be empty.
func (h *fireHeap) pop() *fireEntry {
	q := *h
	top := q[0].e
	n := len(q) - 1
	q[0] = q[n]
	q[n] = heapItem{}
	q = q[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q[r].less(q[l]) {
			m = r
		}
		if !q[m].less(q[i]) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

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

// measure updates the claim rate with a batch of n slots that took took to claim.
func (q *claimQueue) measure(n int, took time.Duration) {
	if n >= minRateSample && took > 0 {
		q.rate = 0.5*q.rate + 0.5*float64(n)/took.Seconds()
	}
}
