package zkelection

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func TestCampaigner_renew(t *testing.T) {
	base := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	newRenewing := func(clock *fakeClock) *Campaigner {
		return &Campaigner{cfg: Config{SessionTimeout: 3 * time.Second, Margin: time.Second, Now: clock.Now}}
	}
	run := func(t *testing.T, c *Campaigner, renew func(context.Context) error) *LostError {
		t.Helper()
		var got error
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.renew(context.Background(), base, renew, func(err error) { got = err }, zaptest.NewLogger(t))
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("renew did not return")
		}
		var le *LostError
		if !errors.As(got, &le) {
			t.Fatalf("lose(%v), want a *LostError", got)
		}
		return le
	}

	t.Run("StepsDownAtItsOwnDeadlineWhenRenewalsFail", func(t *testing.T) {
		clock := &fakeClock{t: base.Add(time.Second)} // the first renewal is due
		c := newRenewing(clock)
		var sent []time.Time
		le := run(t, c, func(context.Context) error {
			sent = append(sent, clock.Now())
			// The server is unreachable; time passes the deadline
			// (granted + TTL - margin) meanwhile.
			clock.set(base.Add(2 * time.Second))
			return errors.New("connection refused")
		})
		if le.Reason != ReasonRenewalDeadline || !le.At.Equal(base.Add(2*time.Second)) {
			t.Fatalf("lost %s at %v, want %s at the deadline %v", le.Reason, le.At, ReasonRenewalDeadline, base.Add(2*time.Second))
		}
		if len(sent) != 1 {
			t.Fatalf("%d renewals, want 1", len(sent))
		}
	})

	t.Run("RenewalMovesTheDeadline", func(t *testing.T) {
		clock := &fakeClock{t: base.Add(time.Second)}
		c := newRenewing(clock)
		var renewed []time.Time
		c.cfg.Events.OnRenewed = func(sent time.Time, ttl time.Duration) {
			if ttl != 3*time.Second {
				t.Errorf("OnRenewed ttl=%v, want 3s", ttl)
			}
			renewed = append(renewed, sent)
		}
		n := 0
		le := run(t, c, func(context.Context) error {
			n++
			if n == 1 {
				// Answered: the deadline moves to sent + TTL - margin, so
				// the old deadline passing changes nothing.
				clock.set(base.Add(2500 * time.Millisecond))
				return nil
			}
			return errGone
		})
		if le.Reason != ReasonLeaseGone || n != 2 {
			t.Fatalf("lost %s after %d renewals, want %s after 2", le.Reason, n, ReasonLeaseGone)
		}
		// The grant counts as the first renewal; the one refused does not.
		if len(renewed) != 2 || !renewed[0].Equal(base) || !renewed[1].Equal(base.Add(time.Second)) {
			t.Fatalf("OnRenewed at %v, want %v and %v", renewed, base, base.Add(time.Second))
		}
	})
}
