package slotqueue

import (
	"iter"
	"time"
)

// Heap orders values by fire time, then by order, so the loop arms one timer for the earliest
// and each fire costs O(log n) whatever the table size. Its items carry their sort key inline,
// so that sifting compares neighbouring items in one slice instead of following a pointer each
// time. The zero Heap is empty and ready to use.
type Heap[T any] struct {
	items []item[T]
}

type item[T any] struct {
	key int64 // the fire time in Unix nanoseconds
	ord int   // the job's place in the table: a herd fires in table order
	v   T
}

func (a item[T]) less(b item[T]) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.ord < b.ord
}

// Len returns the number of values in the heap.
func (h *Heap[T]) Len() int { return len(h.items) }

// Push adds v, to fire at at; of values firing at the same instant, the lower ord comes first.
func (h *Heap[T]) Push(at time.Time, ord int, v T) {
	h.items = append(h.items, item[T]{key: at.UnixNano(), ord: ord, v: v})
	q := h.items
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].less(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

// Peek returns the earliest value; the heap must not be empty.
func (h *Heap[T]) Peek() T { return h.items[0].v }

// Pop removes and returns the earliest value; the heap must not be empty.
func (h *Heap[T]) Pop() T { return h.pop().v }

func (h *Heap[T]) pop() item[T] {
	q := h.items
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q[n] = item[T]{}
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
	h.items = q
	return top
}

// Reset empties the heap, keeping its capacity.
func (h *Heap[T]) Reset() {
	clear(h.items)
	h.items = h.items[:0]
}

// All yields the values in the heap, in no particular order.
func (h *Heap[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, it := range h.items {
			if !yield(it.v) {
				return
			}
		}
	}
}
