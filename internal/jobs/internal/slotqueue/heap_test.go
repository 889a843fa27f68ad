package slotqueue

import (
	"slices"
	"testing"
	"time"
)

// TestHeap_Order: values pop by fire time, and those due at the same instant by order, whatever
// the order they were pushed in.
func TestHeap_Order(t *testing.T) {
	at := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	type push struct {
		at  time.Duration // after at
		ord int
		v   string
	}
	for _, tc := range []struct {
		name   string
		pushes []push
		want   []string
	}{
		{"Empty", nil, nil},
		{"ByTime", []push{{2 * time.Second, 0, "c"}, {0, 0, "a"}, {time.Second, 0, "b"}}, []string{"a", "b", "c"}},
		{"HerdInTableOrder", []push{{0, 2, "c"}, {0, 0, "a"}, {0, 1, "b"}}, []string{"a", "b", "c"}},
		{"TimeBeforeOrder", []push{{time.Nanosecond, 0, "b"}, {0, 9, "a"}}, []string{"a", "b"}},
		{"Many", []push{{5, 0, "f"}, {3, 1, "e"}, {3, 0, "d"}, {1, 0, "b"}, {2, 0, "c"}, {0, 0, "a"}}, []string{"a", "b", "c", "d", "e", "f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Heap[string]
			for _, p := range tc.pushes {
				h.Push(at.Add(p.at), p.ord, p.v)
			}
			if got := slices.Sorted(h.All()); len(got) != len(tc.pushes) {
				t.Fatalf("All yields %v, want %d values", got, len(tc.pushes))
			}
			var got []string
			for h.Len() > 0 {
				peek := h.Peek()
				if v := h.Pop(); v != peek {
					t.Fatalf("popped %q after peeking %q", v, peek)
				}
				got = append(got, peek)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("popped %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHeap_Reset: a reset heap is empty and takes new values.
func TestHeap_Reset(t *testing.T) {
	at := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	var h Heap[int]
	h.Push(at, 0, 1)
	h.Reset()
	if h.Len() != 0 {
		t.Fatalf("len=%d after Reset, want 0", h.Len())
	}
	h.Push(at, 0, 2)
	if v := h.Pop(); v != 2 {
		t.Fatalf("popped %d, want 2", v)
	}
}
