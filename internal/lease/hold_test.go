package lease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"scheduler"
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

var errTestGone = errors.New("test lease gone")

func TestRenewal_renew(t *testing.T) {
	base := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	newRenewal := func(clock *fakeClock, renew func(context.Context) error) Renewal {
		return Renewal{TTL: 3 * time.Second, Margin: time.Second, Now: clock.Now, Renew: renew, Gone: errTestGone}
	}
	run := func(t *testing.T, r Renewal) *LostError {
		t.Helper()
		var got error
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.renew(context.Background(), base, func(err error) { got = err })
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
		var sent []time.Time
		r := newRenewal(clock, func(context.Context) error {
			sent = append(sent, clock.Now())
			// The server is unreachable; time passes the deadline
			// (granted + TTL - margin) meanwhile.
			clock.set(base.Add(2 * time.Second))
			return errors.New("connection refused")
		})
		var failed, deadlineAttempt int
		var deadline time.Time
		r.OnFailed = func(attempt int, err error) { failed = attempt }
		r.OnDeadline = func(d time.Time, attempt int) { deadline, deadlineAttempt = d, attempt }
		le := run(t, r)
		if le.Reason != ReasonRenewalDeadline || !le.At.Equal(base.Add(2*time.Second)) {
			t.Fatalf("lost %s at %v, want %s at the deadline %v", le.Reason, le.At, ReasonRenewalDeadline, base.Add(2*time.Second))
		}
		if len(sent) != 1 {
			t.Fatalf("%d renewals, want 1", len(sent))
		}
		if failed != 1 || deadlineAttempt != 1 || !deadline.Equal(base.Add(2*time.Second)) {
			t.Fatalf("OnFailed attempt=%d, OnDeadline(%v, %d), want 1 and (%v, 1)", failed, deadline, deadlineAttempt, base.Add(2*time.Second))
		}
	})

	t.Run("RenewalMovesTheDeadline", func(t *testing.T) {
		clock := &fakeClock{t: base.Add(time.Second)}
		n := 0
		r := newRenewal(clock, func(context.Context) error {
			n++
			if n == 1 {
				// Answered: the deadline moves to sent + TTL - margin, so
				// the old deadline passing changes nothing.
				clock.set(base.Add(2500 * time.Millisecond))
				return nil
			}
			return errTestGone
		})
		var renewed []time.Time
		r.OnRenewed = func(sent time.Time, ttl time.Duration) {
			if ttl != 3*time.Second {
				t.Errorf("OnRenewed ttl=%v, want 3s", ttl)
			}
			renewed = append(renewed, sent)
		}
		gone := false
		r.OnGone = func() { gone = true }
		le := run(t, r)
		if le.Reason != ReasonLeaseGone || n != 2 || !gone {
			t.Fatalf("lost %s after %d renewals (OnGone %v), want %s after 2", le.Reason, n, gone, ReasonLeaseGone)
		}
		// The grant counts as the first renewal; the one refused does not.
		if len(renewed) != 2 || !renewed[0].Equal(base) || !renewed[1].Equal(base.Add(time.Second)) {
			t.Fatalf("OnRenewed at %v, want %v and %v", renewed, base, base.Add(time.Second))
		}
	})

	t.Run("GoneWrappedIsGone", func(t *testing.T) {
		clock := &fakeClock{t: base.Add(time.Second)}
		le := run(t, newRenewal(clock, func(context.Context) error {
			return errors.Join(errors.New("renew lease"), errTestGone)
		}))
		if le.Reason != ReasonLeaseGone {
			t.Fatalf("lost %s, want %s", le.Reason, ReasonLeaseGone)
		}
	})

	t.Run("RenewalThatIgnoresItsContextDoesNotHoldTheDeadlineBack", func(t *testing.T) {
		// The clock stands still before the deadline: only the attempt's
		// own timeout (deadline - sent) can end it. A client that does not
		// honour the context answers only when released.
		clock := &fakeClock{t: base.Add(2*time.Second - 50*time.Millisecond)}
		release := make(chan struct{})
		r := newRenewal(clock, func(ctx context.Context) error {
			<-ctx.Done()
			clock.set(base.Add(2 * time.Second))
			<-release
			return ctx.Err()
		})
		var got error
		done := make(chan struct{})
		lost := make(chan struct{})
		go func() {
			defer close(done)
			r.renew(context.Background(), base, func(err error) { got = err; close(lost) })
		}()
		select {
		case <-lost:
		case <-time.After(10 * time.Second):
			t.Fatal("no step-down while the renewal call hangs")
		}
		close(release)
		<-done
		var le *LostError
		if !errors.As(got, &le) || le.Reason != ReasonRenewalDeadline {
			t.Fatalf("lose(%v), want %s", got, ReasonRenewalDeadline)
		}
	})
}

func TestHold(t *testing.T) {
	base := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	term := scheduler.Term{Token: 7, Node: "a", Since: base}
	errLead := errors.New("lead failed")
	for _, tc := range []struct {
		name   string
		cancel bool // Run's context cancelled while leading
		lead   error
		renew  error
		want   Reason
	}{
		{name: "LeadReturned", want: ReasonLeadReturned},
		{name: "LeadFailed", lead: errLead, want: ReasonLeadFailed},
		{name: "Cancelled", cancel: true, want: ReasonCancelled},
		{name: "LeaseGone", renew: errTestGone, want: ReasonLeaseGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: base.Add(time.Second)} // a renewal is due at once
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r := Renewal{TTL: 3 * time.Second, Margin: time.Second, Now: clock.Now, Gone: errTestGone,
				Renew: func(context.Context) error { return tc.renew }}
			rctx, stop := context.WithCancel(ctx)
			defer stop()
			var causeSeen error
			reason, err := Hold(rctx, term, base, r, func(lctx context.Context, got scheduler.Term) error {
				if got != term {
					t.Errorf("lead got %+v, want %+v", got, term)
				}
				switch {
				case tc.cancel:
					stop()
					<-lctx.Done()
				case tc.renew != nil:
					<-lctx.Done()
					causeSeen = context.Cause(lctx)
				}
				return tc.lead
			})
			if reason != tc.want || !errors.Is(err, tc.lead) {
				t.Fatalf("Hold = %s, %v; want %s, %v", reason, err, tc.want, tc.lead)
			}
			var le *LostError
			if tc.renew != nil && (!errors.As(causeSeen, &le) || le.Reason != tc.want) {
				t.Fatalf("lead's context cause %v, want a *LostError %s", causeSeen, tc.want)
			}
		})
	}
}
