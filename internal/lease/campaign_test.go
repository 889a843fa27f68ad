package lease

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n      int
		limit  time.Duration
		lo, hi time.Duration // want in [lo, hi)
	}{
		{n: 1, limit: 10 * time.Second, lo: 50 * time.Millisecond, hi: 100 * time.Millisecond},
		{n: 2, limit: 10 * time.Second, lo: 100 * time.Millisecond, hi: 200 * time.Millisecond},
		{n: 4, limit: 10 * time.Second, lo: 400 * time.Millisecond, hi: 800 * time.Millisecond},
		{n: 20, limit: 10 * time.Second, lo: 5 * time.Second, hi: 10 * time.Second},
		{n: 3, limit: 300 * time.Millisecond, lo: 150 * time.Millisecond, hi: 300 * time.Millisecond},
		{n: 1000, limit: time.Second, lo: 500 * time.Millisecond, hi: time.Second},
	} {
		for range 50 {
			if d := Backoff(tc.n, tc.limit); d < tc.lo || d >= tc.hi {
				t.Fatalf("Backoff(%d, %v)=%v, want in [%v, %v)", tc.n, tc.limit, d, tc.lo, tc.hi)
			}
		}
	}
}

func TestTermReason(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	lostCtx := func(r Reason) context.Context {
		ctx, lose := context.WithCancelCause(context.Background())
		lose(&LostError{Reason: r})
		return ctx
	}
	errLead := errors.New("lead")
	for _, tc := range []struct {
		name      string
		ctx, term context.Context
		leadErr   error
		want      Reason
	}{
		{"LostWinsOverCancel", done, lostCtx(ReasonRenewalDeadline), nil, ReasonRenewalDeadline},
		{"LostWinsOverLeadError", live, lostCtx(ReasonLeaseGone), errLead, ReasonLeaseGone},
		{"Cancelled", done, done, errLead, ReasonCancelled},
		{"LeadFailed", live, live, errLead, ReasonLeadFailed},
		{"LeadReturned", live, live, nil, ReasonLeadReturned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TermReason(tc.ctx, tc.term, tc.leadErr); got != tc.want {
				t.Fatalf("termReason=%s, want %s", got, tc.want)
			}
		})
	}
}

// TestReason_Expected: only a shutdown and lead returning end a term on purpose (logged at
// info); a failed lead and a lost lease are faults (logged at warn).
func TestReason_Expected(t *testing.T) {
	for r, want := range map[Reason]bool{ReasonCancelled: true, ReasonLeadReturned: true,
		ReasonLeadFailed: false, ReasonRenewalDeadline: false, ReasonLeaseGone: false} {
		if r.Expected() != want {
			t.Errorf("%s.Expected()=%v, want %v", r, !want, want)
		}
	}
}

func TestLostError_Error(t *testing.T) {
	if got, want := (&LostError{Reason: ReasonLeaseGone}).Error(), "lease: gave up: lease_gone"; got != want {
		t.Fatalf("Error()=%q, want %q", got, want)
	}
}

func TestCampaign(t *testing.T) {
	t.Run("FailuresAreLoudOncePerInterval", func(t *testing.T) {
		base := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
		clock := &fakeClock{t: base}
		// The clock each failed round reports at, after the round.
		at := []time.Duration{0, time.Second, 29 * time.Second, 30 * time.Second, 31 * time.Second}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var got []Failure
		n := 0
		Campaign(ctx, Rounds{Limit: 200 * time.Millisecond, Now: clock.Now, OnFailed: func(f Failure) { got = append(got, f) }},
			func(context.Context) (time.Duration, error) {
				if n == len(at) {
					cancel()
					return 0, nil
				}
				clock.set(base.Add(at[n]))
				n++
				return 0, errors.New("unreachable")
			})
		want := []Failure{
			{Attempt: 1, Loud: true},
			{Attempt: 2},
			{Attempt: 3},
			{Attempt: 4, Loud: true, Suppressed: 2},
			{Attempt: 5},
		}
		if len(got) != len(want) {
			t.Fatalf("%d failures reported, want %d", len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.Attempt != w.Attempt || g.Loud != w.Loud || g.Suppressed != w.Suppressed || g.Err == nil {
				t.Fatalf("failure %d = %+v, want %+v with an error", i, g, w)
			}
		}
	})

	t.Run("ShortTermsCountAsFailuresLongOnesReset", func(t *testing.T) {
		clock := &fakeClock{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// held per round; -1 means fail.
		held := []time.Duration{-1, 0, -1, time.Second, -1}
		var got []int
		n := 0
		Campaign(ctx, Rounds{Limit: time.Second, Now: clock.Now, OnFailed: func(f Failure) { got = append(got, f.Attempt) }},
			func(context.Context) (time.Duration, error) {
				if n == len(held) {
					cancel()
					return 0, nil
				}
				h := held[n]
				n++
				if h < 0 {
					return 0, errors.New("unreachable")
				}
				return h, nil
			})
		// The short term counts as the second failure in a row; the long
		// one starts the count again.
		if len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 1 {
			t.Fatalf("attempts %v, want [1 3 1]", got)
		}
	})

	t.Run("ReturnsOnceCancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			Campaign(ctx, Rounds{Limit: time.Hour, Now: time.Now}, func(context.Context) (time.Duration, error) {
				cancel()
				return 0, errors.New("unreachable")
			})
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Campaign did not return after cancel")
		}
	})
}

func TestAwait(t *testing.T) {
	t.Run("NoteEndsTheWait", func(t *testing.T) {
		notes := make(chan struct{}, 1)
		notes <- struct{}{}
		if !Await(context.Background(), time.Hour, notes) {
			t.Fatal("Await = false after a note, want true")
		}
	})
	t.Run("CancelEndsTheWait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if Await(ctx, time.Hour, make(chan struct{})) {
			t.Fatal("Await = true after cancel, want false")
		}
	})
	t.Run("TimeEndsTheWait", func(t *testing.T) {
		if !Await(context.Background(), time.Millisecond, make(chan struct{})) {
			t.Fatal("Await = false after its time, want true")
		}
	})
}

func TestListen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ended := make(chan struct{})
	notes, stop := Listen(ctx, func(ctx context.Context, notes chan<- struct{}) {
		defer close(ended)
		notes <- struct{}{}
		<-ctx.Done()
	})
	select {
	case <-notes:
	case <-ctx.Done():
		t.Fatal("no note from the listener")
	}
	stop()
	select {
	case <-ended:
	default:
		t.Fatal("stop returned before the listener did")
	}
}
