package pglease

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"scheduler/internal/lease/leasetest"
	"scheduler/internal/testenv"
)

func TestNew_RefusesBadConfig(t *testing.T) {
	good := Config{Schema: "s", Name: "n", Node: "a", TTL: 2 * time.Second}
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"NoSchema":     {func(c *Config) { c.Schema = "" }, "schema: empty"},
		"NoName":       {func(c *Config) { c.Name = "" }, "name: empty"},
		"NoNode":       {func(c *Config) { c.Node = "" }, "node: empty"},
		"ShortTTL":     {func(c *Config) { c.TTL = 500 * time.Millisecond }, "below 1s"},
		"WideMargin":   {func(c *Config) { c.Margin = 1500 * time.Millisecond }, "margin"},
		"NegativePoll": {func(c *Config) { c.Poll = -time.Second }, "poll"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			_, err := New(nil, cfg, zap.NewNop())
			if err == nil || !strings.Contains(err.Error(), "nil pool") {
				t.Fatalf("New(nil pool) = %v, want nil pool", err)
			}
			if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate = %v, want %q", err, tc.want)
			}
		})
	}
	if err := good.validate(); err != nil {
		t.Fatalf("validate(good) = %v", err)
	}
	if good.Margin != 500*time.Millisecond || good.Poll != good.TTL {
		t.Fatalf("defaults: margin=%v poll=%v, want 500ms and the TTL", good.Margin, good.Poll)
	}
}

func TestCampaigner_Run(t *testing.T) {
	t.Run("TokenRisesAcrossTermsAndAboveFences", func(t *testing.T) {
		dsn := mustStore(t)
		pool := mustPool(t, dsn)
		ctx := context.Background()
		if _, err := pool.Exec(ctx, `INSERT INTO sched.job_fence (job, token) VALUES ('a', 1000), ('b', 40)`); err != nil {
			t.Fatal(err)
		}
		var seq atomic.Int64
		r := leasetest.Run(t, newCampaigner(t, pool, "a", 2*time.Second), &seq, false)
		first := leasetest.Next(t, r.Won, 10*time.Second, "first term")
		if first.Term.Token <= 1000 {
			t.Fatalf("token=%d, want > 1000 (the highest fence)", first.Term.Token)
		}
		// A fence raised from outside, by an earlier coordinator say.
		if _, err := pool.Exec(ctx, `UPDATE sched.job_fence SET token = 5000 WHERE job = 'b'`); err != nil {
			t.Fatal(err)
		}
		prev := first.Term.Token
		for i := range 3 {
			e := leasetest.Next(t, r.Won, 10*time.Second, "next term")
			if e.Term.Token <= prev {
				t.Fatalf("term %d: token=%d, want > %d", i, e.Term.Token, prev)
			}
			prev = e.Term.Token
		}
		if prev <= 5000 {
			t.Fatalf("token=%d after the fence was raised to 5000, want above it", prev)
		}
	})

	t.Run("FollowerTakesOverAtOnceAfterResign", func(t *testing.T) {
		pool := mustPool(t, mustStore(t))
		var seq atomic.Int64
		const ttl = 10 * time.Second
		a := leasetest.Run(t, newCampaigner(t, pool, "a", ttl), &seq, true)
		first := leasetest.Next(t, a.Won, 10*time.Second, "a's term")
		b := leasetest.Run(t, newCampaigner(t, pool, "b", ttl), &seq, true)
		time.Sleep(200 * time.Millisecond) // b is waiting for the lease
		stopped := time.Now()
		a.Stop()
		// Far sooner than the TTL: the release is announced.
		won := leasetest.Next(t, b.Won, ttl/4, "b's term after a resigned")
		if won.Term.Token <= first.Term.Token {
			t.Fatalf("token=%d, want > %d", won.Term.Token, first.Term.Token)
		}
		t.Logf("handover after resign: %v", time.Since(stopped))
	})

	t.Run("FrozenLeaderStepsDownBeforeFollowerIsGranted", func(t *testing.T) {
		dsn := mustStore(t)
		proxied, proxy := viaProxy(t, dsn)
		var seq atomic.Int64
		const ttl = 2 * time.Second
		a := leasetest.Run(t, newCampaigner(t, mustPool(t, proxied), "a", ttl), &seq, true)
		first := leasetest.Next(t, a.Won, 10*time.Second, "a's term")
		b := leasetest.Run(t, newCampaigner(t, mustPool(t, dsn), "b", ttl), &seq, true)
		time.Sleep(300 * time.Millisecond)
		frozen := time.Now()
		proxy.Pause() // a's renewals stop reaching the database
		lost := leasetest.Next(t, a.Lost, 2*ttl, "a stepping down")
		var le *LostError
		if !errors.As(lost.Cause, &le) || le.Reason != ReasonRenewalDeadline {
			t.Fatalf("a's term ended with cause %v, want reason %s", lost.Cause, ReasonRenewalDeadline)
		}
		won := leasetest.Next(t, b.Won, 2*ttl, "b's term after a froze")
		took := time.Since(frozen)
		if lost.Seq >= won.Seq {
			t.Fatalf("a stepped down (leasetest.Event %d) after b was granted (leasetest.Event %d)", lost.Seq, won.Seq)
		}
		if won.Term.Token <= first.Term.Token {
			t.Fatalf("token=%d, want > %d", won.Term.Token, first.Term.Token)
		}
		if took > ttl+time.Second {
			t.Fatalf("takeover after %v, want about the TTL %v", took, ttl)
		}
		t.Logf("takeover after freeze: %v", took)
		proxy.Resume()
		b.Stop()
		a.Stop()
	})

	t.Run("LeaseTakenFromUnderEndsTerm", func(t *testing.T) {
		pool := mustPool(t, mustStore(t))
		var seq atomic.Int64
		c := newCampaigner(t, pool, "a", 3*time.Second)
		elected, ended := make(chan Term, 16), make(chan Reason, 16)
		c.cfg.Events = Events{
			OnElected: func(t Term) { elected <- t },
			OnLost:    func(_ Term, r Reason) { ended <- r },
		}
		a := leasetest.Run(t, c, &seq, true)
		leasetest.Next(t, a.Won, 10*time.Second, "a's term")
		if _, err := pool.Exec(context.Background(), `UPDATE sched.leader_lease SET holder = 'someone else'`); err != nil {
			t.Fatal(err)
		}
		lost := leasetest.Next(t, a.Lost, 5*time.Second, "a's term ending")
		var le *LostError
		if !errors.As(lost.Cause, &le) || le.Reason != ReasonLeaseGone {
			t.Fatalf("cause %v, want reason %s", lost.Cause, ReasonLeaseGone)
		}
		if got := <-elected; got.Token != lost.Term.Token {
			t.Fatalf("OnElected token=%d, want %d", got.Token, lost.Term.Token)
		}
		if got := <-ended; got != ReasonLeaseGone {
			t.Fatalf("OnLost reason=%s, want %s", got, ReasonLeaseGone)
		}
	})

	t.Run("UnmigratedSchemaKeepsRetrying", func(t *testing.T) {
		pool := mustPool(t, testenv.MustDatabase(t))
		var seq atomic.Int64
		c := newCampaigner(t, pool, "a", time.Second)
		r := leasetest.Run(t, c, &seq, true)
		time.Sleep(500 * time.Millisecond)
		if _, ok := c.Leading(); ok {
			t.Fatal("leading without a lease table")
		}
		select {
		case e := <-r.Won:
			t.Fatalf("won term %d without a lease table", e.Term.Token)
		default:
		}
		r.Stop()
	})
}

