package leasetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/lease"
	"scheduler/internal/testenv"
)

// Contender is a backend's campaigner as the contract tests drive it.
type Contender interface {
	Campaigner
	// Confirm asks the server whether the term with token is still the
	// campaigner's; nil means confirmed.
	Confirm(ctx context.Context, token int64) error
}

// Server is one backend's server, fresh for one test, with what the
// contract tests do to it. Every connection it opens is closed when the
// test ends.
type Server interface {
	// Campaigner returns a campaigner for node whose lease lasts ttl, with
	// ev as its hooks.
	Campaigner(t *testing.T, node string, ttl time.Duration, ev lease.Events) Contender
	// Proxied is Campaigner for a campaigner that reaches the server
	// through proxy, which the test pauses.
	Proxied(t *testing.T, node string, ttl time.Duration) (c Contender, proxy *testenv.Proxy)
	// Contending waits until n campaigners are leading or waiting for the
	// lease, so that a follower is ready when the leader goes.
	Contending(t *testing.T, n int)
	// Take ends the current term's hold behind its campaigner's back, as
	// an operator or a rival could.
	Take(t *testing.T)
	// Supplant puts another term's hold in the current term's place.
	Supplant(t *testing.T)
	// ReadLeader reads the holder once, from the server.
	ReadLeader(t *testing.T) error
	// Observer returns an observer of the election, not yet running.
	Observer(t *testing.T) Observer
}

// Observer is a backend's observer, with its view as a term: the node and
// token of the term it sees, if any.
type Observer struct {
	// Run keeps the view current until ctx is cancelled.
	Run func(ctx context.Context) error
	// Current returns the view.
	Current func() (scheduler.Term, bool)
}

// View returns o as an Observer, whose view term reads from o's.
func View[L any](o interface {
	Run(ctx context.Context) error
	Current() (L, bool)
}, term func(L) scheduler.Term) Observer {
	return Observer{Run: o.Run, Current: func() (scheduler.Term, bool) {
		l, ok := o.Current()
		return term(l), ok
	}}
}

// Contract is a lease-style backend under the tests every such backend
// passes, with the figures in which its server answers.
type Contract struct {
	// Start starts a fresh server for one test.
	Start func(t *testing.T) Server
	// MaxTTL caps the TTLs the tests ask for, for a server that grants no
	// longer leases; zero means no cap.
	MaxTTL time.Duration
	// Elected bounds how long a campaigner alone on the server takes to
	// start its term. Zero means ten seconds.
	Elected time.Duration
	// Handover bounds how long a waiting follower takes to lead after the
	// leader resigned: well below the TTL, since a release is announced or
	// immediate. Zero means a quarter of the TTL.
	Handover time.Duration
	// Gone is the reason a term ends for when Take took its hold. Empty
	// means lease.ReasonLeaseGone.
	Gone lease.Reason
	// Frozen are the reasons, besides lease.ReasonRenewalDeadline, a
	// leader cut off from the server may step down for.
	Frozen []lease.Reason
	// NotConfirmed is the backend's error for a term Confirm refuses.
	NotConfirmed error
	// NoLeader is the backend's error for an election nobody leads.
	NoLeader error
}

// ttl returns asked within c.MaxTTL.
func (c Contract) ttl(asked time.Duration) time.Duration {
	if c.MaxTTL > 0 {
		return min(asked, c.MaxTTL)
	}
	return asked
}

// withDefaults returns c with its zero figures filled in, for terms of ttl.
func (c Contract) withDefaults(ttl time.Duration) Contract {
	if c.Elected == 0 {
		c.Elected = 10 * time.Second
	}
	if c.Handover == 0 {
		c.Handover = ttl / 4
	}
	if c.Gone == "" {
		c.Gone = lease.ReasonLeaseGone
	}
	return c
}

// Resign: a follower leads at once when the leader resigns, with a higher
// token, without waiting for the lease to expire.
func Resign(t *testing.T, c Contract) {
	s := c.Start(t)
	ttl := c.ttl(10 * time.Second)
	c = c.withDefaults(ttl)
	var seq atomic.Int64
	a := Run(t, s.Campaigner(t, "a", ttl, lease.Events{}), &seq, true)
	first := Next(t, a.Won, c.Elected, "a's term")
	b := Run(t, s.Campaigner(t, "b", ttl, lease.Events{}), &seq, true)
	s.Contending(t, 2)
	stopped := time.Now()
	a.Stop()
	won := Next(t, b.Won, c.Handover, "b's term after a resigned")
	if won.Term.Token <= first.Term.Token {
		t.Fatalf("token=%d, want > %d", won.Term.Token, first.Term.Token)
	}
	t.Logf("handover after resign: %v", time.Since(stopped))
}

