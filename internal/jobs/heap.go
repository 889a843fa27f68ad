package jobs

import "time"

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
	slot  SlotKey
	js    *jobState
	retry *pending
	index int
	key   int64 // at in Unix nanoseconds, and the job's ord: the heap's order
	ord   int

	claim   claimState
	run     LedgerRun // with claimDone: the slot's run as the ledger left it
	written bool      // with claimDone: this term's claim created run
	late    bool      // due while its claim was in flight: it fires when the answer comes
	dropped bool      // superseded by a reload: a run claimed for it is closed, not started
}

// fireHeap orders entries by fire time, so the loop arms one timer for the earliest and each
// fire costs O(log n) whatever the table size.
type fireHeap []*fireEntry

func (h fireHeap) Len() int { return len(h) }
func (h fireHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.key != b.key {
		return a.key < b.key
	}
	return a.ord < b.ord // a herd fires in table order
}
func (h fireHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *fireHeap) Push(x any) {
	e := x.(*fireEntry)
	e.index = len(*h)
	e.key = e.at.UnixNano()
	if e.js != nil {
		e.ord = e.js.ord
	}
	*h = append(*h, e)
}
func (h *fireHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
