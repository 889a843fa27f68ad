package fence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"scheduler"
)

// The ordering checks below prove orderings, not just outcomes: each parks
// one transaction inside its fence, waits until the other side is seen
// waiting for a lock (or finishing), and only then lets the first go. They
// return a description of the violation instead of failing the test, so the
// trap tests can run them against broken fence variants and expect one.

// events is an ordered log of what the goroutines of a check did.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(ev string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
}

// before reports whether a was logged, and logged before b (or b never was).
func (e *events) before(a, b string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ia, ib := slices.Index(e.list, a), slices.Index(e.list, b)
	return ia >= 0 && (ib < 0 || ia < ib)
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.list, " → ")
}

// probeTable is written by the checks' transactions; a row proves a commit.
const probeTable = `CREATE TABLE IF NOT EXISTS fence_probe (job text NOT NULL, token bigint NOT NULL, note text NOT NULL)`

func ensureProbe(ctx context.Context, s *Store) error {
	return s.Fenced(ctx, "probe-setup", 1, func(_ context.Context, tx scheduler.Tx) error {
		_, err := tx.Exec(ctx, probeTable)
		return err
	})
}

func insertProbe(ctx context.Context, tx scheduler.Tx, job string, token int64, note string) error {
	_, err := tx.Exec(ctx, `INSERT INTO fence_probe (job, token, note) VALUES ($1, $2, $3)`, job, token, note)
	return err
}

// probes counts the rows of job with token and note.
func probes(ctx context.Context, s *Store, job string, token int64, note string) (int, error) {
	var n int
	err := s.Fenced(ctx, "probe-setup", 1, func(_ context.Context, tx scheduler.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM fence_probe WHERE job = $1 AND token = $2 AND note = $3`,
			job, token, note).Scan(&n)
	})
	return n, err
}

// checkRaiseWaits proves that a raise of job from old to a newer token
// waits for a writer that entered the fence with old and is still inside
// its transaction: the writer parks, the raise starts and must be seen
// waiting, the writer is released and commits, and only then may the raise
// return. Afterwards old is refused. raise is done by raiser (RaiseAll, or a
// fenced write with the newer token).
func checkRaiseWaits(ctx context.Context, writer, raiser *Store, job string, old int64, raise func(context.Context) error) error {
	if err := ensureProbe(ctx, writer); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := writer.Fenced(ctx, job, old, func(context.Context, scheduler.Tx) error { return nil }); err != nil {
		return fmt.Errorf("setup: fence at %d: %w", old, err)
	}
	var (
		ev       events
		once     sync.Once
		release  = make(chan struct{})
		released atomic.Bool
	)
	wErr, err := untilEntered(func(entered func()) error {
		err := writer.Fenced(ctx, job, old, func(_ context.Context, tx scheduler.Tx) error {
			// The first statement enters the fence.
			if err := insertProbe(ctx, tx, job, old, "in-flight"); err != nil {
				return err
			}
			once.Do(func() { ev.add("writer entered"); entered() })
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		})
		ev.add("writer returned")
		return err
	})
	if err != nil {
		return fmt.Errorf("writer with token %d did not enter: %v", old, err)
	}

	base, err := lockWaiters(ctx, raiser)
	if err != nil {
		return err
	}
	rErr, rDone := inBackground(func() error {
		err := raise(ctx)
		ev.add("raise returned")
		return err
	})
	blocked, err := awaitBlocked(ctx, raiser, base, rDone)
	if err != nil {
		close(release)
		return fmt.Errorf("waiting for the raise to block: %w (events: %s)", err, &ev)
	}
	ev.add("writer released")
	released.Store(true)
	close(release)
	we, re := <-wErr, <-rErr
	switch {
	case !blocked:
		return fmt.Errorf("the raise returned (err %v) while a writer with token %d was still inside its transaction: it did not wait (events: %s)", re, old, &ev)
	case !ev.before("writer released", "raise returned"):
		return fmt.Errorf("the raise returned before the in-flight writer was released (events: %s)", &ev)
	case we != nil:
		return fmt.Errorf("the in-flight writer entered before the raise but failed to commit: %v", we)
	case re != nil:
		return fmt.Errorf("the raise failed: %v", re)
	}
	if n, err := probes(ctx, raiser, job, old, "in-flight"); err != nil || n != 1 {
		return fmt.Errorf("the in-flight writer's row: count %d, err %v; want 1", n, err)
	}
	late := writer.Fenced(ctx, job, old, func(_ context.Context, tx scheduler.Tx) error { return insertProbe(ctx, tx, job, old, "late") })
	if !errors.Is(late, ErrStale) {
		return fmt.Errorf("write with token %d after the raise: err %v, want ErrStale", old, late)
	}
	return nil
}

// checkSameToken proves the store's ParallelWriters claim for two writers
// with the same token: if it claims parallel writers, both are inside their
// transactions at once (each waits for the other to enter, which would
// deadlock until ctx ends if they were serialized); if not, the second waits
// until the first has committed.
func checkSameToken(ctx context.Context, t *testing.T, s *Store, job string, token int64) error {
	if err := s.Fenced(ctx, job, token, func(context.Context, scheduler.Tx) error { return nil }); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if s.ParallelWriters() {
		in := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
		errs := make(chan error, 2)
		for i := range 2 {
			go func() {
				var once sync.Once
				errs <- s.Fenced(ctx, job, token, func(_ context.Context, tx scheduler.Tx) error {
					if _, err := tx.Exec(ctx, `SELECT 1`); err != nil { // enters the fence
						return err
					}
					once.Do(func() { close(in[i]) })
					select {
					case <-in[1-i]: // the other writer is inside its transaction too
						return nil
					case <-ctx.Done():
						return fmt.Errorf("writer %d alone in the fence: writers with one token serialized: %w", i, ctx.Err())
					}
				})
			}()
		}
		return errors.Join(<-errs, <-errs)
	}

	var (
		ev      events
		release = make(chan struct{})
	)
	errs, err := untilEntered(func(entered func()) error {
		return s.Fenced(ctx, job, token, func(_ context.Context, tx scheduler.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
				return err
			}
			ev.add("first entered")
			entered()
			<-release
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("first writer did not enter: %w", err)
	}
	base, err := lockWaiters(ctx, s)
	if err != nil {
		return err
	}
	errs2, done2 := inBackground(func() error {
		return s.Fenced(ctx, job, token, func(_ context.Context, tx scheduler.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
				return err
			}
			ev.add("second entered")
			return nil
		})
	})
	blocked, err := awaitBlocked(ctx, s, base, done2)
	ev.add("first released")
	close(release)
	if err := errors.Join(err, <-errs, <-errs2); err != nil {
		return err
	}
	if !blocked || !ev.before("first released", "second entered") {
		return fmt.Errorf("store claims serial writers, but the second writer entered while the first was inside (events: %s)", &ev)
	}
	t.Logf("writers are serial on this backend, as claimed (events: %s)", &ev)
	return nil
}
