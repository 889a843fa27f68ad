package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// poisonAttempts are what a job's database role (the README's recipe: fence_verify alone) tries
// against the fence of job, each with a token far above every term's: all must be refused.
func poisonAttempts(job string) []string {
	return []string{
		fmt.Sprintf("SELECT scheduler.fence_check('%s', %d)", job, outsideFence),
		fmt.Sprintf("SELECT scheduler.fence_check_all(ARRAY['%s'], %d)", job, outsideFence),
		fmt.Sprintf("SELECT scheduler.fence_raise(ARRAY['%s'], %d)", job, outsideFence),
		fmt.Sprintf("UPDATE scheduler.job_fence SET token = %d WHERE job = '%s'", outsideFence, job),
		fmt.Sprintf("INSERT INTO scheduler.job_fence (job, token) VALUES ('%s', %d)", unknownJob, outsideFence),
		fmt.Sprintf("SELECT scheduler.fence_verify('%s', %d)", job, outsideFence),
	}
}

// fenceHold is a job's fence held by the job role: a transaction left open after fence_verify
// with the fence's token, from from to to. takeover says the leader was killed as it began.
type fenceHold struct {
	job      string
	from, to time.Time
	takeover bool
	fault    int // its index in nemesis.faults
}

// fenceRaiseTimeout is the store's default lock_timeout of a raise (the replicas do not change
// it): a new term's raise waits that long for a held fence, then finds the held job in the lock
// table, blocks it and takes over the others; where the lock table does not show the hold, it
// raises in parts instead, which waits once more. The checks allow the slower of the two.
const fenceRaiseTimeout = 10 * time.Second

// planJobRole has the job role, connecting straight to Postgres, poison a workload job's fence
// (variant below 3: one of poisonAttempts, which must be refused), or hold it: a transaction
// left open after fence_verify with the fence's own token, for up to a few TTLs (3); the same
// with the leader killed as it begins and restarted a second later (4), so that the next term
// takes over while the fence is held, its raise waiting for the hold, then catches the job up;
// the same held for two of the raise's waits and a few TTLs more (5), so that the next term's
// raise narrows to the held job, takes over the others and catches it up later.
func (n *nemesis) planJobRole(dr draw) *fault {
	jobs := nemesisJobNames
	job := jobs[int(dr.target*float64(len(jobs)))%len(jobs)]
	if dr.variant < 3 {
		attempts := poisonAttempts(job)
		sql := attempts[int(dr.length*float64(len(attempts)))%len(attempts)]
		return &fault{
			what:   "as the job role: " + sql,
			holds:  []string{"jobrole"},
			inject: func() { n.poison(sql) },
		}
	}
	hold := dr.span(time.Second, 3*ttl)
	if dr.variant == 5 {
		hold = 2*fenceRaiseTimeout + dr.span(2*time.Second, 3*ttl)
	}
	holds := []string{"jobrole"}
	what := fmt.Sprintf("as the job role, hold the fence of %s (fence_verify with its token, the transaction left open) for %d ms", job, ms(hold))
	var victim string
	if dr.variant >= 4 {
		l, ok := n.leader()
		if !ok {
			return nil
		}
		victim = l.node
		holds = append(holds, "replica:"+victim)
		what += fmt.Sprintf(", SIGKILL the leader %s (token %d), restarted after 1000 ms", victim, l.token)
	}
	var tx pgx.Tx
	var conn *pgx.Conn
	held := -1 // the hold's index in n.holds
	rec := len(n.faults)
	steps := []faultStep{{after: hold, do: func() time.Duration {
		if conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = tx.Rollback(ctx) // the server may have restarted meanwhile: the hold is gone either way
			_ = conn.Close(ctx)
			cancel()
			n.holds[held].to = time.Now()
			n.mark("the job role lets go of the fence of %s", job)
		}
		return 0
	}}}
	if victim != "" {
		steps = append(steps, faultStep{after: time.Second, do: func() time.Duration {
			n.start(victim)
			n.mark("%s restarted", victim)
			return 0
		}})
	}
	return &fault{
		what:  what,
		holds: holds,
		inject: func() {
			var err error
			if conn, tx, err = n.holdFence(job); err != nil {
				conn = nil
				n.mark("the job role holds nothing: %v", err)
			} else {
				held = len(n.holds)
				n.holds = append(n.holds, fenceHold{job: job, from: time.Now(), takeover: victim != "", fault: rec})
			}
			if victim != "" {
				n.proc(victim).kill()
				n.replicaDown(victim, true)
			}
		},
		steps: steps,
	}
}

