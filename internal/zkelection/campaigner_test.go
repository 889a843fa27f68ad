package zkelection

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"scheduler/internal/testenv"
)

func TestNew_RefusesBadConfig(t *testing.T) {
	good := Config{Servers: []string{"127.0.0.1:2181"}, SessionTimeout: 2 * time.Second, Path: "/a/b", Node: "n"}
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"NoServers":    {func(c *Config) { c.Servers = nil }, "servers: none"},
		"RelativePath": {func(c *Config) { c.Path = "a/b" }, "path"},
		"RootPath":     {func(c *Config) { c.Path = "/" }, "path"},
		"UncleanPath":  {func(c *Config) { c.Path = "/a/" }, "path"},
		"NoNode":       {func(c *Config) { c.Node = "" }, "node: empty"},
		"ShortTimeout": {func(c *Config) { c.SessionTimeout = 500 * time.Millisecond }, "below 1s"},
		"WideMargin":   {func(c *Config) { c.Margin = 1500 * time.Millisecond }, "margin"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			if _, err := New(cfg, zap.NewNop()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := New(good, nil); err == nil {
		t.Fatal("New(nil logger) = nil error")
	}
	if _, err := New(good, zap.NewNop()); err != nil {
		t.Fatalf("New(good) = %v", err)
	}
}

func TestCandidates_Order(t *testing.T) {
	children := []string{"_c_0123-c-0000000010", "c-0000000002", "stray", "_c_ab-c-0000000007"}
	if got := ordered(children); strings.Join(got, ",") != "c-0000000002,_c_ab-c-0000000007,_c_0123-c-0000000010" {
		t.Fatalf("ordered = %v", got)
	}
	for mine, want := range map[string]string{"c-0000000002": "", "_c_0123-c-0000000010": "_c_ab-c-0000000007"} {
		if got, ok := predecessor(children, mine); !ok || got != want {
			t.Fatalf("predecessor(%s) = %q, %v; want %q", mine, got, ok, want)
		}
	}
	if _, ok := predecessor(children, "c-0000000099"); ok {
		t.Fatal("predecessor of a node not among the children: found")
	}
}

func TestCampaigner_Run(t *testing.T) {
	t.Run("TokenRisesAcrossTermsAndParentRecreation", func(t *testing.T) {
		srv := testenv.MustZooKeeper(t)
		conn := mustConn(t, srv.Addr())
		var seq atomic.Int64
		r := runCampaign(t, newCampaigner(t, srv.Addr(), "a"), &seq, false)
		prev := int64(0)
		for i := range 3 {
			e := next(t, r.won, 15*time.Second, "term")
			if e.term.Token <= prev {
				t.Fatalf("term %d: token=%d, want > %d", i, e.term.Token, prev)
			}
			prev = e.term.Token
		}
		r.stop()
		// Delete the election's parent node: sequence numbers restart.
		testenv.Eventually(t, 5*time.Second, 20*time.Millisecond, "the parent node deleted", func() bool {
			return conn.Delete(testPath, -1) == nil
		})
		r = runCampaign(t, newCampaigner(t, srv.Addr(), "a"), &seq, true)
		e := next(t, r.won, 15*time.Second, "term after the parent was created again")
		if e.term.Token <= prev {
			t.Fatalf("token=%d after the parent was created again, want > %d", e.term.Token, prev)
		}
		l, err := ReadLeader(conn, testPath)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(l.Path, "c-0000000000") || l.Token != e.term.Token {
			t.Fatalf("leader %s with czxid %d, want the first sequence number again and czxid %d", l.Path, l.Token, e.term.Token)
		}
	})

	t.Run("FollowerTakesOverAtOnceAfterResign", func(t *testing.T) {
		srv := testenv.MustZooKeeper(t)
		var seq atomic.Int64
		a := runCampaign(t, newCampaigner(t, srv.Addr(), "a"), &seq, true)
		first := next(t, a.won, 15*time.Second, "a's term")
		b := runCampaign(t, newCampaigner(t, srv.Addr(), "b"), &seq, true)
		conn := mustConn(t, srv.Addr())
		testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "b's candidate node", func() bool {
			children, _, err := conn.Children(testPath)
			return err == nil && len(ordered(children)) == 2
		})
		stopped := time.Now()
		a.stop()
		won := next(t, b.won, testTimeout/2, "b's term after a resigned")
		if won.term.Token <= first.term.Token {
			t.Fatalf("token=%d, want > %d", won.term.Token, first.term.Token)
		}
		t.Logf("handover after resign: %v", time.Since(stopped))
	})

	t.Run("FrozenLeaderStepsDownBeforeFollowerLeads", func(t *testing.T) {
		srv := testenv.MustZooKeeper(t)
		proxy := testenv.MustProxy(t, srv.Addr())
		var seq atomic.Int64
		a := runCampaign(t, newCampaigner(t, proxy.Addr(), "a"), &seq, true)
		first := next(t, a.won, 15*time.Second, "a's term")
		b := runCampaign(t, newCampaigner(t, srv.Addr(), "b"), &seq, true)
		conn := mustConn(t, srv.Addr())
		testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "b's candidate node", func() bool {
			children, _, err := conn.Children(testPath)
			return err == nil && len(ordered(children)) == 2
		})
		frozen := time.Now()
		proxy.Pause() // a's session stops reaching the server
		lost := next(t, a.lost, 2*testTimeout, "a stepping down")
		var le *LostError
		if !errors.As(lost.cause, &le) || (le.Reason != ReasonRenewalDeadline && le.Reason != ReasonSessionDone) {
			t.Fatalf("a's term ended with cause %v, want reason %s or %s", lost.cause, ReasonRenewalDeadline, ReasonSessionDone)
		}
		won := next(t, b.won, 3*testTimeout, "b's term after a froze")
		took := time.Since(frozen)
		if lost.seq >= won.seq {
			t.Fatalf("a stepped down (event %d) after b led (event %d)", lost.seq, won.seq)
		}
		if won.term.Token <= first.term.Token {
			t.Fatalf("token=%d, want > %d", won.term.Token, first.term.Token)
		}
		// The server expires sessions on tick boundaries.
		if took > testTimeout+time.Second {
			t.Fatalf("takeover after %v, want about the session timeout %v", took, testTimeout)
		}
		t.Logf("a stepped down for %s; takeover after freeze: %v", le.Reason, took)
		proxy.Resume()
		b.stop()
		a.stop()
	})

	t.Run("CandidateNodeDeletedEndsTerm", func(t *testing.T) {
		srv := testenv.MustZooKeeper(t)
		conn := mustConn(t, srv.Addr())
		var seq atomic.Int64
		c := newCampaigner(t, srv.Addr(), "a")
		elected, ended := make(chan Term, 16), make(chan Reason, 16)
		c.cfg.Events = Events{
			OnElected: func(t Term) { elected <- t },
			OnLost:    func(_ Term, r Reason) { ended <- r },
		}
		a := runCampaign(t, c, &seq, true)
		next(t, a.won, 15*time.Second, "a's term")
		l, err := ReadLeader(conn, testPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Delete(l.Path, -1); err != nil {
			t.Fatal(err)
		}
		lost := next(t, a.lost, 5*time.Second, "a's term ending")
		var le *LostError
		if !errors.As(lost.cause, &le) || le.Reason != ReasonKeyDeleted {
			t.Fatalf("cause %v, want reason %s", lost.cause, ReasonKeyDeleted)
		}
		if got := <-elected; got.Token != lost.term.Token {
			t.Fatalf("OnElected token=%d, want %d", got.Token, lost.term.Token)
		}
		if got := <-ended; got != ReasonKeyDeleted {
			t.Fatalf("OnLost reason=%s, want %s", got, ReasonKeyDeleted)
		}
	})

	t.Run("UnreachableServerKeepsRetrying", func(t *testing.T) {
		srv := testenv.MustZooKeeper(t)
		proxy := testenv.MustProxy(t, srv.Addr())
		proxy.Cut()
		var seq atomic.Int64
		c := newCampaigner(t, proxy.Addr(), "a")
		r := runCampaign(t, c, &seq, true)
		time.Sleep(testTimeout)
		if _, ok := c.Leading(); ok {
			t.Fatal("leading without a server")
		}
		proxy.Resume()
		next(t, r.won, 15*time.Second, "a's term once the server is reachable")
		r.stop()
	})
}

func TestCampaigner_Confirm(t *testing.T) {
	srv := testenv.MustZooKeeper(t)
	conn := mustConn(t, srv.Addr())
	ctx := context.Background()
	var seq atomic.Int64
	c := newCampaigner(t, srv.Addr(), "a")
	if err := c.Confirm(ctx, 1); !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("Confirm without a term = %v, want ErrNotConfirmed", err)
	}
	r := runCampaign(t, c, &seq, true)
	term := next(t, r.won, 15*time.Second, "a's term").term
	if err := c.Confirm(ctx, term.Token); err != nil {
		t.Fatalf("Confirm(%d) = %v, want nil", term.Token, err)
	}
	if err := c.Confirm(ctx, term.Token+1); !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("Confirm(other token) = %v, want ErrNotConfirmed", err)
	}
	// A node under the path that is not a candidate changes nothing.
	if _, err := conn.Create(testPath+"/stray", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := c.Confirm(ctx, term.Token); err != nil {
		t.Fatalf("Confirm with a stray node = %v, want nil", err)
	}
	l, err := ReadLeader(conn, testPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(l.Path, -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Confirm(ctx, term.Token); !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("Confirm after the candidate node was deleted = %v, want ErrNotConfirmed", err)
	}
}
