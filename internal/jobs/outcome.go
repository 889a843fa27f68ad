package jobs

import (
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// A run whose executor returned has had its effects: running it again would repeat them. So the
// write of its outcome is retried, with a growing and jittered delay, for as long as the term
// lasts (on a shutdown, until the grace expires), and the run stays active meanwhile: its job's
// overlap policy still sees it, and a drain waits for it. Only when the term ends first is the
// run left running in the ledger, for the next leader, which runs the slot again: for effects the
// store cannot fence, the guarantee is at least once. The outcomes this process could not write
// are kept, so that if it leads again it writes them instead of running their slots again.
const (
	outcomeRetryDelay    = 250 * time.Millisecond
	maxOutcomeRetryDelay = 5 * time.Second
	maxUnwritten         = 4096 // outcomes kept for a later term of this process
)

// outcomeBackoff is the wait before the next write of an outcome after failures consecutive
// failed ones: doubled per failure, capped, and drawn from its upper half so that the runs cut
// off together do not retry together.
func outcomeBackoff(failures int) time.Duration {
	d := outcomeRetryDelay
	for i := 1; i < failures && d < maxOutcomeRetryDelay; i++ {
		d *= 2
	}
	d = min(d, maxOutcomeRetryDelay)
	return d/2 + rand.N(d/2+1)
}

// retryable reports whether the failed write of an outcome is to be tried again: the store did
// not answer, as opposed to refusing the token or finding the run finished.
func retryable(err error) bool {
	return err != nil && !errors.Is(err, scheduler.ErrFenced) && !errors.Is(err, scheduler.ErrNotRunning)
}

// outcomeStop ends the retries of outcome writes: closed when the term's runs are cancelled
// for good (the term ended, or the shutdown grace expired).
type outcomeStop struct {
	once sync.Once
	ch   chan struct{}
}

func newOutcomeStop() *outcomeStop { return &outcomeStop{ch: make(chan struct{})} }

func (s *outcomeStop) stop() { s.once.Do(func() { close(s.ch) }) }

func (s *outcomeStop) stopped() bool {
	select {
	case <-s.ch:
		return true
	default:
		return false
	}
}

// outcomeFailed logs a failed write of the outcomes of runs runs, f the first of them, that is
// tried again: one line per write, on the first failure and then every tenth, so that neither a
// herd nor a long outage floods the log.
func (t *term) outcomeFailed(f *finished, runs, failures int, wait time.Duration, err error) {
	if failures != 1 && failures%10 != 0 {
		return
	}
	t.lg.Warn("record run outcome; retrying", zap.String("job", f.c.Job), zap.Time("slot", f.slot), zap.Int64("run_id", f.c.RunID),
		zap.Int("attempt", f.attempt), zap.String("status", string(f.c.Status)), zap.Int("runs", runs),
		zap.Int("failures", failures), zap.Duration("in", wait), zap.Error(err))
}

// lost reports whether f's outcome was never written, and the next leader runs its slot again.
func (f *finished) lost() bool { return retryable(f.err) }

// keepUnwritten remembers the outcome of a run whose write was given up, for a later term of
// this process; past maxUnwritten, one kept before is dropped (its slot would run again).
func (r *Runner) keepUnwritten(f *finished) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unwritten == nil {
		r.unwritten = map[int64]scheduler.Completion{}
	}
	if len(r.unwritten) >= maxUnwritten {
		for id := range r.unwritten {
			delete(r.unwritten, id)
			break
		}
	}
	r.unwritten[f.c.RunID] = f.c
}

// takeUnwritten splits orphans into those to take over and the completions of those whose
// executors already returned in an earlier term of this process: these are written, not run
// again.
func (t *term) takeUnwritten(orphans []scheduler.Run) (rest []scheduler.Run, written []scheduler.Completion) {
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	if len(t.r.unwritten) == 0 {
		return orphans, nil
	}
	rest = orphans[:0:0]
	for _, o := range orphans {
		if c, ok := t.r.unwritten[o.RunID]; ok && c.Job == o.Job {
			delete(t.r.unwritten, o.RunID)
			written = append(written, c)
			continue
		}
		rest = append(rest, o)
	}
	return rest, written
}
