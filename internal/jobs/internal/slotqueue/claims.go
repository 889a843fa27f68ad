package slotqueue

import "time"

// Bounds of the claim plan.
const (
	// MaxLead is how far ahead of its fire time a herd may be claimed.
	MaxLead = 30 * time.Second
	// InitialRate is the claim throughput, in slots per second, assumed before the first
	// measurement.
	InitialRate = 20000.0
	// minRateSample is the smallest batch whose duration updates the rate.
	minRateSample = 200
	// slack is how much slower than the measured rate claims are planned: a herd's claims may
	// meet a store busier than the batches the rate was measured on.
	slack = 2
)

// Claims holds the scheduled slots not yet claimed, by fire time, and counts them per second of
// fire time, so that Plan sees how large each second's herd is. Make one with NewClaims.
type Claims[T any] struct {
	heap  Heap[T]
	count map[int64]int
	rate  float64 // measured claim throughput, slots per second
}

// NewClaims returns an empty queue that assumes InitialRate until it has measured a batch.
func NewClaims[T any]() Claims[T] {
	return Claims[T]{count: map[int64]int{}, rate: InitialRate}
}

// Len returns the number of slots queued.
func (q *Claims[T]) Len() int { return q.heap.Len() }

// Push queues v, which fires at at; ord orders the slots firing at the same instant.
func (q *Claims[T]) Push(at time.Time, ord int, v T) {
	q.heap.Push(at, ord, v)
	q.count[at.Unix()]++
}

// Peek returns the earliest slot; the queue must not be empty.
func (q *Claims[T]) Peek() T { return q.heap.Peek() }

// Pop removes and returns the earliest slot; the queue must not be empty.
func (q *Claims[T]) Pop() T {
	it := q.heap.pop()
	s := unixSecond(it.key)
	if q.count[s]--; q.count[s] <= 0 {
		delete(q.count, s)
	}
	return it.v
}

// Reset empties the queue; the measured rate is kept.
func (q *Claims[T]) Reset() {
	q.heap.Reset()
	clear(q.count)
}

// Rate returns the measured claim throughput, in slots per second.
func (q *Claims[T]) Rate() float64 { return q.rate }

// claimTime is how long claiming n slots is planned to take: at the measured rate, with slack.
func (q *Claims[T]) claimTime(n int) time.Duration {
	return min(time.Duration(slack*float64(n)/q.rate*float64(time.Second)), MaxLead)
}

// Plan returns, for the queue as it is: by, the fire time before which slots are to be claimed
// at now, ahead being how long before its fire time a lone slot is claimed; and wake, the
// earliest time at which that moves past the first queued slot (zero when the queue is empty).
func (q *Claims[T]) Plan(now time.Time, ahead time.Duration) (by, wake time.Time) {
	by = now.Add(ahead + 1)
	if q.heap.Len() == 0 {
		return by, time.Time{}
	}
	key := q.heap.items[0].key
	wake = time.Unix(0, key).Add(-ahead)
	first := unixSecond(key)
	last := first + int64((ahead+MaxLead)/time.Second) + 1
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

// Measure updates the claim rate with a batch of n slots that took took to claim, on the
// caller's clock.
func (q *Claims[T]) Measure(n int, took time.Duration) {
	if n >= minRateSample && took > 0 {
		q.rate = 0.5*q.rate + 0.5*float64(n)/took.Seconds()
	}
}

// unixSecond is the Unix second of the instant key (Unix nanoseconds), as time.Time.Unix gives.
func unixSecond(key int64) int64 {
	s := key / int64(time.Second)
	if key%int64(time.Second) < 0 {
		s--
	}
	return s
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
