package startup

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

var (
	errDown  = errors.New("connection refused")
	errFinal = errors.New("password authentication failed")
)

// fakeClock records the waits asked of it and ends each at once.
type fakeClock struct{ waits []time.Duration }

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

func server(c *fakeClock, lg *zap.Logger) Server {
	return Server{What: "the store", Key: "store.dsn", Passes: func(err error) bool { return errors.Is(err, errDown) },
		Min: time.Second, Max: 4 * time.Second, After: c.after, Logger: lg}
}

func TestWait_WaitsOutWhatPasses(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	clock := &fakeClock{}
	tries := 0
	v, err := Wait(context.Background(), server(clock, zap.New(core)), func(context.Context) (int, error) {
		if tries++; tries < 6 {
			return 0, errDown
		}
		return 42, nil
	})
	if err != nil || v != 42 || tries != 6 {
		t.Fatalf("Wait = %d, %v after %d tries; want 42, nil after 6", v, err, tries)
	}
	// Doubled from Min, capped at Max, each jittered up by at most a fifth.
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
	if len(clock.waits) != len(want) {
		t.Fatalf("waits %v, want %d of them", clock.waits, len(want))
	}
	for i, w := range want {
		if got := clock.waits[i]; got < w || got > w+w/5 {
			t.Errorf("wait %d = %v, want within [%v, %v]", i+1, got, w, w+w/5)
		}
	}
	if n := logs.FilterMessage("the store is unreachable; waiting for it before starting").FilterLevelExact(zap.ErrorLevel).Len(); n != 5 {
		t.Errorf("%d error lines for the failed attempts, want 5", n)
	}
	if logs.FilterMessage("the store answers; starting").Len() != 1 {
		t.Errorf("no line that the store answered: %v", logs.All())
	}
}

func TestWait_FailsAtOnceOnWhatDoesNotPass(t *testing.T) {
	clock := &fakeClock{}
	tries := 0
	_, err := Wait(context.Background(), server(clock, nil), func(context.Context) (int, error) {
		tries++
		return 0, errFinal
	})
	if !errors.Is(err, errFinal) || tries != 1 || len(clock.waits) != 0 {
		t.Fatalf("Wait = %v after %d tries and %d waits; want errFinal at once", err, tries, len(clock.waits))
	}
}

func TestWait_EndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	never := Server{What: "the store", Key: "store.dsn", Passes: func(error) bool { return true },
		After: func(time.Duration) <-chan time.Time { cancel(); return make(chan time.Time) }}
	_, err := Wait(ctx, never, func(context.Context) (int, error) { return 0, errDown })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}

// Each attempt ends within Attempt, as a context deadline that counts as passing when Passes
// says so: a server that never answers is tried again, not waited on for good.
func TestWait_BoundsEachAttempt(t *testing.T) {
	clock := &fakeClock{}
	s := server(clock, nil)
	s.Attempt = 10 * time.Millisecond
	s.Passes = func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
	tries := 0
	_, err := Wait(context.Background(), s, func(ctx context.Context) (int, error) {
		if tries++; tries < 3 {
			<-ctx.Done() // a server that never answers
			return 0, ctx.Err()
		}
		return 1, nil
	})
	if err != nil || tries != 3 {
		t.Fatalf("Wait = %v after %d tries; want nil after 3", err, tries)
	}
}
