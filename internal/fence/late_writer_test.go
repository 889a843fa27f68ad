package fence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/internal/fence/internal/postgres"
)

// raiseHold raises job's fence to newer in a transaction that stays open,
// holding the raise, until release is closed; it calls entered once the
// raise holds the fence, and returns when the transaction has committed.
type raiseHold func(ctx context.Context, job string, newer int64, entered func(), release <-chan struct{}) error

// holdRaise returns the raiseHold of s's backend. On SQLite a fenced write
// with the newer token raises inside its own transaction. On Postgres,
// Fenced raises in a short transaction of its own, so the raise is held the
// way a script holds it: fence_check as the first statement of an open
// transaction.
func holdRaise(s *Store) raiseHold {
	if p, ok := s.b.(*postgres.Backend); ok && p.EntersWith() == "" {
		return func(ctx context.Context, job string, newer int64, entered func(), release <-chan struct{}) error {
			tx, err := p.Pool().Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, `SELECT `+pgx.Identifier{p.Schema()}.Sanitize()+`.fence_check($1, $2)`, job, newer); err != nil {
				return err
			}
			entered()
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := insertProbe(ctx, postgres.WrapTx(tx), job, newer, "raiser"); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}
	}
	return func(ctx context.Context, job string, newer int64, entered func(), release <-chan struct{}) error {
		var once sync.Once
		return s.Fenced(ctx, job, newer, func(_ context.Context, tx scheduler.Tx) error {
			if err := insertProbe(ctx, tx, job, newer, "raiser"); err != nil {
				return err
			}
			once.Do(entered)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		})
	}
}

// checkLateWriter proves that a writer with an older token that arrives
// while a raise is in progress waits for it and then sees it: hold raises
// job from old to newer and keeps the raise open, the writer with old must
// be seen waiting, the raise commits, and the writer must then be refused
// without running its function. This is the check that a STABLE fence
// function (reading a snapshot older than its lock wait) fails. real is a
// store with the real fence, for the setup and the final count.
func checkLateWriter(ctx context.Context, real, writer *Store, hold raiseHold, job string, old, newer int64) error {
	if err := ensureProbe(ctx, real); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := real.Fenced(ctx, job, old, func(context.Context, scheduler.Tx) error { return nil }); err != nil {
		return fmt.Errorf("setup: fence at %d: %w", old, err)
	}
	var (
		ev      events
		release = make(chan struct{})
		wRan    atomic.Bool
	)
	rErr, err := untilEntered(func(entered func()) error {
		err := hold(ctx, job, newer, func() { ev.add("raise holds the fence"); entered() }, release)
		ev.add("raise committed")
		return err
	})
	if err != nil {
		return fmt.Errorf("raise to %d did not start: %v", newer, err)
	}
	base, err := lockWaiters(ctx, writer)
	if err != nil {
		return err
	}
	wErr, wDone := inBackground(func() error {
		err := writer.Fenced(ctx, job, old, func(_ context.Context, tx scheduler.Tx) error {
			if err := insertProbe(ctx, tx, job, old, "late"); err != nil {
				return err
			}
			wRan.Store(true)
			ev.add("late writer wrote")
			return nil
		})
		ev.add("late writer returned")
		return err
	})
	blocked, err := awaitBlocked(ctx, writer, base, wDone)
	ev.add("raise released")
	close(release)
	if err != nil {
		return fmt.Errorf("waiting for the late writer to block: %w (events: %s)", err, &ev)
	}
	re, we := <-rErr, <-wErr
	var se *scheduler.FenceError
	switch {
	case re != nil:
		return fmt.Errorf("the raise failed: %v (events: %s)", re, &ev)
	case !blocked:
		return fmt.Errorf("the writer with token %d did not wait for the raise in progress (err %v, events: %s)", old, we, &ev)
	case we == nil || wRan.Load():
		return fmt.Errorf("the writer with token %d wrote and committed (err %v) after the raise to %d committed (events: %s)", old, we, newer, &ev)
	case !errors.As(we, &se) || se.Fence != newer || se.Token != old || se.Job != job:
		return fmt.Errorf("late writer: err %v, want a FenceError{Job %q, Token %d, Fence %d}", we, job, old, newer)
	}
	if n, err := probes(ctx, real, job, old, "late"); err != nil || n != 0 {
		return fmt.Errorf("late writer's rows: %d (err %v), want 0", n, err)
	}
	return nil
}

// checkLateWriterDuringRaiseAll: RaiseAll of jobs a and b waits for an
// in-flight older writer of b, and an older writer of a arrives meanwhile;
// it must wait. With parallel writers (Postgres) RaiseAll raises job by job
// and already holds a's raise while it waits for b, so the late writer must
// be refused once RaiseAll commits. A serial store (SQLite) holds nothing
// while RaiseAll waits, so the late writer may also go first; then it must
// have written before RaiseAll returned.
func checkLateWriterDuringRaiseAll(ctx context.Context, s *Store, a, b string, old, newer int64) error {
	if err := ensureProbe(ctx, s); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := s.RaiseAll(ctx, []string{a, b}, old); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	var (
		ev      events
		release = make(chan struct{})
		lRan    atomic.Bool
	)
	bErr, err := untilEntered(func(entered func()) error {
		return s.Fenced(ctx, b, old, func(_ context.Context, tx scheduler.Tx) error {
			if err := insertProbe(ctx, tx, b, old, "in-flight"); err != nil {
				return err
			}
			entered()
			<-release
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("in-flight writer of %s did not enter: %v", b, err)
	}
	base, err := lockWaiters(ctx, s)
	if err != nil {
		return err
	}
	rErr, rDone := inBackground(func() error {
		err := s.RaiseAll(ctx, []string{a, b}, newer)
		ev.add("raise returned")
		return err
	})
	blocked, err := awaitBlocked(ctx, s, base, rDone)
	if err != nil || !blocked {
		close(release)
		return fmt.Errorf("RaiseAll did not wait for the writer of %s: blocked %v, err %v", b, blocked, err)
	}
	if base, err = lockWaiters(ctx, s); err != nil {
		return err
	}
	lErr, lDone := inBackground(func() error {
		return s.Fenced(ctx, a, old, func(_ context.Context, tx scheduler.Tx) error {
			if err := insertProbe(ctx, tx, a, old, "late"); err != nil {
				return err
			}
			lRan.Store(true)
			ev.add("late writer wrote")
			return nil
		})
	})
	blocked, err = awaitBlocked(ctx, s, base, lDone)
	ev.add("writer released")
	close(release)
	if err != nil {
		return err
	}
	be, re, le := <-bErr, <-rErr, <-lErr
	switch {
	case be != nil:
		return fmt.Errorf("in-flight writer of %s: %v", b, be)
	case re != nil:
		return fmt.Errorf("RaiseAll: %v", re)
	case !blocked:
		return fmt.Errorf("the late writer of %s did not wait for RaiseAll (err %v)", a, le)
	case le == nil && !s.ParallelWriters() && ev.before("late writer wrote", "raise returned"):
		return nil // it went first; RaiseAll then waited for it
	case le == nil || lRan.Load():
		return fmt.Errorf("the late writer of %s with token %d committed (err %v) although RaiseAll to %d committed first (events: %s)", a, old, le, newer, &ev)
	case !errors.Is(le, ErrStale):
		return fmt.Errorf("late writer: %v, want ErrStale", le)
	}
	return nil
}
