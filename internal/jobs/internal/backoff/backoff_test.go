package backoff

import (
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name       string
		base, most time.Duration
		n          int
		want       time.Duration
	}{
		{"FirstFailureWaitsBase", time.Second, time.Minute, 1, time.Second},
		{"DoublesPerFailure", time.Second, time.Minute, 4, 8 * time.Second},
		{"Capped", time.Second, 5 * time.Second, 4, 5 * time.Second},
		{"BaseAboveCap", time.Minute, time.Second, 1, time.Second},
		{"ManyFailuresStayCapped", time.Millisecond, time.Second, 1000, time.Second},
		{"ZeroBase", 0, time.Second, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Wait(tc.base, tc.most, tc.n); got != tc.want {
				t.Fatalf("Wait(%s, %s, %d)=%s, want %s", tc.base, tc.most, tc.n, got, tc.want)
			}
		})
	}
}
