package jobs

import (
	"context"
	"errors"
	"slices"
	"time"

	"scheduler/internal/jobs/internal/refusal"

	"go.uber.org/zap"

	"scheduler"
)

// A refusal under a term etcd still confirms (Options.Confirm) is not a newer leader: tokens are
// etcd revisions, so etcd's revisions went backwards, or something outside the scheduler raised
// or holds that job's fence. Neither says anything of the other jobs; so only that job is
// blocked, and its fence is raised again at its slots, at least every blockedRetry, so that it
// runs again by itself once its fence is reset or let go.

// Block is a job the leader does not run because the store refuses its token for that job while
// etcd confirms the term.
type Block = refusal.Block

// BlockReason says why job is blocked and what to do, for logs, status pages and /readyz.
func BlockReason(job string, tok, fence int64) string { return refusal.BlockReason(job, tok, fence) }

// HeldReason says why job is held back and what to do, for logs, status pages and /readyz.
func HeldReason(job string, token int64) string { return refusal.HeldReason(job, token) }

// Blocked returns the jobs the current term has blocked, by name; none while following.
func (r *Runner) Blocked() []Block { return r.blocked.List() }

func (r *Runner) setBlocked(b Block, on bool) {
	r.blocked.Set(b, on)
	if h := r.opts.Hooks.Blocked; h != nil {
		h(b.Job, on)
	}
}

// blockState is what the loop knows of a job blocked in this tenure (jobState.blocked).
type blockState struct {
	retryAt time.Time // when the job's fence is raised again
	fence   int64     // the job's fence, as the store last reported it
	held    bool      // blocked because a transaction with an older token holds its fence
	raising bool      // a raise of the job's fence is in flight
	reason  string    // why the job is blocked, as Block.Reason
	catchUp bool      // blocked at takeover: its catch-up is due when it is unblocked
	fresh   bool      // added by a reload, its fence not yet raised (raiseAdded): not reported
	// closes are the job's runs that end without running, closed once it is unblocked: a close
	// written while it is blocked would be refused, or wait for its held fence.
	closes []scheduler.Completion
}

// refused settles a write the store refused for a job, or gave up for a fence another session
// holds: nil when the job is now blocked (held) and the term goes on, else the term's end.
// fallback names the job when the error does not.
func (t *tenure) refused(ctx context.Context, fallback string, err error) error {
	job, fence := refusal.Job(err, fallback)
	js := t.jobs[job]
	if js == nil || t.r.opts.Confirm == nil || t.ended {
		return t.fenced(job, err)
	}
	if js.blocked {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, t.r.opts.WriteTimeout)
	cerr := t.r.opts.Confirm(cctx, t.token)
	cancel()
	if cerr != nil {
		t.lg.Warn("fence refused and the term not confirmed; stepping down", zap.String("job", job),
			zap.Int64("fence", fence), zap.NamedError("refusal", err), zap.Error(cerr))
		return t.fenced(job, err)
	}
	t.block(js, fence, errors.Is(err, scheduler.ErrFenceHeld), err)
	return nil
}

// block stops firing js in this tenure: its slots are dropped from the queues, and its fence is
// raised again at its next slot. held: the raise of its fence gave up waiting for a transaction
// with an older token; else its fence is above the token (fence; 0 when the store did not say).
func (t *tenure) block(js *jobState, fence int64, held bool, err error) {
	now := t.r.clock.Now()
	if !js.blocked {
		js.blocked = true
		t.blocked = append(t.blocked, js)
	}
	if js.blk == nil {
		js.blk = &blockState{}
	}
	js.blk.fence, js.blk.held, js.blk.fresh = fence, held, false
	js.entry, js.queue = nil, nil
	js.blk.retryAt = t.nextRaise(js, now)
	b := Block{Job: js.spec.Name, Token: t.token, Fence: fence, Since: now, Held: held, Reason: BlockReason(js.spec.Name, t.token, fence)}
	if held {
		b.Reason = HeldReason(js.spec.Name, t.token)
	}
	js.blk.reason = b.Reason
	t.r.setBlocked(b, true)
	t.lg.Error("job blocked", zap.String("job", b.Job), zap.Int64("fence", fence), zap.Bool("held", held), zap.String("reason", b.Reason),
		zap.Time("retry_at", js.blk.retryAt), zap.Error(err))
}

// nextRaise is when a blocked job's fence is raised again (refusal.NextRaise).
func (t *tenure) nextRaise(js *jobState, now time.Time) time.Time {
	var slot time.Time
	if sl := js.spec.Schedule.Next(now); js.spec.Enabled && !sl.At.IsZero() {
		slot = js.spec.FireAt(sl.At)
	}
	return refusal.NextRaise(now, slot)
}

// blockedWake is the earliest time a blocked job's fence is to be raised again; zero: none.
func (t *tenure) blockedWake() time.Time {
	var at time.Time
	for _, js := range t.blocked {
		if js.blk.raising {
			continue // its answer wakes the loop
		}
		if at.IsZero() || js.blk.retryAt.Before(at) {
			at = js.blk.retryAt
		}
	}
	return at
}

