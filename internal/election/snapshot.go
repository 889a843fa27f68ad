package election

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Snapshot is the election prefix as one read saw it: who holds the election, and the keys
// bound to no lease that block it.
type Snapshot struct {
	// Leader holds the election; zero when Leads is false.
	Leader Leader
	// Leads says whether a candidate holds the election.
	Leads bool
	// Leaseless are the keys under the prefix bound to no lease, oldest first.
	Leaseless []Candidate
}

// ReadSnapshot reads the election prefix once, as ReadLeader does, and returns the leader and
// the lease-less keys of that read, so that a status page or a readiness check asks etcd once
// per answer. It fails only when etcd does not answer (or has no quorum): an election that no
// candidate holds is a Snapshot whose Leads is false.
func ReadSnapshot(ctx context.Context, cli *clientv3.Client, prefix string) (Snapshot, error) {
	l, stray, _, err := readLeader(ctx, cli, prefix)
	switch {
	case errors.Is(err, ErrNoLeader):
		return Snapshot{Leaseless: stray}, nil
	case err != nil:
		return Snapshot{}, err
	}
	return Snapshot{Leader: l, Leads: true, Leaseless: stray}, nil
}

// Problems describes what in s keeps the election from working, each with its remedy: every
// lease-less key, and a leader that is foreign to the replicas named by nodes (see
// ForeignLeader). With nodes nil the replicas are not known and the leader is not judged.
func (s Snapshot) Problems(nodes []string) []string {
	var out []string
	for _, c := range s.Leaseless {
		out = append(out, LeaselessProblem(c))
	}
	if s.Leads && nodes != nil {
		if p := ForeignLeader(s.Leader, nodes); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ShownValue cuts a key's value to what a status page or a log shows: someone else may have
// written it, and it may be large.
func ShownValue(v string) string {
	if len(v) > maxLoggedValue {
		return v[:maxLoggedValue] + "…"
	}
	return v
}

// LeaselessProblem describes c, a key bound to no lease, for a warning or a readiness
// failure, with the command that removes it.
func LeaselessProblem(c Candidate) string {
	return fmt.Sprintf("lease-less key %s (value %q, create revision %d) under the election prefix: "+
		"no replica writes such a key, and it blocks every candidate behind it until it is removed "+
		"(a campaigning replica removes it once it stands before its own key); remove it now with: %s",
		c.Key, ShownValue(c.Node), c.Rev, RemoveCommand(c.Key))
}

// ForeignLeader returns a problem when the election's leader key names none of the replicas
// nodes and its holder published no term, and "" otherwise. A replica publishes its term (the
// Since of l, as ReadLeader returns it) as soon as it wins, and its registration can lapse for a
// moment (a lost lease is granted again), so a replica's term is not mistaken for a foreign one
// unless both are missing. A key bound to a lease that its writer keeps alive (`etcdctl elect
// PREFIX VALUE` without --listen, another tool sharing the prefix) wins the election like a
// replica's: no replica leads, so no job runs, until that process stops or its lease is revoked.
// Such a key cannot be removed safely by a replica (a real candidate's key looks the same), so
// it is reported, not removed.
func ForeignLeader(l Leader, nodes []string) string {
	if !l.Since.IsZero() {
		return ""
	}
	for _, n := range nodes {
		if n == l.Node {
			return ""
		}
	}
	return fmt.Sprintf("the election is held by key %s (value %q, lease %x, create revision %d), which names no running replica: "+
		"a process outside the scheduler keeps that key's lease alive, and no job runs while it does; "+
		"stop that process, or revoke its lease with: etcdctl lease revoke %x",
		l.Key, ShownValue(l.Node), l.Lease, l.Token, l.Lease)
}
