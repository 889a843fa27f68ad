package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/attempts"
	"scheduler/internal/jobs/internal/bounded"
	"scheduler/internal/jobs/internal/outcomes"
	"scheduler/internal/jobs/internal/runkey"
)

// Causes of a run's cancellation, told apart when the run ends (and attempts.ErrReplaced).
var (
	errShutdown  = errors.New("shutdown grace expired")
	errTermEnded = errors.New("leadership term ended")
)

// tenure is what the runner does with one leadership term (election's Term): its firing loop, the
// state of its slots and the runs it started. It is not named term because it is not the term
// election hands out but the runner's time in office under it, and ends with it.
//
// Its fields are owned by the loop goroutine; other goroutines reach it through send. The fields
// set before the loop starts (r, token, lg, attempts, claimCtx, runsCtx and the channels) are
// only read afterwards, which is why the goroutines a tenure starts may read them.
type tenure struct {
	r     *Runner
	token int64
	lg    *zap.Logger
	led   scheduler.Ledger // the runner's, the calls the loop waits for bounded (bounded.Ledger)

	jobs      map[string]*jobState
	heap      fireHeap // slots to fire, by fire time
	cmds      chan func()
	done      chan runDone
	doneMany  chan []runDone // from the completer
	runs      int            // runs started and not yet reported done
	ended     bool           // the term is over: no run may start
	started   runkey.Starts  // runs launched in this step, whose start lines logStarted writes
	unstarted atomic.Int64   // runs launched whose goroutine has not reached its executor yet
	launched  int            // runs launched, for launch's yield
	fence     chan error

	claimsAhead
	backlog

	attempts  attempts.Runner             // runs the attempts of the term's runs (attempt.go)
	completer *outcomes.Writer[*finished] // writes the outcomes of finished runs (completer.go)
	marks     sync.WaitGroup              // writes of runs started (started.go)
	raises    sync.WaitGroup              // raises of blocked jobs' fences (blocked.go), joined by Lead

	// runsCtx, the term's context's values without its cancellation, is the runs' and their
	// writes' (each run is cancelled by its own attempts.Cancel, in jobState.active).
	runsCtx context.Context

	draining  bool
	drainIdle chan struct{} // closed when draining and no run is left
	exited    chan struct{} // closed when the loop has returned
	blocked   []*jobState   // jobs whose fence is above the token (blocked.go)
	doubted   runkey.Slots  // slots whose claim or takeover failed on the store: maybe committed (ownClaim)
}

// jobState is what the loop knows of one job in this tenure.
type jobState struct {
	ord     int // the job's place in the term's table, which orders slots due together
	spec    *Spec
	active  []activeRun // runs in progress: few, usually none or one
	queue   []pending   // slots waiting for the current run (overlap queue, misfire all)
	entry   *fireEntry
	carried []*fireEntry // claims a reload kept, for slots after entry's (reload.go)
	removed bool         // dropped from the table by a reload; kept until its runs end
	blocked bool         // the store refuses the term's token for this job alone
	// blk is the job's block, set when it is first blocked and kept (blocked.go); out of line
	// because few jobs are ever blocked and every job holds a jobState.
	blk *blockState

	starting int // runs dispatch is about to start
	// Runs an older leader claimed ahead for slots still to come, by slot (Unix µs): when such
	// a slot fires without a claim of this term, it is taken over, or closed if it must not run.
	ahead map[int64]scheduler.Run
}

func (js *jobState) orphanAhead(r scheduler.Run) {
	if js.ahead == nil {
		js.ahead = map[int64]scheduler.Run{}
	}
	js.ahead[r.ScheduledAt.UnixMicro()] = r
}

type activeRun struct {
	runID  int64
	cancel *attempts.Cancel
	asked  bool // a manual or backfill run: a disabled job's still retries
}

// runDone reports the end of a run to the loop.
type runDone struct {
	js     *jobState
	job    string
	runID  int64
	fenced error     // non-nil when the store refused the token
	out    *finished // the outcome and how its write went; nil for a run cut off
}