// poison runs sql as the job role: a success is a violation; a refusal is what must happen; any
// other error (Postgres restarting) means the attempt was not made.
func (n *nemesis) poison(sql string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := adminExec(ctx, n.role, sql)
	var pe *pgconn.PgError
	switch {
	case err == nil:
		n.violation(fmt.Sprintf("the job role was let through: %s", sql))
	case errors.As(err, &pe) && (pe.Code == "42501" || pe.Code == "JF001"):
		n.poisonRefused++
		n.mark("refused: %s (SQLSTATE %s)", pe.Message, pe.Code)
	default:
		n.mark("not tried: %v", err)
	}
}

// holdFence opens a transaction as the job role and enters job's fence with its current token,
// read by the table's owner, as a job's own run would; the transaction is left open.
func (n *nemesis) holdFence(job string) (*pgx.Conn, pgx.Tx, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var token int64
	if err := n.d.db.QueryRow(ctx, `SELECT token FROM scheduler.job_fence WHERE job = $1`, job).Scan(&token); err != nil {
		return nil, nil, fmt.Errorf("read the fence of %s: %w", job, err)
	}
	conn, err := pgx.Connect(ctx, n.role)
	if err != nil {
		return nil, nil, fmt.Errorf("connect as the job role: %w", err)
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, fmt.Sprintf("SELECT scheduler.fence_verify('%s', %d)", job, token))
	}
	if err != nil {
		_ = conn.Close(context.Background())
		return nil, nil, fmt.Errorf("fence_verify of %s with token %d: %w", job, token, err)
	}
	n.mark("the job role holds the fence of %s at token %d", job, token)
	return conn, tx, nil
}

// holdsJudged returns the fence holds with the term that took over while each lasted, when
// that term led, its replica up, from its win to catchUpWithin after the hold ended: only then
// must the job have been caught up by it.
func (n *nemesis) holdsJudged() []heldFence {
	var out []heldFence
	terms := n.terms()
	for _, h := range n.holds {
		to := h.to
		if to.IsZero() {
			to = n.stopped
		}
		hf := heldFence{fenceHold: h}
		hf.to = to
		for _, tm := range terms {
			if tm.won.Before(h.from) || !tm.won.Before(to) {
				continue
			}
			hf.takeovers = append(hf.takeovers, takeover{token: tm.token, won: tm.won})
			until := to.Add(catchUpWithin)
			if !tm.ended.IsZero() && tm.ended.Before(until) {
				continue
			}
			if n.wasDown(tm.node, tm.won, until) {
				continue
			}
			hf.term = tm.token
			hf.won = tm.won
			// A slot due well inside the term's part of the hold once its raise has narrowed,
			// with no other fault in force: the other jobs must have run it.
			narrowed := tm.won.Add(2*fenceRaiseTimeout + time.Second)
			slot := narrowed.Truncate(nemesisEvery)
			if slot.Before(narrowed) {
				slot = slot.Add(nemesisEvery)
			}
			hf.narrowJudged = !slot.After(to.Add(-1500*time.Millisecond)) && !n.otherFault(h.fault, tm.won, to)
		}
		out = append(out, hf)
	}
	return out
}

// catchUpWithin is how soon after a held fence is let go the term that took over meanwhile must
// have started a run of the job: its next slots, with room for the store's faults in between.
const catchUpWithin = 4 * nemesisEvery

// heldFence is a fence hold, the terms won while it lasted and the term judged against it (0:
// none).
type heldFence struct {
	fenceHold
	takeovers []takeover
	term      int64
	won       time.Time
	// narrowJudged says a slot fell due while the term led during the hold, with no other
	// fault in force, so that it must have run the other jobs meanwhile.
	narrowJudged bool
}

// takeover is a term won while a fence was held.
type takeover struct {
	token int64
	won   time.Time
}

// otherFault reports whether a fault other than faults[self] was in force between from and to.
func (n *nemesis) otherFault(self int, from, to time.Time) bool {
	for i, f := range n.faults {
		fto := f.to
		if fto.IsZero() {
			fto = n.stopped
		}
		if i != self && f.from.Before(to) && fto.After(from) {
			return true
		}
	}
	return false
}

// wasDown reports whether node was frozen or not running at some time between from and to.
func (n *nemesis) wasDown(node string, from, to time.Time) bool {
	for _, iv := range n.down[node] {
		if iv.from.Before(to) && iv.to.After(from) {
			return true
		}
	}
	if iv, ok := n.downSince[node]; ok && iv.from.Before(to) {
		return true
	}
	return false
}