// retryBlocked raises the fences of the blocked jobs whose time has come, each on a goroutine of
// its own (a held fence makes the raise wait up to its lock timeout, which must not hold up the
// loop); a job whose fence is reset (or no longer above the token) is unblocked and scheduled
// again when the answer comes.
func (t *tenure) retryBlocked(ctx context.Context, now time.Time) {
	for _, js := range slices.Clone(t.blocked) {
		if js.blk.raising || js.blk.retryAt.After(now) {
			continue
		}
		js.blk.raising = true
		name := js.spec.Name // js belongs to the loop: the goroutine reads nothing of it
		t.raises.Go(func() {
			wctx, cancel := context.WithTimeout(ctx, t.r.opts.WriteTimeout)
			err := t.r.opts.Ledger.RaiseAll(wctx, []string{name}, t.token)
			cancel()
			t.send(context.Background(), func() { t.raised(js, err) })
		})
	}
}

// raiseAdded raises the fences of jobs a reload added off the loop, so that a held fence or a
// slow store holds up no other job; each waits as a blocked job (unreported), raised again alone.
func (t *tenure) raiseAdded(names []string) {
	added, blks := make([]*jobState, len(names)), make([]*blockState, len(names))
	for i, n := range names {
		blks[i] = &blockState{fresh: true, raising: true, reason: refusal.AddedReason}
		added[i] = t.jobs[n]
		added[i].blocked, added[i].blk = true, blks[i]
		t.blocked = append(t.blocked, added[i])
	}
	t.raises.Go(func() {
		wctx, cancel := context.WithTimeout(t.claimCtx, t.r.opts.WriteTimeout)
		err := t.raiseAll(wctx, names)
		cancel()
		t.send(context.Background(), func() {
			for i, js := range added {
				if js.blk != blks[i] {
					continue // removed and added again since: a newer raise answers for it
				}
				if js.blk.raising, js.blk.retryAt = false, t.r.clock.Now(); err == nil {
					t.raised(js, nil)
				}
			}
		})
	})
}

// raised settles the raise of a blocked job's fence that retryBlocked or raiseAdded started.
func (t *tenure) raised(js *jobState, err error) {
	js.blk.raising = false
	if !js.blocked || t.ended {
		return
	}
	now := t.r.clock.Now()
	switch {
	case err == nil:
		t.unblock(js)
		t.lg.Info("fence raised to the token; the job runs", zap.String("job", js.spec.Name), zap.Bool("added", js.blk.fresh))
		js.blk.fresh = false
		cctx, cancel := context.WithTimeout(t.claimCtx, t.r.opts.WriteTimeout) // on the loop: bounded
		defer cancel()
		closes := js.blk.closes
		js.blk.closes = nil
		if cerr := t.closeRuns(cctx, closes); cerr != nil {
			t.end(cerr)
			return
		}
		if js.blk.catchUp {
			js.blk.catchUp = false
			if cerr := t.catchUp(cctx, []*Spec{js.spec}, now); errors.Is(cerr, scheduler.ErrFenced) {
				t.end(cerr)
				return
			} else if cerr != nil {
				t.lg.Error("catch-up of an unblocked job", zap.String("job", js.spec.Name), zap.Error(cerr))
			}
		}
		t.schedule(js, now)
	case errors.Is(err, scheduler.ErrFenced) && js.blk.fresh:
		// Settled as any refusal: etcd is asked whether the term holds before the job is blocked.
		t.unblock(js)
		if rerr := t.refused(t.claimCtx, js.spec.Name, err); rerr != nil {
			t.end(rerr)
		}
	case errors.Is(err, scheduler.ErrFenced) && js.blk.held:
		// The transaction ended, and the fence is now above the token.
		_, fence := refusal.Job(err, js.spec.Name)
		t.block(js, fence, false, err)
	case errors.Is(err, scheduler.ErrFenceHeld) && !js.blk.held:
		t.block(js, 0, true, err)
	default:
		js.blk.retryAt = t.nextRaise(js, now)
		fields := []zap.Field{zap.String("job", js.spec.Name), zap.Bool("held", js.blk.held), zap.Time("retry_at", js.blk.retryAt), zap.Error(err)}
		if errors.Is(err, scheduler.ErrFenced) || errors.Is(err, scheduler.ErrFenceHeld) {
			t.lg.Debug("job still blocked", fields...)
		} else {
			t.lg.Warn("raise the fence of a blocked job", fields...)
		}
	}
}

// unblock forgets that js is blocked.
func (t *tenure) unblock(js *jobState) {
	if !js.blocked {
		return
	}
	js.blocked, js.blk.held = false, false // blocked implies blk
	t.blocked = slices.DeleteFunc(t.blocked, func(x *jobState) bool { return x == js })
	t.r.setBlocked(Block{Job: js.spec.Name}, false)
}

// unblockAll forgets every block when the term ends: the next term raises the fences again.
func (t *tenure) unblockAll() {
	for _, js := range slices.Clone(t.blocked) {
		t.unblock(js)
	}
}

// isBlocked reports whether job is blocked in this term.
func (t *tenure) isBlocked(job string) bool {
	js := t.jobs[job]
	return js != nil && js.blocked
}

// withoutRefused is refusal.Without for a write of the tenure's: a refused job is blocked, or the
// tenure ends.
func withoutRefused[T any](ctx context.Context, t *tenure, items []T, jobOf func(T) string, err error, write func([]T) error) (rest []T, werr, end error) {
	ops := refusal.Ops{Refused: func(job string, err error) error { return t.refused(ctx, job, err) }, Blocked: t.isBlocked, Fenced: t.fenced}
	return refusal.Without(ops, items, jobOf, err, write)
}
