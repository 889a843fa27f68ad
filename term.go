package scheduler

import "time"

// Term is one leadership term as every coordinator backend hands it to the
// leader: from the grant until the leader's function returns. A backend may
// keep more about its terms (the etcd one keeps the leader key and lease),
// but the runner, the pruner and the outbox read only these fields.
type Term struct {
	// Token is the term's fencing token. Every later term of the same
	// election has a strictly higher one, within one coordinator history;
	// the store refuses writes carrying a token below the newest it has
	// seen, which is what makes a late write from an old term harmless.
	Token int64
	// Node is the name of the replica holding the term.
	Node string
	// Since is when the term was won, by the leader's clock.
	Since time.Time
}
