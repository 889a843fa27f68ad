package refusal

import (
	"testing"
	"time"
)

// TestNextRaise: a blocked job's fence is raised again at its next slot, within BlockedRetry,
// and never sooner than MinBlockedRetry.
func TestNextRaise(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		slot, want time.Time
	}{
		{"no slot", time.Time{}, now.Add(BlockedRetry)},
		{"slot soon", now.Add(5 * time.Second), now.Add(5 * time.Second)},
		{"slot after the retry", now.Add(time.Hour), now.Add(BlockedRetry)},
		{"slot now", now, now.Add(MinBlockedRetry)},
		{"slot passed", now.Add(-time.Minute), now.Add(MinBlockedRetry)},
	} {
		if got := NextRaise(now, tc.slot); !got.Equal(tc.want) {
			t.Errorf("%s: NextRaise=%s, want %s", tc.name, got, tc.want)
		}
	}
}
