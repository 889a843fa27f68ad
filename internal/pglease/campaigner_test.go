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

	t.Run("FollowerTakesOverAtOnceAfterResign", func(t *testing.T) { leasetest.Resign(t, contract) })
	t.Run("FrozenLeaderStepsDownBeforeFollowerIsGranted", func(t *testing.T) { leasetest.Freeze(t, contract) })
	t.Run("LeaseTakenFromUnderEndsTerm", func(t *testing.T) { leasetest.Taken(t, contract) })

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

// TestCampaigner_Confirm: the database says no once the row is taken over
// behind the campaigner's back, before the next renewal notices.
func TestCampaigner_Confirm(t *testing.T) { leasetest.Confirm(t, contract) }

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

// TestCampaigner_LongestTTL: the longest TTL election.ttl allows wins a term on a real store:
// the lease counts it in milliseconds, which hold it, and the step-down margin's arithmetic
// must too.
func TestCampaigner_LongestTTL(t *testing.T) {
	pool := mustPool(t, mustStore(t))
	ttl := time.Duration(1<<63 - 1).Truncate(time.Second)
	var seq atomic.Int64
	r := leasetest.Run(t, newCampaigner(t, pool, "a", ttl), &seq, true)
	leasetest.Next(t, r.Won, 10*time.Second, "term")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := ReadLeader(ctx, pool, testSchema, "scheduler")
	if err != nil {
		t.Fatalf("ReadLeader: %v", err)
	}
	if l.Remaining < ttl/2 {
		t.Fatalf("remaining=%v, want about %v", l.Remaining, ttl)
	}
}
