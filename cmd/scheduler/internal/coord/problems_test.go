package coord

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
)

// TestElection_ForeignHold: a hold that names no registered replica is a problem naming the
// hold and the command that ends it; the node, which anyone who can write to the backend chose,
// is cut and shown without its control characters; with the replicas not known, nothing is
// judged.
func TestElection_ForeignHold(t *testing.T) {
	node := "\x1b]0;owned\x07" + strings.Repeat("x", 10000)
	read := func(context.Context) (Seen, error) {
		return Seen{Node: node, Token: 7, Held: "the lock k", End: "redis-cli DEL k"}, nil
	}
	e, err := Election(context.Background(), read, []scheduler.Replica{{Node: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(e.Leader.Node, "\x1b\x07") || len(e.Leader.Node) > 300 {
		t.Fatalf("leader node %q, want it escaped and cut", e.Leader.Node)
	}
	if len(e.Problems) != 1 || !strings.Contains(e.Problems[0], "the lock k") || !strings.Contains(e.Problems[0], "redis-cli DEL k") ||
		strings.ContainsAny(e.Problems[0], "\x1b\x07") {
		t.Fatalf("problems %q, want the hold and its remedy, escaped", e.Problems)
	}
	if e, _ := Election(context.Background(), read, nil); len(e.Problems) != 0 {
		t.Fatalf("problems %q with the replicas unknown, want none", e.Problems)
	}
	e, _ = Election(context.Background(), func(context.Context) (Seen, error) { return Seen{Node: "a", Token: 8}, nil }, []scheduler.Replica{{Node: "a"}})
	if len(e.Problems) != 0 {
		t.Fatalf("problems %q for a registered replica's hold, want none", e.Problems)
	}
}

// TestImpersonated: a hold that names this replica is a problem unless this replica leads with
// its token; one that names another replica, or no hold, is not this judgement's.
func TestImpersonated(t *testing.T) {
	held := Seen{Node: "n1", Token: 42, Held: "the key /e/1 (lease 7)", End: "etcdctl lease revoke 7"}
	leadingWith := func(token int64, ok bool) func() (scheduler.Term, bool) {
		return func() (scheduler.Term, bool) { return scheduler.Term{Node: "n1", Token: token}, ok }
	}
	for _, tc := range []struct {
		name    string
		l       Seen
		ok      bool
		leading func() (scheduler.Term, bool)
		want    bool
	}{
		{"OwnTerm", held, true, leadingWith(42, true), false},
		{"NotLeading", held, true, leadingWith(0, false), true},
		{"LeadingAnotherToken", held, true, leadingWith(41, true), true},
		{"AnotherReplica", Seen{Node: "n2", Token: 42}, true, leadingWith(0, false), false},
		{"NoHold", Seen{}, false, leadingWith(0, false), false},
		{"NotKnown", held, true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := impersonated(tc.l, tc.ok, "n1", tc.leading)
			if (p != "") != tc.want {
				t.Fatalf("impersonated = %q, want a problem: %v", p, tc.want)
			}
			if tc.want && !strings.Contains(p, "etcdctl lease revoke 7") {
				t.Fatalf("the problem %q does not say how to end the hold", p)
			}
		})
	}
}

// TestProblems: the daemon's status gets its coordinator's store problem and the judged hold in
// its name, each when there is one.
func TestProblems(t *testing.T) {
	self := &atomic.Pointer[string]{}
	v := countedView{self: self}
	c := passThrough{}
	if got := Problems(c, v)(); len(got) != 0 {
		t.Fatalf("problems %v, want none", got)
	}
	p := "held in this replica's name"
	self.Store(&p)
	if got := Problems(c, v)(); len(got) != 1 || got[0] != p {
		t.Fatalf("problems %v, want [%s]", got, p)
	}
	if got := Problems(c, etcdView{})(); len(got) != 0 {
		t.Fatalf("problems of a view that judges nothing: %v", got)
	}
}

// TestSelfHold: a hold in this replica's name counts only once it has outlived the election's
// TTL (and the backend's slack) since this process first judged it so: a replica killed and
// restarted within a long TTL finds its last process's key naming it, and that is no outsider.
// A hold of another token starts the count again; a hold that ends clears it.
func TestSelfHold(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const p = "held in this replica's name"
	type step struct {
		at      time.Duration
		problem string
		token   int64
		want    bool // reported
	}
	for _, tc := range []struct {
		name  string
		ttl   time.Duration
		steps []step
	}{
		{"ShortTTLSecondReading", 2 * time.Second, []step{{0, p, 7, false}, {5 * time.Second, p, 7, true}, {10 * time.Second, p, 7, true}}},
		{"RestartWithinALongTTL", 15 * time.Second, []step{{0, p, 7, false}, {5 * time.Second, p, 7, false}, {10 * time.Second, p, 7, false}, {15 * time.Second, "", 0, false},
			{20 * time.Second, "", 0, false}}},
		{"OutlivesALongTTL", 15 * time.Second, []step{{0, p, 7, false}, {10 * time.Second, p, 7, false}, {15 * time.Second, p, 7, false}, {20 * time.Second, p, 7, true}}},
		{"AnotherTokenStartsAgain", 2 * time.Second, []step{{0, p, 7, false}, {5 * time.Second, p, 9, false}, {10 * time.Second, p, 9, true}}},
		{"EndedHoldClears", 2 * time.Second, []step{{0, p, 7, false}, {5 * time.Second, "", 0, false}, {10 * time.Second, p, 7, false}, {15 * time.Second, p, 7, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := selfHold{ttl: tc.ttl}
			for _, s := range tc.steps {
				got := h.judge(t0.Add(s.at), s.problem, s.token)
				if (got != "") != s.want {
					t.Fatalf("at +%v (token %d): judged %q, want reported: %v", s.at, s.token, got, s.want)
				}
			}
		})
	}
}