func newTenure(r *Runner, token int64) *tenure {
	t := &tenure{
		r:           r,
		token:       token,
		lg:          r.lg.With(zap.Int64("token", token)),
		jobs:        map[string]*jobState{},
		cmds:        make(chan func()),
		done:        make(chan runDone),
		doneMany:    make(chan []runDone),
		fence:       make(chan error, 1),
		exited:      make(chan struct{}),
		claimsAhead: newClaimsAhead(r.opts.ClaimAhead),
		led:         bounded.Ledger{Ledger: r.opts.Ledger, Timeout: r.opts.WriteTimeout},
	}
	t.attempts = attempts.Runner{Clock: r.clock, Ledger: r.opts.Ledger, Token: token, Log: t.lg,
		MaxBackoff: r.opts.MaxBackoff, WriteTimeout: r.opts.WriteTimeout, Scrub: r.opts.Scrub, Live: r.opts.Live}
	t.completer = outcomes.New[*finished](r.clock, completer{t})
	return t
}

// send runs fn on the loop goroutine; false if the tenure ended or ctx did before the loop took fn.
func (t *tenure) send(ctx context.Context, fn func()) bool {
	select {
	case t.cmds <- fn:
		return true
	case <-t.exited:
		return false
	case <-ctx.Done():
		return false
	}
}

// end hands an error that ends the tenure to the loop, from a path that cannot return it.
func (t *tenure) end(err error) {
	select {
	case t.fence <- err:
	default:
	}
}

func (t *tenure) run(ctx context.Context, specs []*Spec) (err error) {
	defer close(t.exited)
	// Cancelled once the loop's work is drained (defers run last first), so that the raises
	// of blocked jobs still in flight end with the term; Lead then joins them.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.claimCtx = ctx
	t.runsCtx = context.WithoutCancel(ctx)
	stopCompleter := make(chan struct{})
	var completerDone sync.WaitGroup
	completerDone.Go(func() { t.completer.Run(stopCompleter) })
	defer func() {
		// Leadership is over (or in doubt): stop every run at once and wait for them, and for
		// the claims in flight. The ledger rows of runs cut off, and of slots claimed ahead,
		// stay running, for the next leader to take over.
		t.ended = true
		t.logStarted()
		// The moment the term stops: no run starts and no claim is sent after it. Outcomes
		// already being written may still land (fenced) while the runs and writes drain.
		t.lg.Info("stopped leading", zap.Int("runs", t.runs), zap.Int("claims", t.claiming))
		t.cancelRuns(errTermEnded)
		for t.runs > 0 || t.claiming > 0 {
			select {
			case d := <-t.done:
				t.runDone(d)
			case ds := <-t.doneMany:
				t.runsDone(ds)
			case <-t.claims:
				t.claiming--
			}
		}
		close(stopCompleter)
		completerDone.Wait()
		t.marks.Wait()
	}()
	err = t.takeOver(ctx, specs)
	t.logStarted()
	if err != nil {
		// A term ended while it was taking over ends like one ended later: without an error of
		// its own. A refusal stays one, whenever it came.
		if ctx.Err() != nil && !errors.Is(err, scheduler.ErrFenced) {
			return nil
		}
		return err
	}
	for {
		var (
			timer  Timer
			timerC <-chan time.Time
		)
		if wake := t.wake(); !wake.IsZero() {
			timer = t.r.clock.TimerAt(wake)
			timerC = timer.C()
		}
		err := t.step(ctx, timerC)
		t.logStarted()
		if timer != nil {
			timer.Stop()
		}
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// step waits for one event and handles it.
func (t *tenure) step(ctx context.Context, timerC <-chan time.Time) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-t.fence:
		return err
	case fn := <-t.cmds:
		fn()
	case d := <-t.done:
		t.runDone(d)
	case ds := <-t.doneMany:
		t.runsDone(ds)
	case b := <-t.claims:
		return t.claimed(ctx, b)
	case <-timerC:
		return t.fireDue(ctx)
	}
	return nil
}

// wake is when the loop next has something to do on its own: fire the earliest slot, claim
// slots ahead, or raise a blocked job's fence. Zero: nothing.
func (t *tenure) wake() time.Time {
	if t.draining {
		return time.Time{}
	}
	var at time.Time
	if t.heap.Len() > 0 {
		at = t.heap.Peek().at
	}
	if t.ahead >= 0 && t.queue.Len() > 0 {
		if _, w := t.queue.Plan(t.r.clock.Now(), t.ahead); at.IsZero() || w.Before(at) {
			at = w
		}
	}
	if b := t.blockedWake(); !b.IsZero() && (at.IsZero() || b.Before(at)) {
		at = b
	}
	return at
}

// fenced reports that the store refused this term's token: the tenure must end.
func (t *tenure) fenced(job string, err error) error {
	if h := t.r.opts.Hooks.Fenced; h != nil {
		h(job)
	}
	return fmt.Errorf("job %q: the store refused token %d, a newer leader exists: %w", job, t.token, err)
}