// Freeze: a leader cut off from the server steps down before the follower
// is granted the lease, and the follower takes over after about the TTL.
func Freeze(t *testing.T, c Contract) {
	s := c.Start(t)
	ttl := c.ttl(2 * time.Second)
	c = c.withDefaults(ttl)
	var seq atomic.Int64
	ca, proxy := s.Proxied(t, "a", ttl)
	a := Run(t, ca, &seq, true)
	first := Next(t, a.Won, c.Elected, "a's term")
	b := Run(t, s.Campaigner(t, "b", ttl, lease.Events{}), &seq, true)
	s.Contending(t, 2)
	frozen := time.Now()
	proxy.Pause() // a's renewals stop reaching the server
	lost := Next(t, a.Lost, 2*ttl, "a stepping down")
	reasons := append([]lease.Reason{lease.ReasonRenewalDeadline}, c.Frozen...)
	var le *lease.LostError
	if !errors.As(lost.Cause, &le) || !slices.Contains(reasons, le.Reason) {
		t.Fatalf("a's term ended with cause %v, want a reason in %v", lost.Cause, reasons)
	}
	won := Next(t, b.Won, 3*ttl, "b's term after a froze")
	took := time.Since(frozen)
	if lost.Seq >= won.Seq {
		t.Fatalf("a stepped down (event %d) after b was granted (event %d)", lost.Seq, won.Seq)
	}
	if won.Term.Token <= first.Term.Token {
		t.Fatalf("token=%d, want > %d", won.Term.Token, first.Term.Token)
	}
	// A server may expire leases on tick boundaries: allow one second.
	if took > ttl+time.Second {
		t.Fatalf("takeover after %v, want about the TTL %v", took, ttl)
	}
	t.Logf("a stepped down for %s; takeover after freeze: %v", le.Reason, took)
	proxy.Resume()
	b.Stop()
	a.Stop()
}

// Taken: a hold taken from under the leader ends its term, with c.Gone as
// the reason in the term's cause and in the hooks.
func Taken(t *testing.T, c Contract) {
	s := c.Start(t)
	elected, ended := make(chan scheduler.Term, 16), make(chan lease.Reason, 16)
	ev := lease.Events{
		OnElected: func(t scheduler.Term) { elected <- t },
		OnLost:    func(_ scheduler.Term, r lease.Reason) { ended <- r },
	}
	ttl := c.ttl(3 * time.Second)
	c = c.withDefaults(ttl)
	var seq atomic.Int64
	a := Run(t, s.Campaigner(t, "a", ttl, ev), &seq, true)
	Next(t, a.Won, c.Elected, "a's term")
	s.Take(t)
	lost := Next(t, a.Lost, 5*time.Second, "a's term ending")
	var le *lease.LostError
	if !errors.As(lost.Cause, &le) || le.Reason != c.Gone {
		t.Fatalf("cause %v, want reason %s", lost.Cause, c.Gone)
	}
	if got := <-elected; got.Token != lost.Term.Token {
		t.Fatalf("OnElected token=%d, want %d", got.Token, lost.Term.Token)
	}
	if got := <-ended; got != c.Gone {
		t.Fatalf("OnLost reason=%s, want %s", got, c.Gone)
	}
}

// Confirm: Confirm says yes for the term held only, and no once another
// term holds the lease, before a renewal notices.
func Confirm(t *testing.T, c Contract) {
	s := c.Start(t)
	ttl := c.ttl(3 * time.Second)
	c = c.withDefaults(ttl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var seq atomic.Int64
	cc := s.Campaigner(t, "a", ttl, lease.Events{})
	if err := cc.Confirm(ctx, 1); !errors.Is(err, c.NotConfirmed) {
		t.Fatalf("Confirm without a term = %v, want %v", err, c.NotConfirmed)
	}
	r := Run(t, cc, &seq, true)
	term := Next(t, r.Won, c.Elected, "a's term").Term
	if err := cc.Confirm(ctx, term.Token); err != nil {
		t.Fatalf("Confirm(%d) = %v, want nil", term.Token, err)
	}
	for _, other := range []int64{term.Token - 1, term.Token + 1} {
		if err := cc.Confirm(ctx, other); !errors.Is(err, c.NotConfirmed) {
			t.Fatalf("Confirm(%d) while %d leads = %v, want %v", other, term.Token, err, c.NotConfirmed)
		}
	}
	s.Supplant(t)
	if err := cc.Confirm(ctx, term.Token); !errors.Is(err, c.NotConfirmed) {
		t.Fatalf("Confirm after takeover = %v, want %v", err, c.NotConfirmed)
	}
}

// Observe: an observer shows each leader in turn, and no leader once the
// last one resigned.
func Observe(t *testing.T, c Contract) {
	s := c.Start(t)
	o := s.Observer(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := s.ReadLeader(t); !errors.Is(err, c.NoLeader) {
		t.Fatalf("ReadLeader before any term = %v, want %v", err, c.NoLeader)
	}
	shows := func(node string, token int64) func() bool {
		return func() bool {
			l, ok := o.Current()
			return ok && l.Node == node && l.Token == token
		}
	}
	ttl := c.ttl(5 * time.Second)
	c = c.withDefaults(ttl)
	var seq atomic.Int64
	a := Run(t, s.Campaigner(t, "a", ttl, lease.Events{}), &seq, true)
	ta := Next(t, a.Won, c.Elected, "a's term").Term
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, "observer shows a", shows("a", ta.Token))
	b := Run(t, s.Campaigner(t, "b", ttl, lease.Events{}), &seq, true)
	s.Contending(t, 2)
	a.Stop()
	tb := Next(t, b.Won, 5*time.Second, "b's term").Term
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, "observer shows b", shows("b", tb.Token))
	b.Stop()
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, "observer shows no leader", func() bool {
		_, ok := o.Current()
		return !ok
	})
}
