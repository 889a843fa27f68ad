package election

import (
	"testing"
	"time"
)

func TestRenewals(t *testing.T) {
	t0 := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type renewal struct {
		sentMs int
		ttl    time.Duration
	}
	tests := []struct {
		name        string
		margin      time.Duration
		renewals    []renewal
		wantMs      int // deadline
		aliveAtMs   int
		expiredAtMs int
	}{
		{
			name:     "GrantOnly",
			margin:   time.Second,
			renewals: []renewal{{0, 5 * time.Second}},
			wantMs:   4000, aliveAtMs: 3999, expiredAtMs: 4000,
		},
		{
			name:     "CountsFromSendNotAnswer",
			margin:   time.Second,
			renewals: []renewal{{0, 5 * time.Second}, {1667, 5 * time.Second}},
			wantMs:   5667, aliveAtMs: 5666, expiredAtMs: 5667,
		},
		{
			name:   "LateAnswerToOlderRequestDoesNotShorten",
			margin: time.Second,
			renewals: []renewal{
				{0, 5 * time.Second}, {3334, 5 * time.Second}, {1667, 5 * time.Second},
			},
			wantMs: 7334, aliveAtMs: 7333, expiredAtMs: 7334,
		},
		{
			name:     "ServerRaisedTTL",
			margin:   500 * time.Millisecond,
			renewals: []renewal{{0, 2 * time.Second}},
			wantMs:   1500, aliveAtMs: 1499, expiredAtMs: 1500,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := renewals{margin: tt.margin}
			for _, rn := range tt.renewals {
				r.renewed(at(rn.sentMs), rn.ttl)
			}
			if !r.deadline.Equal(at(tt.wantMs)) {
				t.Fatalf("deadline = %v, want %v", r.deadline.Sub(t0), at(tt.wantMs).Sub(t0))
			}
			if r.expired(at(tt.aliveAtMs)) {
				t.Fatalf("expired at %dms, want alive", tt.aliveAtMs)
			}
			if !r.expired(at(tt.expiredAtMs)) {
				t.Fatalf("alive at %dms, want expired", tt.expiredAtMs)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		n      int
		ttl    time.Duration
		lo, hi time.Duration
	}{
		{1, 5 * time.Second, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 5 * time.Second, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 5 * time.Second, 400 * time.Millisecond, 800 * time.Millisecond},
		{20, 5 * time.Second, 2500 * time.Millisecond, 5 * time.Second},
		{20, 2 * time.Second, time.Second, 2 * time.Second},
		{1000, time.Second, 500 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		for range 50 {
			if got := backoff(tt.n, tt.ttl); got < tt.lo || got >= tt.hi {
				t.Fatalf("backoff(%d, %v) = %v, want in [%v, %v)", tt.n, tt.ttl, got, tt.lo, tt.hi)
			}
		}
	}
}

// TestRenewEvery_LongestLease: at the longest lease etcd grants the interval is still half the
// TTL, where doubling what is left of it wrapped negative and left only the floor of a tenth.
func TestRenewEvery_LongestLease(t *testing.T) {
	ttl := 9_000_000_000 * time.Second
	if got := renewEvery(ttl, defaultMargin(ttl), time.Millisecond); got != ttl/2 {
		t.Fatalf("renewEvery=%v, want %v", got, ttl/2)
	}
}
