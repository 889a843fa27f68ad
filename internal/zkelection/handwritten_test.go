package zkelection

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"scheduler/internal/lease/leasetest"
	"scheduler/internal/testenv"
)

// TestCampaigner_HandWrittenNodes: nodes under the election path that no replica wrote. A
// persistent node with a candidate's name, even one ordered before every replica's, is never
// read as the leader and is removed by the replica it stands before, which logs what it
// removed; an access list that refuses the replicas' candidates stops the campaign at error
// level, naming the path and the command that restores the access.
func TestCampaigner_HandWrittenNodes(t *testing.T) {
	logged := func(t *testing.T, addr, node string) (*Campaigner, *observer.ObservedLogs) {
		core, logs := observer.New(zapcore.DebugLevel)
		c, err := New(Config{Servers: []string{addr}, SessionTimeout: testTimeout, Path: testPath, Node: node}, zap.New(core))
		if err != nil {
			t.Fatal(err)
		}
		return c, logs
	}

	t.Run("PersistentNodeBeforeTheCandidates", func(t *testing.T) {
		s := newServer(t)
		if err := ensurePath(s.conn, testPath); err != nil {
			t.Fatal(err)
		}
		ghost := testPath + "/c-0000000000"
		if _, err := s.conn.Create(ghost, []byte("ghost"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if l, err := ReadLeader(s.conn, testPath); !errors.Is(err, ErrNoLeader) {
			t.Fatalf("ReadLeader = %+v, %v; want no leader: a persistent node is no candidate", l, err)
		}
		c, logs := logged(t, s.srv.Addr(), "a")
		var seq atomic.Int64
		r := leasetest.Run(t, c, &seq, true)
		e := leasetest.Next(t, r.Won, 15*time.Second, "a's term despite the persistent node")
		if ok, _, err := s.conn.Exists(ghost); err != nil || ok {
			t.Fatalf("persistent node exists=%v (%v), want it removed", ok, err)
		}
		if !warnedOf(logs, ghost, "ghost") {
			t.Fatalf("no warning naming the node removed and its data")
		}
		l, err := ReadLeader(s.conn, testPath)
		if err != nil || l.Token != e.Term.Token || l.Node != "a" {
			t.Fatalf("ReadLeader = %+v, %v; want a with token %d", l, err, e.Term.Token)
		}

		// One created now, before the leader's node, is not read as the leader either.
		if _, err := s.conn.Create(ghost, []byte("ghost"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if l, err := ReadLeader(s.conn, testPath); err != nil || l.Node != "a" {
			t.Fatalf("ReadLeader = %+v, %v; want a", l, err)
		}
		// A follower created behind the node removes it, and takes over when the leader leaves.
		b, blogs := logged(t, s.srv.Addr(), "b")
		rb := leasetest.Run(t, b, &seq, true)
		testenv.Eventually(t, 15*time.Second, 20*time.Millisecond, "b to remove the node before its own", func() bool {
			return warnedOf(blogs, ghost, "ghost")
		})
		s.Contending(t, 2)
		r.Stop()
		if e := leasetest.Next(t, rb.Won, 15*time.Second, "b's term after a left"); e.Term.Token <= l.Token {
			t.Fatalf("b's token=%d, want > %d", e.Term.Token, l.Token)
		}
	})

	// An ephemeral node named to sort before the sitting leader's (its name is its creator's
	// choice) stands behind it: the election goes by creation. Before, it was read as the leader,
	// and the healthy leader reported its election held by a node of no replica (503).
	t.Run("EphemeralNodeNamedBeforeTheLeader", func(t *testing.T) {
		s := newServer(t)
		c, _ := logged(t, s.srv.Addr(), "a")
		var seq atomic.Int64
		r := leasetest.Run(t, c, &seq, true)
		e := leasetest.Next(t, r.Won, 15*time.Second, "a's term")
		if _, err := s.conn.Create(testPath+"/c-0000000000", []byte("intruder"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if l, err := ReadLeader(s.conn, testPath); err != nil || l.Node != "a" || l.Token != e.Term.Token {
			t.Fatalf("ReadLeader = %+v, %v; want a with token %d", l, err, e.Term.Token)
		}
		if err := c.Confirm(t.Context(), e.Term.Token); err != nil {
			t.Fatalf("Confirm(%d) = %v, want the term confirmed", e.Term.Token, err)
		}
	})

	t.Run("AccessListRefusesCandidates", func(t *testing.T) {
		s := newServer(t)
		if err := ensurePath(s.conn, testPath); err != nil {
			t.Fatal(err)
		}
		if _, err := s.conn.SetACL(testPath, zk.WorldACL(zk.PermRead|zk.PermAdmin), -1); err != nil {
			t.Fatal(err)
		}
		c, logs := logged(t, s.srv.Addr(), "a")
		var seq atomic.Int64
		r := leasetest.Run(t, c, &seq, true)
		testenv.Eventually(t, 15*time.Second, 50*time.Millisecond, "an error naming the access list and its remedy", func() bool {
			for _, e := range logs.FilterLevelExact(zapcore.ErrorLevel).All() {
				if err, _ := e.ContextMap()["error"].(string); strings.Contains(err, "setAcl "+testPath+" world:anyone:cdrwa") {
					return true
				}
			}
			return false
		})
		if _, err := s.conn.SetACL(testPath, zk.WorldACL(zk.PermAll), -1); err != nil {
			t.Fatal(err)
		}
		leasetest.Next(t, r.Won, 15*time.Second, "a's term once the access list is restored")
	})
}

// warnedOf says whether logs hold a warning naming node and its data.
func warnedOf(logs *observer.ObservedLogs, node, data string) bool {
	for _, e := range logs.FilterLevelExact(zapcore.WarnLevel).All() {
		m := e.ContextMap()
		if m["removed"] == node && m["data"] == data {
			return true
		}
	}
	return false
}

// TestReadElection_AccessListByAddress: an access list that admits the replicas by their
// address (the ip scheme, which needs no authentication either) lets them campaign, and a read
// of the election must not report it as refusing them. Before, every access list without cdr
// for world:anyone was reported so: status, /status and /readyz (503) on every replica named a
// problem in an election that worked.
func TestReadElection_AccessListByAddress(t *testing.T) {
	s := newServer(t)
	if err := ensurePath(s.conn, testPath); err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(s.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: host}}
	if _, err := s.conn.SetACL(testPath, acl, -1); err != nil {
		t.Fatal(err)
	}
	c := newCampaigner(t, s.srv.Addr(), "a")
	var seq atomic.Int64
	r := leasetest.Run(t, c, &seq, true)
	e := leasetest.Next(t, r.Won, 15*time.Second, "a's term under the access list by address")
	el, err := ReadElection(s.conn, testPath)
	if err != nil {
		t.Fatal(err)
	}
	if !el.Leads || el.Leader.Token != e.Term.Token || el.Refused != "" || len(el.Problems()) != 0 {
		t.Fatalf("ReadElection = %+v, problems %q; want a leading with token %d and no problem", el, el.Problems(), e.Term.Token)
	}
}
