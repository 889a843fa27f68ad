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

// fireHeap orders entries by fire time, so the loop arms one timer for the earliest and each
// fire costs O(log n) whatever the table size. Its items carry their sort key inline: sifting
// compares neighbouring items in one slice instead of following a pointer per comparison, which
// at 100,000 entries is most of the cost of a pop.
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