func TestCampaigner_Confirm(t *testing.T) {
	pool := mustPool(t, mustStore(t))
	ctx := context.Background()
	var seq atomic.Int64
	c := newCampaigner(t, pool, "a", 3*time.Second)
	if err := c.Confirm(ctx, 1); !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("Confirm without a term = %v, want ErrNotConfirmed", err)
	}
	r := leasetest.Run(t, c, &seq, true)
	term := leasetest.Next(t, r.Won, 10*time.Second, "a's term").Term
	if err := c.Confirm(ctx, term.Token); err != nil {
		t.Fatalf("Confirm(%d) = %v, want nil", term.Token, err)
	}
	if err := c.Confirm(ctx, term.Token-1); !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("Confirm(other token) = %v, want ErrNotConfirmed", err)
	}
	// The row taken over behind the campaigner's back: the database says no
	// before the next renewal notices.
	if _, err := pool.Exec(ctx, `UPDATE sched.leader_lease SET holder = 'x', token = token + 1`); err != nil {
		t.Fatal(err)
	}
	if err := c.Confirm(ctx, term.Token); !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("Confirm after takeover = %v, want ErrNotConfirmed", err)
	}
}

// TestLease_JobRoleCannotTouchIt: a job's database role, granted what the
// store's documentation grants it, can neither take nor extend the lease.
func TestLease_JobRoleCannotTouchIt(t *testing.T) {
	dsn := mustStore(t)
	pool := mustPool(t, dsn)
	ctx := context.Background()
	role := fmt.Sprintf("job_%d", time.Now().UnixNano())
	for _, q := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`GRANT USAGE ON SCHEMA sched TO ` + role,
		`GRANT EXECUTE ON FUNCTION sched.fence_verify(text, bigint) TO ` + role,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP OWNED BY `+role)
		_, _ = pool.Exec(context.Background(), `DROP ROLE `+role)
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	jobPool := mustPool(t, u.String())
	var seq atomic.Int64
	r := leasetest.Run(t, newCampaigner(t, pool, "a", 5*time.Second), &seq, true)
	leasetest.Next(t, r.Won, 10*time.Second, "a's term")
	for _, q := range []string{
		`UPDATE sched.leader_lease SET holder = 'job', expires_at = 'infinity'`,
		`SELECT holder FROM sched.leader_lease`,
		`DELETE FROM sched.leader_lease`,
	} {
		_, err := jobPool.Exec(ctx, q)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Fatalf("as the job role: %s: %v, want permission denied (42501)", q, err)
		}
	}
}
