package testenv

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as testing.T's does, without failing the real test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// eventually runs Eventually on a goroutine of its own and returns its
// failure message, "" when it returned.
func eventually(t *testing.T, within, tick time.Duration, cond func() bool) string {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(r, within, tick, "the condition", cond)
	}()
	<-done
	return r.msg
}

func TestEventually(t *testing.T) {
	t.Parallel()

	t.Run("ReturnsOnceCondHolds", func(t *testing.T) {
		var calls atomic.Int32
		msg := eventually(t, 10*time.Second, time.Millisecond, func() bool { return calls.Add(1) == 3 })
		if msg != "" || calls.Load() != 3 {
			t.Fatalf("calls=%d failure=%q, want 3 calls and no failure", calls.Load(), msg)
		}
	})

	t.Run("FailsAfterWithin", func(t *testing.T) {
		const within = 100 * time.Millisecond
		start := time.Now()
		msg := eventually(t, within, 10*time.Millisecond, func() bool { return false })
		if took := time.Since(start); took < within {
			t.Fatalf("gave up after %v, want >= %v", took, within)
		}
		if want := "timed out after 100ms waiting for the condition"; msg != want {
			t.Fatalf("failure=%q, want %q", msg, want)
		}
	})

	t.Run("PollsEveryTick", func(t *testing.T) {
		var calls atomic.Int32
		_ = eventually(t, 300*time.Millisecond, 100*time.Millisecond, func() bool { calls.Add(1); return false })
		if n := calls.Load(); n < 2 || n > 5 {
			t.Fatalf("calls=%d in 300ms at a 100ms tick, want 2 to 5", n)
		}
	})
}
