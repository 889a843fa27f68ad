package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"scheduler/internal/lease"
)

// errNotConfirmed says that Campaign returned but the ownership check
// failed: our key was gone or a key older than ours existed.
var errNotConfirmed = errors.New("campaign returned without leadership")

// requestTimeout bounds a single etcd request of a round (grant, ownership
// check) so that a round against an unreachable cluster ends, is logged and
// is retried.
func requestTimeout(ttl time.Duration) time.Duration {
	return max(ttl, 2*time.Second)
}

// round runs one campaign round on a new lease: grant, campaign, confirm,
// lead, resign, revoke. It returns how long lead ran (zero when the round
// never led), or an error when it ended before leading for any reason but
// ctx.
func (c *Campaigner) round(ctx context.Context, lead LeadFunc) (time.Duration, error) {
	granted := c.cfg.Now()
	gctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), requestTimeout(c.cfg.TTL))
	g, err := c.cli.Grant(gctx, int64(c.cfg.TTL/time.Second))
	cancel()
	if err != nil {
		return 0, fmt.Errorf("grant lease of %v: %w", c.cfg.TTL, err)
	}
	ttl := time.Duration(g.TTL) * time.Second
	margin := c.cfg.Margin
	if margin == 0 {
		margin = defaultMargin(ttl)
	}
	lg := c.lg.With(zap.String("lease", fmt.Sprintf("%x", int64(g.ID))))

	// guard is the parent of the campaign and of the term: cancelled, with
	// a *LostError cause, the moment the lease or the key is in doubt.
	guard, lose := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	r := newRenewer(c.cli.Lease, g.ID, granted, ttl, margin, c.cfg.Now, c.cfg.Events.OnRenewed, lg)
	wg.Go(func() { r.run(guard, lose) })

	var (
		sess *concurrency.Session
		el   *concurrency.Election
		led  bool
	)
	defer func() {
		lose(context.Canceled)
		wg.Wait()
		c.release(ctx, lg, sess, el, led, g.ID, ttl)
	}()

	// Campaign cleans up after a cancelled wait with Resign(client.Ctx()),
	// which blocks for as long as etcd is unreachable. Giving the session a
	// view of the client whose context is guard keeps that cleanup from
	// outliving the round; release revokes the lease instead, which deletes
	// the key. The view shares the client's connection: never Close it.
	view := clientv3.NewCtxClient(guard, clientv3.WithZapLogger(c.cli.GetLogger()))
	view.KV, view.Lease, view.Watcher = c.cli.KV, c.cli.Lease, c.cli.Watcher
	sess, err = concurrency.NewSession(view,
		concurrency.WithLease(g.ID),
		concurrency.WithTTL(int(g.TTL)),
		concurrency.WithContext(clientv3.WithRequireLeader(guard)))
	if err != nil {
		return 0, fmt.Errorf("session on lease %x: %w", int64(g.ID), err)
	}
	wg.Go(func() {
		select {
		case <-sess.Done():
			lose(c.lost(ReasonSessionDone))
		case <-guard.Done():
		}
	})

	el = concurrency.NewElection(sess, c.cfg.Prefix)
	// A lease-less key before ours would keep Campaign waiting forever:
	// remove such keys while it waits (see sweep).
	sweepCtx, stopSweep := context.WithCancel(guard)
	sweepKey, sweepLog := fmt.Sprintf("%s/%x", c.cfg.Prefix, int64(g.ID)), lg // lg gains the token below
	wg.Go(func() { c.sweep(sweepCtx, sweepKey, sweepLog) })
	// With WithRequireLeader, a member that lost its quorum ends the
	// campaign's watch instead of leaving it silent.
	err = el.Campaign(clientv3.WithRequireLeader(guard), c.cfg.Node)
	stopSweep()
	if err != nil {
		if ctx.Err() == nil && guard.Err() != nil {
			err = context.Cause(guard)
		}
		return 0, fmt.Errorf("campaign on lease %x: %w", int64(g.ID), err)
	}
	term, watchFrom, err := c.confirm(guard, sess, el, r)
	if err != nil {
		return 0, err
	}
	wg.Go(func() { c.watchKey(guard, term, watchFrom, lose) })

	led = true
	lg = lg.With(zap.Int64("token", term.Token))
	c.setLeading(&term)
	if c.cfg.Events.OnElected != nil {
		c.cfg.Events.OnElected(term)
	}
	lg.Info("campaign won", zap.Time("deadline", r.deadline()))

	leadErr := lead(guard, term)

	reason := lease.TermReason(ctx, guard, leadErr)
	lose(c.lost(reason))
	held := c.cfg.Now().Sub(term.Since)
	c.setLeading(nil)
	if c.cfg.Events.OnLost != nil {
		c.cfg.Events.OnLost(term, reason)
	}
	fields := []zap.Field{zap.String("reason", string(reason)), zap.Duration("held", held)}
	if leadErr != nil {
		fields = append(fields, zap.Error(leadErr))
	}
	if reason.Expected() {
		lg.Info("leadership ended", fields...)
	} else {
		lg.Warn("leadership ended", fields...)
	}
	return held, nil
}

