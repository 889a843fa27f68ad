package jobs

import (
	"context"
	"errors"
	"testing"
)

func TestRunCancel(t *testing.T) {
	parent := context.Background()
	t.Run("during an attempt", func(t *testing.T) {
		var rc runCancel
		ctx, _, end := rc.begin(parent)
		defer end()
		rc.do(errReplaced)
		<-ctx.Done()
		if got := context.Cause(ctx); !errors.Is(got, errReplaced) {
			t.Errorf("cause = %v, want %v", got, errReplaced)
		}
		if got := rc.err(); !errors.Is(got, errReplaced) {
			t.Errorf("err() = %v, want %v", got, errReplaced)
		}
	})
	t.Run("before the next attempt", func(t *testing.T) {
		var rc runCancel
		_, _, end := rc.begin(parent)
		end()
		rc.do(errTermEnded)
		ctx, _, end := rc.begin(parent)
		defer end()
		if got := context.Cause(ctx); !errors.Is(got, errTermEnded) {
			t.Errorf("a context begun after the cancellation: cause = %v, want %v", got, errTermEnded)
		}
	})
	t.Run("first cause kept", func(t *testing.T) {
		var rc runCancel
		rc.do(errShutdown)
		rc.do(errTermEnded)
		if got := rc.err(); !errors.Is(got, errShutdown) {
			t.Errorf("err() = %v, want %v", got, errShutdown)
		}
	})
	t.Run("own cancel leaves the run alone", func(t *testing.T) {
		var rc runCancel
		ctx, cancel, end := rc.begin(parent)
		cancel(errRunTimeout)
		end()
		if got := context.Cause(ctx); !errors.Is(got, errRunTimeout) {
			t.Errorf("cause = %v, want %v", got, errRunTimeout)
		}
		if got := rc.err(); got != nil {
			t.Errorf("err() = %v after the attempt's own timeout, want nil", got)
		}
	})
}
