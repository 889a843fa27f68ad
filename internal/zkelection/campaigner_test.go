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

	"scheduler/internal/lease/leasetest"
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
		r := leasetest.Run(t, newCampaigner(t, srv.Addr(), "a"), &seq, false)
		prev := int64(0)
		for i := range 3 {
			e := leasetest.Next(t, r.Won, 15*time.Second, "term")
			if e.Term.Token <= prev {
				t.Fatalf("term %d: token=%d, want > %d", i, e.Term.Token, prev)
			}
			prev = e.Term.Token
		}
		r.Stop()
		// Delete the election's parent node: sequence numbers restart.
		testenv.Eventually(t, 5*time.Second, 20*time.Millisecond, "the parent node deleted", func() bool {
			return conn.Delete(testPath, -1) == nil
		})
		r = leasetest.Run(t, newCampaigner(t, srv.Addr(), "a"), &seq, true)
		e := leasetest.Next(t, r.Won, 15*time.Second, "term after the parent was created again")
		if e.Term.Token <= prev {
			t.Fatalf("token=%d after the parent was created again, want > %d", e.Term.Token, prev)
		}
		l, err := ReadLeader(conn, testPath)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(l.Path, "c-0000000000") || l.Token != e.Term.Token {
			t.Fatalf("leader %s with czxid %d, want the first sequence number again and czxid %d", l.Path, l.Token, e.Term.Token)
		}
	})

	t.Run("FollowerTakesOverAtOnceAfterResign", func(t *testing.T) {
		srv := testenv.MustZooKeeper(t)
		var seq atomic.Int64
		a := leasetest.Run(t, newCampaigner(t, srv.Addr(), "a"), &seq, true)
		first := leasetest.Next(t, a.Won, 15*time.Second, "a's term")
		b := leasetest.Run(t, newCampaigner(t, srv.Addr(), "b"), &seq, true)
		conn := mustConn(t, srv.Addr())
		testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "b's candidate node", func() bool {
			children, _, err := conn.Children(testPath)
			return err == nil && len(ordered(children)) == 2
		})
		stopped := time.Now()
		a.Stop()
		won := leasetest.Next(t, b.Won, testTimeout/2, "b's term after a resigned")
		if won.Term.Token <= first.Term.Token {
			t.Fatalf("token=%d, want > %d", won.Term.Token, first.Term.Token)
		}
		t.Logf("handover after resign: %v", time.Since(stopped))
	})

	t.Run("FrozenLeaderStepsDownBeforeFollowerLeads", func(t *testing.T) {
		srv := testenv.MustZooKeeper(t)
		proxy := testenv.MustProxy(t, srv.Addr())
		var seq atomic.Int64
		a := leasetest.Run(t, newCampaigner(t, proxy.Addr(), "a"), &seq, true)
		first := leasetest.Next(t, a.Won, 15*time.Second, "a's term")
		b := leasetest.Run(t, newCampaigner(t, srv.Addr(), "b"), &seq, true)
		conn := mustConn(t, srv.Addr())
		testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "b's candidate node", func() bool {
			children, _, err := conn.Children(testPath)
			return err == nil && len(ordered(children)) == 2
		})
		frozen := time.Now()
		proxy.Pause() // a's session stops reaching the server
		lost := leasetest.Next(t, a.Lost, 2*testTimeout, "a stepping down")
		var le *LostError
		if !errors.As(lost.Cause, &le) || (le.Reason != ReasonRenewalDeadline && le.Reason != ReasonSessionDone) {
			t.Fatalf("a's term ended with cause %v, want reason %s or %s", lost.Cause, ReasonRenewalDeadline, ReasonSessionDone)
		}
		won := leasetest.Next(t, b.Won, 3*testTimeout, "b's term after a froze")
		took := time.Since(frozen)
		if lost.Seq >= won.Seq {
			t.Fatalf("a stepped down (leasetest.Event %d) after b led (leasetest.Event %d)", lost.Seq, won.Seq)
		}
		if won.Term.Token <= first.Term.Token {
			t.Fatalf("token=%d, want > %d", won.Term.Token, first.Term.Token)
		}
		// The server expires sessions on tick boundaries.
		if took > testTimeout+time.Second {
			t.Fatalf("takeover after %v, want about the session timeout %v", took, testTimeout)
		}
		t.Logf("a stepped down for %s; takeover after freeze: %v", le.Reason, took)
		proxy.Resume()
		b.Stop()
		a.Stop()
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
		a := leasetest.Run(t, c, &seq, true)
		leasetest.Next(t, a.Won, 15*time.Second, "a's term")
		l, err := ReadLeader(conn, testPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Delete(l.Path, -1); err != nil {
			t.Fatal(err)
		}
		lost := leasetest.Next(t, a.Lost, 5*time.Second, "a's term ending")
		var le *LostError
		if !errors.As(lost.Cause, &le) || le.Reason != ReasonKeyDeleted {
			t.Fatalf("cause %v, want reason %s", lost.Cause, ReasonKeyDeleted)
		}
		if got := <-elected; got.Token != lost.Term.Token {
			t.Fatalf("OnElected token=%d, want %d", got.Token, lost.Term.Token)
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
		r := leasetest.Run(t, c, &seq, true)
		time.Sleep(testTimeout)
		if _, ok := c.Leading(); ok {
			t.Fatal("leading without a server")
		}
		proxy.Resume()
		leasetest.Next(t, r.Won, 15*time.Second, "a's term once the server is reachable")
		r.Stop()
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
	r := leasetest.Run(t, c, &seq, true)
	term := leasetest.Next(t, r.Won, 15*time.Second, "a's term").Term
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
