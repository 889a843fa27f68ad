package slotqueue

import (
	"testing"
	"time"
)

func TestClaims_Plan(t *testing.T) {
	herd := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		n         int
		rate      float64
		wantWake  time.Time
		claimedAt time.Time // a time at which the herd is claimed
		earlyAt   time.Time // a time at which it is not yet
	}{
		// Planned at half the rate (slack).
		{"OneSlot", 1, 20000, herd.Add(-time.Second - 100*time.Microsecond), herd.Add(-time.Second), herd.Add(-1100 * time.Millisecond)},
		{"Herd", 100000, 20000, herd.Add(-11 * time.Second), herd.Add(-11 * time.Second), herd.Add(-11100 * time.Millisecond)},
		{"HugeHerdIsBounded", 10000000, 20000, herd.Add(-time.Second - MaxLead), herd.Add(-time.Second - MaxLead), herd.Add(-time.Second - MaxLead - time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewClaims[int]()
			q.rate = tc.rate
			for i := range min(tc.n, 10) {
				q.Push(herd, i, i)
			}
			q.count[herd.Unix()] = tc.n
			if _, wake := q.Plan(herd.Add(-time.Hour), time.Second); !wake.Equal(tc.wantWake) {
				t.Fatalf("wake=%s, want %s", wake, tc.wantWake)
			}
			if by, _ := q.Plan(tc.claimedAt, time.Second); !herd.Before(by) {
				t.Fatalf("at %s: claim by %s, want the herd at %s included", tc.claimedAt, by, herd)
			}
			if by, _ := q.Plan(tc.earlyAt, time.Second); herd.Before(by) {
				t.Fatalf("at %s: claim by %s, want the herd at %s left for later", tc.earlyAt, by, herd)
			}
		})
	}
}

// TestClaims_PlanEmpty: an empty queue claims nothing past now plus ahead and never wakes.
func TestClaims_PlanEmpty(t *testing.T) {
	now := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	q := NewClaims[int]()
	by, wake := q.Plan(now, time.Second)
	if !by.Equal(now.Add(time.Second+1)) || !wake.IsZero() {
		t.Fatalf("by=%s wake=%s, want by %s and no wake", by, wake, now.Add(time.Second+1))
	}
}

// TestClaims_CountFollowsPushAndPop: a second's count of slots, which sizes its herd in the
// plan, goes with the slots pushed and popped, and Reset empties it but keeps the rate.
func TestClaims_CountFollowsPushAndPop(t *testing.T) {
	at := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	q := NewClaims[int]()
	q.Push(at, 0, 0)
	q.Push(at.Add(500*time.Millisecond), 1, 1)
	q.Push(at.Add(time.Second), 2, 2)
	if got := q.count[at.Unix()]; got != 2 {
		t.Fatalf("count of the first second=%d, want 2", got)
	}
	if v := q.Pop(); v != 0 {
		t.Fatalf("popped %d, want 0", v)
	}
	if got := q.count[at.Unix()]; got != 1 {
		t.Fatalf("count of the first second after a pop=%d, want 1", got)
	}
	q.Measure(minRateSample, time.Second)
	rate := q.Rate()
	q.Reset()
	if q.Len() != 0 || len(q.count) != 0 || q.Rate() != rate {
		t.Fatalf("after Reset: len=%d counts=%d rate=%v, want 0, 0, %v", q.Len(), len(q.count), q.Rate(), rate)
	}
}

// TestClaims_Measure: a batch updates the rate only if it is large enough to measure and took
// time; the rate is the mean of the old one and the batch's.
func TestClaims_Measure(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		took time.Duration
		want float64
	}{
		{"Measured", 1000, time.Second, 0.5*InitialRate + 0.5*1000},
		{"TooSmall", minRateSample - 1, time.Second, InitialRate},
		{"NoTime", 1000, 0, InitialRate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewClaims[int]()
			q.Measure(tc.n, tc.took)
			if got := q.Rate(); got != tc.want {
				t.Fatalf("rate=%v slots/s, want %v", got, tc.want)
			}
		})
	}
}
