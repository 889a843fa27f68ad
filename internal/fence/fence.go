package fence

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// Retry policy for serialization failures and deadlocks.
const (
	maxAttempts  = 4
	retryBackoff = 20 * time.Millisecond
)

// Fenced runs fn inside one transaction fenced with token for job, and
// commits it if fn returns nil and the fence let it in.
//
// The fence is entered before fn's first statement runs. An equal token
// shares the fence with other writers of the same token, so they run in
// parallel (on Postgres). A token newer than the fence raises it first,
// waiting for every in-flight transaction with an older token. An older
// token is refused: Fenced returns a *scheduler.FenceError (errors.Is(err, ErrStale))
// and nothing commits. On Postgres the fence travels in the same round trip
// as fn's first statement, so fn is called before the verdict and its
// statements then fail with that error; on SQLite fn is not called. In
// both cases the verdict is returned even if fn drops the error.
//
// fn may be called more than once: after a raise, and after a serialization
// failure or deadlock (SQLSTATE 40001, 40P01), up to 4 times in all. It must
// not keep tx or use it concurrently, and must not call the Store's write
// methods (on SQLite they would wait for fn's own transaction). fn's own
// errors are returned as they are. A raise that waits longer than Config.RaiseTimeout fails with
// ErrRaiseTimeout.
func (s *Store) Fenced(ctx context.Context, job string, token int64, fn func(ctx context.Context, tx scheduler.Tx) error) error {
	if err := checkJobToken(job, token); err != nil {
		return fmt.Errorf("fenced write: %w", err)
	}
	in := func(tx scheduler.Tx) error { return fn(ctx, tx) }
	return s.retry(ctx, job, token, func() error { return s.b.Fenced(ctx, job, token, in) })
}

// RaiseAll raises the fence of every job in jobs to token, waiting for the
// in-flight writers with older tokens; a new leader calls it before it runs
// anything, so that once it returns no write from an earlier term can
// commit. Jobs whose fence already equals token are left alone.
//
// If a stored fence is above token it fails with a *scheduler.FenceError
// (errors.Is(err, ErrTokenRegressed)) and raises nothing, unless the higher
// fence appeared while it was raising. Called right after
// winning the election and confirming the leader key, that can only mean
// etcd's revisions went backwards; the error says how to repair it. Each
// job's raise waits at most Config.RaiseTimeout (ErrRaiseTimeout).
func (s *Store) RaiseAll(ctx context.Context, jobs []string, token int64) error {
	if len(jobs) == 0 {
		return nil
	}
	for _, j := range jobs {
		if err := checkJobToken(j, token); err != nil {
			return fmt.Errorf("raise fences: %w", err)
		}
	}
	jobs = slices.Clone(jobs)
	slices.Sort(jobs)
	jobs = slices.Compact(jobs)
	fences, err := s.b.Fences(ctx, jobs)
	if err != nil {
		return fmt.Errorf("raise fences of %d jobs to %d: %w", len(jobs), token, err)
	}
	if err := s.checkRegression(jobs, fences, token); err != nil {
		return err
	}
	// Chunks bound the locks one transaction holds, which share the server's
	// lock table with every other session; BENCHMARKS.md has the sizes tried.
	const chunk = 256
	return inBatches(jobs, chunk, func(part []string) error {
		fences, err := retried(ctx, s, part[0], token, func() (map[string]int64, error) { return s.b.Raise(ctx, part, token) })
		if err != nil {
			return fmt.Errorf("raise fences of %d jobs to %d: %w", len(part), token, err)
		}
		return s.checkRegression(part, fences, token)
	})
}

// checkRegression returns a regression error (a *scheduler.FenceError)
// naming the highest fence above token, if any.
func (s *Store) checkRegression(jobs []string, fences map[string]int64, token int64) error {
	worst, fence := "", int64(0)
	for _, j := range jobs {
		if f := fences[j]; f > token && (worst == "" || f > fence) {
			worst, fence = j, f
		}
	}
	if worst == "" {
		return nil
	}
	return regressionError(worst, token, fence, s.b.ResetHint())
}

// CheckToken reports a regression error if any stored fence is above token,
// without raising anything. A replica can call it before campaigning.
func (s *Store) CheckToken(ctx context.Context, token int64) error {
	fences, err := s.b.Fences(ctx, nil)
	if err != nil {
		return fmt.Errorf("check token %d against fences: %w", token, err)
	}
	jobs := make([]string, 0, len(fences))
	for j := range fences {
		jobs = append(jobs, j)
	}
	slices.Sort(jobs)
	return s.checkRegression(jobs, fences, token)
}

// Fences returns the stored fence of each job in jobs, or of every job when
// jobs is empty. A job that never had a fence is absent from the map.
func (s *Store) Fences(ctx context.Context, jobs ...string) (map[string]int64, error) {
	fences, err := s.b.Fences(ctx, jobs)
	if err != nil {
		return nil, fmt.Errorf("read fences: %w", err)
	}
	return fences, nil
}

// ResetFence removes job's fence so that any token is accepted again. It is
// an operator's tool for a deliberately rebuilt etcd whose revisions cannot
// be bumped (see ErrTokenRegressed); never call it while a replica runs. It
// waits for the job's in-flight writers first.
func (s *Store) ResetFence(ctx context.Context, job string) error {
	if job == "" {
		return errors.New("reset fence: empty job name")
	}
	if err := s.b.ResetFence(ctx, job); err != nil {
		return fmt.Errorf("reset fence of job %q: %w", job, err)
	}
	s.lg.Warn("fence reset", zap.String("job", job))
	return nil
}

// retry runs op until it succeeds, fails with an error that is not a
// serialization failure or deadlock, or has run maxAttempts times.
func (s *Store) retry(ctx context.Context, job string, token int64, op func() error) error {
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil || attempt == maxAttempts || !s.b.Retryable(err) {
			return err
		}
		s.lg.Debug("fenced transaction retried", zap.String("job", job), zap.Int64("token", token),
			zap.Int("attempt", attempt), zap.Error(err))
		d := retryBackoff<<(attempt-1) + rand.N(retryBackoff)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// retried is retry for an op that returns a value.
func retried[T any](ctx context.Context, s *Store, job string, token int64, op func() (T, error)) (T, error) {
	var v T
	err := s.retry(ctx, job, token, func() (err error) {
		v, err = op()
		return err
	})
	return v, err
}

// inBatches calls op with successive parts of items of at most size items,
// and stops at the first error.
func inBatches[T any](items []T, size int, op func(part []T) error) error {
	for lo := 0; lo < len(items); lo += size {
		if err := op(items[lo:min(lo+size, len(items))]); err != nil {
			return err
		}
	}
	return nil
}

func checkJobToken(job string, token int64) error {
	if job == "" {
		return errors.New("empty job name")
	}
	if token <= 0 {
		return fmt.Errorf("job %q: token %d: want > 0", job, token)
	}
	return nil
}
