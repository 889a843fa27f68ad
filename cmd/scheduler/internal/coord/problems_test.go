package coord

import (
	"context"
	"strings"
	"testing"

	"scheduler/internal/status"
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
	e, err := Election(context.Background(), read, []status.Replica{{Node: "a"}})
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
	e, _ = Election(context.Background(), func(context.Context) (Seen, error) { return Seen{Node: "a", Token: 8}, nil }, []status.Replica{{Node: "a"}})
	if len(e.Problems) != 0 {
		t.Fatalf("problems %q for a registered replica's hold, want none", e.Problems)
	}
}