// confirm checks, in one transaction after Campaign returned, that our key
// still exists with the revision Campaign reported and that no older key
// is left under the prefix. Campaign does not check that itself: it can
// return nil after our key was deleted while it waited. The same
// transaction publishes the term's start time (see termKey). It returns the
// term and the revision from which to watch our key.
func (c *Campaigner) confirm(ctx context.Context, sess *concurrency.Session, el *concurrency.Election, r *renewer) (Term, int64, error) {
	term := Term{
		Token: el.Rev(),
		Node:  c.cfg.Node,
		Since: c.cfg.Now(),
		Key:   el.Key(),
		Lease: int64(sess.Lease()),
	}
	rec, err := encodeTermRecord(term)
	if err != nil {
		return Term{}, 0, err
	}
	cctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), requestTimeout(c.cfg.TTL))
	defer cancel()
	resp, err := c.cli.Txn(cctx).If(
		clientv3.Compare(clientv3.CreateRevision(term.Key), "=", term.Token),
		clientv3.Compare(clientv3.CreateRevision(c.cfg.Prefix+"/"), ">", term.Token-1).WithPrefix(),
	).Then(
		clientv3.OpPut(termKey(c.cfg.Prefix), rec, clientv3.WithLease(sess.Lease())),
	).Else(
		clientv3.OpGet(term.Key, clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return Term{}, 0, fmt.Errorf("confirm leadership of %s at revision %d: %w", term.Key, term.Token, err)
	}
	if !resp.Succeeded {
		why := "an older candidate key exists"
		if len(resp.Responses[0].GetResponseRange().GetKvs()) == 0 {
			why = "our key is gone"
		}
		return Term{}, 0, fmt.Errorf("confirm leadership of %s at revision %d: %s: %w", term.Key, term.Token, why, errNotConfirmed)
	}
	// The key existed when the transaction was applied, but a lease past
	// its expiry keeps its keys until the server's next expiry scan. Our
	// deadline lies before the earliest expiry the server can have, so as
	// long as it has not passed, the lease is alive.
	if now := c.cfg.Now(); !r.alive(now) {
		return Term{}, 0, &LostError{Reason: ReasonRenewalDeadline, At: now}
	}
	return term, resp.Header.Revision + 1, nil
}

// watchKey ends the term (lose) when our key is deleted, for instance by an
// operator, which Session.Done does not report; when it is written over with
// another lease or value, since a put by hand (`etcdctl put KEY VALUE`) unbinds
// it from our lease, so that it would outlive us and block every campaign while
// status reads no leader or another; or when the watch fails. With
// WithRequireLeader the server cancels the watch when its member loses the etcd
// leader.
func (c *Campaigner) watchKey(ctx context.Context, term Term, rev int64, lose func(error)) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range c.cli.Watch(wctx, term.Key, clientv3.WithRev(rev)) {
		if err := wr.Err(); err != nil {
			c.lg.Warn("leader key watch failed", zap.String("key", term.Key), zap.Error(err))
			lose(c.lost(ReasonWatchFailed))
			return
		}
		for _, ev := range wr.Events {
			switch {
			case ev.Type == mvccpb.DELETE:
				lose(c.lost(ReasonKeyDeleted))
				return
			case ev.Kv.Lease != term.Lease || string(ev.Kv.Value) != term.Node:
				c.lg.Error("leader key written over by hand; ending the term", zap.String("key", term.Key),
					zap.Int64("token", term.Token), zap.String("lease", fmt.Sprintf("%x", ev.Kv.Lease)),
					zap.String("value", ShownValue(string(ev.Kv.Value))))
				lose(c.lost(ReasonKeyOverwritten))
				return
			}
		}
	}
	if ctx.Err() == nil {
		lose(c.lost(ReasonWatchFailed))
	}
}

// release ends a round: resign if it led, so that the next candidate takes
// over at once instead of after the TTL, then stop the session and revoke
// the lease, which also deletes any key a failed Campaign left behind. It
// runs on a fresh context (ctx may be cancelled: shutdown) bounded by the
// TTL, after which the lease has expired anyway.
func (c *Campaigner) release(ctx context.Context, lg *zap.Logger, sess *concurrency.Session, el *concurrency.Election,
	led bool, id clientv3.LeaseID, ttl time.Duration) {
	rctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.WithoutCancel(ctx)), ttl)
	defer cancel()
	if led {
		// Resign forgets the key even when its request fails, so it is
		// not retried; the revoke below deletes the key as well.
		if err := el.Resign(rctx); err != nil {
			lg.Warn("resign", zap.Error(err))
		}
	}
	if sess != nil {
		sess.Orphan()
	}
	if _, err := c.cli.Revoke(rctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		lg.Warn("revoke lease", zap.Error(err))
	}
}
