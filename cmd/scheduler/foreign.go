package main

import (
	"fmt"

	"scheduler/internal/control"
	"scheduler/internal/election"
)

// foreignLeader returns a problem when the election's leader key names no replica of the
// cluster and its holder published no term, and "" otherwise. A replica publishes its term (the
// Since of l, as ReadLeader returns it) as soon as it wins, and its registration can lapse for a
// moment (a lost lease is granted again), so a replica's term is not mistaken for a foreign one
// unless both are missing. A key bound to a lease that its writer keeps alive (`etcdctl elect
// PREFIX VALUE` without --listen, another tool sharing the prefix) wins the election like a
// replica's: no replica leads, so no job runs, until that process stops or its lease is revoked.
// Such a key cannot be removed safely by a replica (a real candidate's key looks the same), so
// it is reported, not removed.
func foreignLeader(l election.Leader, rs []control.Replica) string {
	if !l.Since.IsZero() {
		return ""
	}
	for _, r := range rs {
		if r.Node == l.Node {
			return ""
		}
	}
	v := l.Node
	if len(v) > maxShownValue {
		v = v[:maxShownValue] + "…"
	}
	return fmt.Sprintf("the election is held by key %s (value %q, lease %x, create revision %d), which names no running replica: "+
		"a process outside the scheduler keeps that key's lease alive, and no job runs while it does; "+
		"stop that process, or revoke its lease with: etcdctl lease revoke %x",
		l.Key, v, l.Lease, l.Token, l.Lease)
}
