package redislock

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"scheduler/internal/lease"
	"scheduler/internal/lease/leasetest"
	"scheduler/internal/testenv"
)

func TestNew_RefusesBadConfig(t *testing.T) {
	good := Config{Key: "k", Node: "a", TTL: 2 * time.Second}
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"NoKey":        {func(c *Config) { c.Key = "" }, "key: empty"},
		"NoNode":       {func(c *Config) { c.Node = "" }, "node: empty"},
		"ShortTTL":     {func(c *Config) { c.TTL = 500 * time.Millisecond }, "below 1s"},
		"WideMargin":   {func(c *Config) { c.Margin = 1500 * time.Millisecond }, "margin"},
		"NegativePoll": {func(c *Config) { c.Poll = -time.Second }, "poll"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := New(nil, good, zap.NewNop()); err == nil {
		t.Fatal("New(nil client) = nil error")
	}
	if err := good.validate(); err != nil {
		t.Fatalf("validate(good) = %v", err)
	}
	if good.Margin != 500*time.Millisecond || good.Poll != good.TTL || good.Floor == nil {
		t.Fatalf("defaults: margin=%v poll=%v floor set=%v", good.Margin, good.Poll, good.Floor != nil)
	}
}

func TestCampaigner_Run(t *testing.T) {
	t.Run("TokenNeverFallsBelowFloorAfterFlushOrRestart", func(t *testing.T) {
		srv := testenv.MustRedis(t)
		cli := mustClient(t, srv.Addr())
		// floor stands for the store's highest fence: the leader raises it
		// to its token when it takes over, as the runner does.
		var floor atomic.Int64
		c := newCampaigner(t, cli, "a", 2*time.Second, func(context.Context) (int64, error) { return floor.Load(), nil })
		var seq atomic.Int64
		r := leasetest.Run(t, c, &seq, false)
		prev := int64(0)
		step := func(what string) {
			t.Helper()
			e := leasetest.Next(t, r.Won, 15*time.Second, what)
			if e.Term.Token <= prev || e.Term.Token <= floor.Load() {
				t.Fatalf("%s: token=%d, want > %d and > floor %d", what, e.Term.Token, prev, floor.Load())
			}
			prev = e.Term.Token
			floor.Store(prev)
		}
		step("first term")
		step("second term")
		if err := cli.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		step("term after FLUSHALL")
		srv.Restart(t)
		step("term after a restart without persistence")
		floor.Store(prev + 1000) // a fence raised from elsewhere
		step("term after the floor rose")
	})

	t.Run("FlushOrRestartInTheMiddleOfATermEndsIt", func(t *testing.T) {
		srv := testenv.MustRedis(t)
		cli := mustClient(t, srv.Addr())
		var floor atomic.Int64
		c := newCampaigner(t, cli, "a", 2*time.Second, func(context.Context) (int64, error) { return floor.Load(), nil })
		var seq atomic.Int64
		r := leasetest.Run(t, c, &seq, true)
		for _, lose := range []struct {
			what string
			do   func()
		}{
			{"FLUSHALL", func() {
				if err := cli.FlushAll(context.Background()).Err(); err != nil {
					t.Fatal(err)
				}
			}},
			{"a restart without persistence", func() { srv.Restart(t) }},
		} {
			won := leasetest.Next(t, r.Won, 15*time.Second, "term before "+lose.what)
			if won.Term.Token <= floor.Load() {
				t.Fatalf("token=%d, want > floor %d", won.Term.Token, floor.Load())
			}
			floor.Store(won.Term.Token) // the leader raised the fence
			lose.do()
			lost := leasetest.Next(t, r.Lost, 10*time.Second, "the term ending after "+lose.what)
			var le *lease.LostError
			if !errors.As(lost.Cause, &le) || (le.Reason != lease.ReasonLeaseGone && le.Reason != lease.ReasonRenewalDeadline) {
				t.Fatalf("after %s: cause %v, want reason %s or %s", lose.what, lost.Cause, lease.ReasonLeaseGone, lease.ReasonRenewalDeadline)
			}
		}
		won := leasetest.Next(t, r.Won, 15*time.Second, "term after both")
		if won.Term.Token <= floor.Load() {
			t.Fatalf("token=%d, want > floor %d", won.Term.Token, floor.Load())
		}
	})

	t.Run("FollowerTakesOverAtOnceAfterResign", func(t *testing.T) { leasetest.Resign(t, contract) })
	t.Run("FrozenLeaderStepsDownBeforeFollowerIsGranted", func(t *testing.T) { leasetest.Freeze(t, contract) })
	t.Run("LockDeletedEndsTerm", func(t *testing.T) { leasetest.Taken(t, contract) })

	t.Run("FloorErrorSkipsTheAttempt", func(t *testing.T) {
		cli := mustClient(t, testenv.MustRedis(t).Addr())
		var seq, calls atomic.Int64
		c := newCampaigner(t, cli, "a", time.Second, func(context.Context) (int64, error) {
			calls.Add(1)
			return 0, errors.New("store unreachable")
		})
		r := leasetest.Run(t, c, &seq, true)
		testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, "two floor reads", func() bool { return calls.Load() >= 2 })
		select {
		case e := <-r.Won:
			t.Fatalf("won term %d without a floor", e.Term.Token)
		default:
		}
		if n, err := cli.Exists(context.Background(), testKey).Result(); err != nil || n != 0 {
			t.Fatalf("lock exists=%d err=%v, want no lock taken", n, err)
		}
		r.Stop()
	})
}

// TestCampaigner_Confirm: Redis says no once the lock holds another term's
// value, before the next renewal notices.
func TestCampaigner_Confirm(t *testing.T) { leasetest.Confirm(t, contract) }

// TestCampaigner_LongestTTL: the longest TTL election.ttl allows wins a term on a real server:
// PX counts it in milliseconds, which hold it, and the step-down margin's arithmetic must too.
func TestCampaigner_LongestTTL(t *testing.T) {
	s := newServer(t)
	ttl := time.Duration(1<<63 - 1).Truncate(time.Second)
	var seq atomic.Int64
	r := leasetest.Run(t, newCampaigner(t, s.cli, "a", ttl, nil), &seq, true)
	leasetest.Next(t, r.Won, 10*time.Second, "term")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pttl, err := s.cli.PTTL(ctx, testKey).Result()
	if err != nil {
		t.Fatalf("PTTL: %v", err)
	}
	if pttl < ttl/2 {
		t.Fatalf("pttl=%v, want about %v", pttl, ttl)
	}
}
