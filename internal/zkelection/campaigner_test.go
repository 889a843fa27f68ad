package zkelection

import (
	"context"
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
	if got := candidates(children); strings.Join(got, ",") != "_c_0123-c-0000000010,c-0000000002,_c_ab-c-0000000007" {
		t.Fatalf("candidates = %v", got)
	}
	// Ordered by creation, whatever the names say.
	cs := []candidate{{"c-0000000009", &zk.Stat{Czxid: 3}}, {"c-0000000002", &zk.Stat{Czxid: 5}}, {"c-0000000010", &zk.Stat{Czxid: 8}}}
	for mine, want := range map[string]string{"c-0000000009": "", "c-0000000002": "c-0000000009", "c-0000000010": "c-0000000002"} {
		if got, ok := predecessor(cs, mine); !ok || got != want {
			t.Fatalf("predecessor(%s) = %q, %v; want %q", mine, got, ok, want)
		}
	}
	if _, ok := predecessor(cs, "c-0000000099"); ok {
		t.Fatal("predecessor of a node not among the candidates: found")
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

	t.Run("FollowerTakesOverAtOnceAfterResign", func(t *testing.T) { leasetest.Resign(t, contract) })
	t.Run("FrozenLeaderStepsDownBeforeFollowerLeads", func(t *testing.T) { leasetest.Freeze(t, contract) })
	t.Run("CandidateNodeDeletedEndsTerm", func(t *testing.T) { leasetest.Taken(t, contract) })

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

// TestCampaigner_Confirm: ZooKeeper says no once the candidate node is
// deleted, before the session check notices.
func TestCampaigner_Confirm(t *testing.T) {
	leasetest.Confirm(t, contract)
	t.Run("StrayNodeChangesNothing", func(t *testing.T) {
		s := newServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var seq atomic.Int64
		c := newCampaigner(t, s.srv.Addr(), "a")
		r := leasetest.Run(t, c, &seq, true)
		term := leasetest.Next(t, r.Won, 15*time.Second, "a's term").Term
		// A node under the path that is not a candidate changes nothing.
		if _, err := s.conn.Create(testPath+"/stray", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if err := c.Confirm(ctx, term.Token); err != nil {
			t.Fatalf("Confirm with a stray node = %v, want nil", err)
		}
	})
}
