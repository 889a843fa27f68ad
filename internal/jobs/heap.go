package jobs

import "time"

// fireEntry is a slot waiting on the firing loop's heap: a job's next scheduled slot, or a slot
// whose claim failed and is retried (retry set).
type fireEntry struct {
	at    time.Time // when it fires: the slot plus its jitter, or the retry time
	slot  SlotKey
	retry *pending
	index int
}

// fireHeap orders entries by fire time, so the loop arms one timer for the earliest and each
// fire costs O(log n) whatever the table size.
type fireHeap []*fireEntry

func (h fireHeap) Len() int { return len(h) }
func (h fireHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].slot.Job < h[j].slot.Job
	}
	return h[i].at.Before(h[j].at)
}
func (h fireHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *fireHeap) Push(x any) {
	e := x.(*fireEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *fireHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
