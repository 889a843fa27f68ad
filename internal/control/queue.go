package control

import "slices"

// queue holds the requests a Watcher has seen pending and not yet
// delivered, oldest first, at most one per key.
type queue struct {
	rs []Request
}

// reset replaces the contents with rs, which must be sorted oldest first.
func (q *queue) reset(rs []Request) { q.rs = rs }

// put adds r, or replaces the queued request with the same key.
func (q *queue) put(r Request) {
	q.remove(r.Key)
	i, _ := slices.BinarySearchFunc(q.rs, r, compareRequests)
	q.rs = slices.Insert(q.rs, i, r)
}

// remove drops the request with key, if queued.
func (q *queue) remove(key string) {
	q.rs = slices.DeleteFunc(q.rs, func(r Request) bool { return r.Key == key })
}

// head returns the oldest request; ok is false when the queue is empty.
func (q *queue) head() (r Request, ok bool) {
	if len(q.rs) == 0 {
		return Request{}, false
	}
	return q.rs[0], true
}

// pop drops the oldest request.
func (q *queue) pop() { q.rs = q.rs[1:] }

// len returns how many requests are queued.
func (q *queue) len() int { return len(q.rs) }
