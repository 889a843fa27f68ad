package attempts

import (
	"context"
	"errors"
	"testing"
)

// Causes of cancellation the runner passes, for the tests.
var (
	errShutdown  = errors.New("shutdown grace expired")
	errTermEnded = errors.New("leadership term ended")
)

func TestCancel(t *testing.T) {
	parent := context.Background()
	t.Run("during an attempt", func(t *testing.T) {
		var rc Cancel
		ctx, _, end := rc.begin(parent)
		defer end()
		rc.Do(ErrReplaced)
		<-ctx.Done()
		if got := context.Cause(ctx); !errors.Is(got, ErrReplaced) {
			t.Errorf("cause = %v, want %v", got, ErrReplaced)
		}
		if got := rc.Err(); !errors.Is(got, ErrReplaced) {
			t.Errorf("Err() = %v, want %v", got, ErrReplaced)
		}
	})
	t.Run("before the next attempt", func(t *testing.T) {
		var rc Cancel
		_, _, end := rc.begin(parent)
		end()
		rc.Do(errTermEnded)
		ctx, _, end := rc.begin(parent)
		defer end()
		if got := context.Cause(ctx); !errors.Is(got, errTermEnded) {
			t.Errorf("a context begun after the cancellation: cause = %v, want %v", got, errTermEnded)
		}
	})
	t.Run("first cause kept", func(t *testing.T) {
		var rc Cancel
		rc.Do(errShutdown)
		rc.Do(errTermEnded)
		if got := rc.Err(); !errors.Is(got, errShutdown) {
			t.Errorf("Err() = %v, want %v", got, errShutdown)
		}
	})
	t.Run("own cancel leaves the run alone", func(t *testing.T) {
		var rc Cancel
		ctx, cancel, end := rc.begin(parent)
		cancel(errTimeout)
		end()
		if got := context.Cause(ctx); !errors.Is(got, errTimeout) {
			t.Errorf("cause = %v, want %v", got, errTimeout)
		}
		if got := rc.Err(); got != nil {
			t.Errorf("Err() = %v after the attempt's own timeout, want nil", got)
		}
	})
}
