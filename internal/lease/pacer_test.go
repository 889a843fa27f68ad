package lease

import (
	"testing"
	"time"
)

// TestPacer: a flood of notifications marks the waiters once at once and once at the end of
// the gap, not once each; a notification after a quiet gap passes at once.
func TestPacer(t *testing.T) {
	notes := make(chan struct{}, 1)
	now := time.Unix(1000, 0)
	var timers []func()
	var waits []time.Duration
	p := &Pacer{notes: notes, gap: 50 * time.Millisecond, now: func() time.Time { return now },
		after: func(d time.Duration, f func()) { waits, timers = append(waits, d), append(timers, f) }}
	got := 0
	drain := func() {
		select {
		case <-notes:
			got++
		default:
		}
	}
	for i := range 1000 { // a flood within 10 ms
		now = now.Add(10 * time.Microsecond)
		p.Mark()
		drain()
		if i == 0 && got != 1 {
			t.Fatal("the first notification after a quiet time did not pass at once")
		}
	}
	if got != 1 || len(timers) != 1 || waits[0] <= 0 || waits[0] > 50*time.Millisecond {
		t.Fatalf("%d marks passed, %d folded (waits %v); want 1 at once and 1 folded within the gap", got, len(timers), waits)
	}
	now = now.Add(waits[0])
	timers[0]()
	drain()
	if got != 2 {
		t.Fatalf("%d marks after the gap, want 2", got)
	}
	now = now.Add(time.Second) // quiet
	p.Mark()
	drain()
	if got != 3 || len(timers) != 1 {
		t.Fatalf("%d marks, %d timers after a quiet second; want the mark at once", got, len(timers))
	}
}
