package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/cmd/scheduler/internal/logs"
	"scheduler/internal/pglease"
	"scheduler/internal/redislock"
	"scheduler/internal/status"
	"scheduler/internal/zkelection"
)

// Election reads the election of a backend other than etcd with read, for status and
// readiness: the leader, and the problems the read found, with a leader that names none of
// replicas (when known) among them.
func Election(ctx context.Context, read func(context.Context) (Seen, error), replicas []scheduler.Replica) (status.Election, error) {
	l, err := read(ctx)
	switch {
	case errors.Is(err, ErrNoLeader):
		return status.Election{Problems: l.Problems}, nil
	case err != nil:
		return status.Election{}, err
	}
	// The node is what the hold's writer wrote: a replica, or anyone who can write to the backend.
	e := status.Election{Leader: &status.Leader{Node: logs.Escape(shown(l.Node)), Token: l.Token}, Problems: l.Problems}
	if !l.Since.IsZero() {
		since := l.Since.UTC()
		e.Leader.Since = &since
	}
	if p := foreign(l, replicas); p != "" {
		e.Problems = append(e.Problems, p)
	}
	return e, nil
}

// impersonated returns a problem when l, the leader seen (ok), names this replica (node) while
// this replica does not lead with l's token: something outside the scheduler holds the election
// in its name (a key on a lease its writer keeps alive, a lease row or lock written by hand), and
// no job runs while it does. The registry cannot tell it from this replica; the replica can.
func impersonated(l Seen, ok bool, node string, leading func() (scheduler.Term, bool)) string {
	if !ok || leading == nil || node == "" || l.Node != node {
		return ""
	}
	if t, lead := leading(); lead && t.Token == l.Token {
		return ""
	}
	return fmt.Sprintf("the election is held by %s (token %d) in this replica's name (%q), but this replica does not lead with "+
		"that token: something outside the scheduler holds it, and no job runs while it does; end its hold with: %s",
		l.Held, l.Token, logs.Escape(shown(node)), l.End)
}

// selfHold carries the judgement of a hold in this replica's name (impersonated) from one
// reading to the next. A hold counts once it has outlived what a previous process of this
// replica, killed and restarted, can leave behind: its lease ends at most the election's TTL
// after its last renewal, which came before this process first saw the hold. Until then it may
// be the replica's own, and a restart must not be reported as an outsider; two readings at
// least, for a replica that has just won knows it a moment after its key leads.
type selfHold struct {
	ttl   time.Duration
	token int64
	since time.Time
}

// selfHoldSlack is what a backend may take past a lease's TTL to end it (etcd checks for expired
// leases every half second).
const selfHoldSlack = time.Second

// judge returns problem, the judgement of the hold read at now with token, once the same hold
// has been judged so for longer than the TTL; "" before, and when problem is "".
func (h *selfHold) judge(now time.Time, problem string, token int64) string {
	if problem == "" {
		h.token, h.since = 0, time.Time{}
		return ""
	}
	if h.since.IsZero() || token != h.token {
		h.token, h.since = token, now
	}
	if now.Sub(h.since) <= h.ttl+selfHoldSlack {
		return ""
	}
	return problem
}

// Problems returns, for the daemon's status, what keeps this replica's coordinator from working:
// why it does not campaign (Coordinator.StoreProblem), and a hold of the election in its name
// that is not its own, as its view last judged it (impersonated).
func Problems(c Coordinator, v View) func() []string {
	return func() []string {
		var out []string
		if p := c.StoreProblem(); p != "" {
			out = append(out, p)
		}
		if cv, ok := v.(countedView); ok && cv.self != nil {
			if p := cv.self.Load(); p != nil && *p != "" {
				out = append(out, *p)
			}
		}
		return out
	}
}

// foreign returns a problem when l names none of replicas, and "" otherwise or when replicas
// are not known. Every replica registers as it starts, before its first term could be seen;
// what holds the election without being one (a lease row or a lock written by hand with an
// expiry far ahead, an ephemeral node of another client's session) cannot be told from a
// replica's hold by its shape, so it is reported, not removed.
func foreign(l Seen, replicas []scheduler.Replica) string {
	if replicas == nil || slices.ContainsFunc(replicas, func(r scheduler.Replica) bool { return r.Node == l.Node }) {
		return ""
	}
	return fmt.Sprintf("the election is held by %s (node %q, token %d), which names no running replica: something outside "+
		"the scheduler holds it, and no job runs while it does; stop that process, or end its hold with: %s",
		l.Held, logs.Escape(shown(l.Node)), l.Token, l.End)
}

// shown cuts a name someone else may have written to what a status line shows.
func shown(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// pgSeen is a postgres lease holder as the status sees it.
func pgSeen(l pglease.Leader, schema string, problems []string) Seen {
	return Seen{Node: l.Node, Token: l.Token, Since: l.Since, Problems: problems,
		Held: fmt.Sprintf("the lease row %q of %s.leader_lease", LeaseName, schema),
		End:  fmt.Sprintf("UPDATE %s.leader_lease SET holder = NULL WHERE name = '%s'", pgx.Identifier{schema}.Sanitize(), LeaseName)}
}

// zkSeen is a ZooKeeper candidate as the status sees it.
func zkSeen(l zkelection.Leader, problems []string) Seen {
	return Seen{Node: l.Node, Token: l.Token, Problems: problems,
		Held: "the candidate node " + l.Path, End: "zkCli.sh delete " + l.Path}
}

// redisSeen is a Redis lock holder as the status sees it.
func redisSeen(l redislock.Leader, key string, db int, problems []string) Seen {
	cli := "redis-cli"
	if db != 0 {
		cli += fmt.Sprintf(" -n %d", db)
	}
	return Seen{Node: l.Node, Token: l.Token, Problems: problems, Held: "the lock " + key, End: cli + " DEL " + key}
}

// logProblems logs, at error level, each of problems not in logged, and returns problems as the
// new logged: a problem is logged once when it appears, again only after it was gone.
func logProblems(lg *zap.Logger, problems, logged []string) []string {
	for _, p := range problems {
		if !slices.Contains(logged, p) {
			lg.Error("election blocked", zap.String("problem", p))
		}
	}
	return slices.Clone(problems)
}
