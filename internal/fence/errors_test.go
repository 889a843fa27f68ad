package fence

import (
	"errors"
	"fmt"
	"testing"

	"scheduler"
	"scheduler/internal/fence/internal/verdict"
)

// TestErrors_MatchTheScheduler: the store's refusals are the scheduler's words for them too, so
// that the runner tells them apart without this package; their messages are the store's own.
func TestErrors_MatchTheScheduler(t *testing.T) {
	for _, tc := range []struct {
		err     error
		also    error
		message string
	}{
		{ErrStale, scheduler.ErrFenced, "fence: stale token"},
		{ErrTokenRegressed, scheduler.ErrFenced, "fence: token regressed"},
		{ErrRaiseTimeout, scheduler.ErrFenceHeld, "fence: raise timed out waiting for older writers"},
		{ErrNotRunning, scheduler.ErrNotRunning, "fence: run is not running"},
	} {
		wrapped := fmt.Errorf("complete: %w", tc.err)
		if !errors.Is(wrapped, tc.err) || !errors.Is(wrapped, tc.also) {
			t.Errorf("%v: errors.Is itself %v, %v %v; want both", tc.err, errors.Is(wrapped, tc.err), tc.also, errors.Is(wrapped, tc.also))
		}
		if tc.err.Error() != tc.message {
			t.Errorf("message = %q, want %q", tc.err, tc.message)
		}
	}
	for _, err := range []error{ErrSlotTaken, ErrNotOrphaned, ErrSchemaBehind, ErrRaiseTimeout, ErrNotRunning} {
		if errors.Is(err, scheduler.ErrFenced) {
			t.Errorf("%v is scheduler.ErrFenced: only a refused token is", err)
		}
	}
	stale := verdict.Stale("a", 5, 9)
	var fe *scheduler.FenceError
	if !errors.Is(stale, ErrStale) || !errors.As(stale, &fe) || fe.Job != "a" || fe.Token != 5 || fe.Fence != 9 {
		t.Errorf("stale error %v: want ErrStale and a *scheduler.FenceError naming a, 5, 9", stale)
	}
	if errors.Is(stale, ErrTokenRegressed) {
		t.Errorf("stale error %v is ErrTokenRegressed", stale)
	}
	reg := regressionError("b", 5, 9, "reset it")
	if !errors.Is(reg, ErrTokenRegressed) || errors.Is(reg, ErrStale) || !errors.Is(reg, scheduler.ErrFenced) {
		t.Errorf("regression error %v: want ErrTokenRegressed and ErrFenced, not ErrStale", reg)
	}
}
