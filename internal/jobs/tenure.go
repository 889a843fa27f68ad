package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// Causes of a run's cancellation, told apart when the run ends.
var (
	errShutdown   = errors.New("shutdown grace expired")
	errReplaced   = errors.New("replaced by a newer slot (overlap: replace)")
	errTermEnded  = errors.New("leadership term ended")
	errRunTimeout = errors.New("attempt timed out")
)

// retryDelay is how long the firing loop waits before it retries a ledger write that failed
// for a reason other than the fence; it doubles up to maxRetryDelay.
const (
	retryDelay    = 500 * time.Millisecond
	maxRetryDelay = 30 * time.Second
)

// term is one leadership term: the firing loop and the runs it started. Its fields are owned
// by the loop goroutine; other goroutines reach it through send.
type term struct {
	r     *Runner
	token int64
	lg    *zap.Logger

	jobs     map[string]*jobState
	heap     fireHeap // slots to fire, by fire time
	cmds     chan func()
	done     chan runDone
	doneMany chan []runDone  // from the completer
	runs     int             // runs started and not yet reported done
	ended    bool            // the term is over: no run may start
	launched int             // runs started in the term
	started  []scheduler.Run // runs launched in this step, whose start lines logStarted writes
	// unstarted counts the runs launched whose goroutine has not reached its executor yet.
	unstarted atomic.Int64
	fence     chan error
	outcomes  *outcomeStop // stops the retries of outcome writes (outcome.go)

	// Claiming ahead (preclaim.go).
	ahead         time.Duration // Options.ClaimAhead; negative: slots are claimed when they fire
	queue         claimQueue    // scheduled slots not yet claimed
	pendingClaims [][]*fireEntry
	claiming      int // claim batches in flight
	claims        chan *claimBatch
	claimCtx      context.Context

	completer *completer     // nil when the Ledger has no CompleteMany
	marks     sync.WaitGroup // writes of runs started (started.go)
	raises    sync.WaitGroup // raises of blocked jobs' fences (blocked.go), joined by Lead

	// runsCtx carries the values of the term's context without its cancellation; the runs
	// and the writes made for them hang off it. Each run has its own runCancel (in
	// jobState.active), so starting one does not register it with a shared parent.
	runsCtx context.Context

	draining  bool
	drainIdle chan struct{} // closed when draining and no run is left
	exited    chan struct{} // closed when the loop has returned
	failures  int           // consecutive failed ledger writes in the loop
	held      []*fireEntry  // retries of slots whose claims failed (retryLater), some popped already
	heldAt    time.Time     // when they are retried, all together

	blocked []*jobState // jobs whose fence is above the token (blocked.go)
}

// jobState is what the loop knows of one job in this term.
type jobState struct {
	ord     int // the job's place in the term's table, which orders slots due together
	spec    *Spec
	active  []activeRun // runs in progress: few, usually none or one
	queue   []pending   // slots waiting for the current run (overlap queue, misfire all)
	entry   *fireEntry
	removed bool // dropped from the table by a reload; kept until its runs end

	blocked bool      // the store refuses the term's token for this job alone (blocked.go)
	retryAt time.Time // when a blocked job's fence is raised again
	fence   int64     // a blocked job's fence, as the store last reported it
	held    bool      // blocked because a transaction with an older token holds its fence
	raising bool      // a raise of a blocked job's fence is in flight (blocked.go)
	reason  string    // why the job is blocked, as Block.Reason
	catchUp bool      // blocked at takeover: its catch-up is due when it is unblocked

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
	cancel *runCancel
}

// runDone reports the end of a run to the loop.
type runDone struct {
	js     *jobState
	job    string
	runID  int64
	fenced error     // non-nil when the store refused the token
	out    *finished // the outcome and how its write went; nil for a run cut off
}

func newTerm(r *Runner, token int64) *term {
	t := &term{
		r:        r,
		token:    token,
		lg:       r.lg.With(zap.Int64("token", token)),
		jobs:     map[string]*jobState{},
		cmds:     make(chan func()),
		done:     make(chan runDone),
		doneMany: make(chan []runDone),
		fence:    make(chan error, 1),
		outcomes: newOutcomeStop(),
		exited:   make(chan struct{}),
		ahead:    r.opts.ClaimAhead,
		queue:    newClaimQueue(),
		claims:   make(chan *claimBatch, maxClaimsInFlight),
	}
	t.completer = newCompleter(t)
	return t
}

// send runs fn on the loop goroutine; false if the term has ended.
func (t *term) send(fn func()) bool {
	select {
	case t.cmds <- fn:
		return true
	case <-t.exited:
		return false
	}
}

func (t *term) run(ctx context.Context, specs []*Spec) (err error) {
	defer close(t.exited)
	// Cancelled once the loop's work is drained (defers run last first), so that the raises
	// of blocked jobs still in flight end with the term; Lead then joins them.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.claimCtx = ctx
	t.runsCtx = context.WithoutCancel(ctx)
	stopCompleter := make(chan struct{})
	var completerDone sync.WaitGroup
	completerDone.Go(func() { t.completer.run(stopCompleter) })
	defer func() {
		// Leadership is over (or in doubt): stop every run at once and wait for them, and for
		// the claims in flight. The ledger rows of runs cut off, and of slots claimed ahead,
		// stay running, for the next leader to take over.
		t.ended = true
		t.logStarted()
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
		return err
	}
	for {
		var (
			timer  Timer
			timerC <-chan time.Time
		)
		if wake := t.wake(); !wake.IsZero() {
			timer = t.r.clock.NewTimer(wake.Sub(t.r.clock.Now()))
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
func (t *term) step(ctx context.Context, timerC <-chan time.Time) error {
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

// wake is when the loop next has something to do on its own: fire the earliest slot, or claim
// slots ahead. Zero: nothing.
func (t *term) wake() time.Time {
	if t.draining {
		return time.Time{}
	}
	var at time.Time
	if len(t.heap) > 0 {
		at = t.heap.peek().at
	}
	if t.ahead >= 0 && len(t.queue.heap) > 0 {
		if _, w := t.queue.plan(t.r.clock.Now(), t.ahead); at.IsZero() || w.Before(at) {
			at = w
		}
	}
	if b := t.blockedWake(); !b.IsZero() && (at.IsZero() || b.Before(at)) {
		at = b
	}
	return at
}

// addJob adds a job of the table to the term.
func (t *term) addJob(s *Spec) {
	t.jobs[s.Name] = &jobState{ord: len(t.jobs), spec: s}
}

// schedule puts the job's first slot firing after now on the heap.
func (t *term) schedule(js *jobState, now time.Time) {
	if !js.spec.Enabled || js.removed || js.blocked {
		return
	}
	// Slots whose jittered fire time is still ahead may lie before now.
	after := now.Add(-js.spec.Jitter)
	for {
		sl := js.spec.Schedule.Next(after)
		if sl.At.IsZero() {
			return
		}
		if at := js.spec.fireAt(sl.At); at.After(now) {
			t.enqueue(js, &fireEntry{at: at, slot: scheduler.SlotKey{Job: js.spec.Name, At: sl.At}, js: js})
			return
		}
		after = sl.At
	}
}

// scheduleAfter puts the job's slot following slot on the heap.
func (t *term) scheduleAfter(js *jobState, slot time.Time) {
	if !js.spec.Enabled || js.removed || js.blocked {
		return
	}
	if sl := js.spec.Schedule.Next(slot); !sl.At.IsZero() {
		t.enqueue(js, &fireEntry{at: js.spec.fireAt(sl.At), slot: scheduler.SlotKey{Job: js.spec.Name, At: sl.At}, js: js})
	}
}

// enqueue makes e the job's next slot: in the claim queue, or on the fire heap when slots are
// claimed as they fire.
func (t *term) enqueue(js *jobState, e *fireEntry) {
	js.entry = e
	if t.ahead < 0 {
		t.heap.push(e)
		return
	}
	t.queue.push(e)
}

// fenced reports that the store refused this term's token: the term must end.
func (t *term) fenced(job string, err error) error {
	if h := t.r.opts.Hooks.Fenced; h != nil {
		h(job)
	}
	return fmt.Errorf("job %q: the store refused token %d, a newer leader exists: %w", job, t.token, err)
}

// launchYield is how many runs the loop starts before it lets them run: in a herd of short runs
// the loop would otherwise create every goroutine before the first one ran, and the memory of a
// herd would grow with its size instead of with the runs actually in progress.
const launchYield = 64

// launch starts the run's goroutine.
func (t *term) launch(js *jobState, run scheduler.Run) {
	if t.launched++; t.launched%launchYield == 0 {
		runtime.Gosched()
	}
	if js == nil {
		js = t.jobs[run.Job]
	}
	rc := &runCancel{}
	if t.ended {
		rc.do(errTermEnded)
	}
	js.active = append(js.active, activeRun{runID: run.RunID, cancel: rc})
	t.runs++
	t.started = append(t.started, run)
	t.unstarted.Add(1)
	// The spec is taken here, on the loop: a reload replaces js.spec while the run goes on.
	spec := js.spec
	go func() {
		d, f := t.execute(rc, spec, run)
		d.js = js
		if f != nil {
			f.done.js = js
		}
		if f == nil {
			t.done <- d
			return
		}
		t.completer.add(f)
	}()
}

// cancelRuns cancels every run of the term with cause, and gives up the outcome writes still
// being retried.
func (t *term) cancelRuns(cause error) {
	t.outcomes.stop()
	t.completer.poke()
	for _, js := range t.jobs {
		for _, a := range js.active {
			a.cancel.do(cause)
		}
	}
}

// runsDone is runDone for runs whose outcomes were written together; the slots queued behind
// them start together, in one claim.
func (t *term) runsDone(ds []runDone) {
	var next []pending
	for _, d := range ds {
		if p, ok := t.finishRun(d); ok {
			next = append(next, p)
		}
	}
	t.startQueued(next)
}

// runDone removes a finished run and starts the next queued slot of its job.
func (t *term) runDone(d runDone) {
	if p, ok := t.finishRun(d); ok {
		t.startQueued([]pending{p})
	}
}

// startQueued starts slots taken from their jobs' queues.
func (t *term) startQueued(ps []pending) {
	if len(ps) == 0 {
		return
	}
	if err := t.start(t.runsCtx, ps); err != nil {
		select {
		case t.fence <- err:
		default:
		}
	}
}

// finishRun removes a finished run and returns the next slot queued for its job, if it is to
// start now.
func (t *term) finishRun(d runDone) (pending, bool) {
	t.runs--
	js := d.js
	if js == nil {
		js = t.jobs[d.job]
	}
	if d.out != nil {
		t.logFinished(d.out)
	}
	if i := slices.IndexFunc(js.active, func(a activeRun) bool { return a.runID == d.runID }); i >= 0 {
		js.active = slices.Delete(js.active, i, i+1)
	}
	if d.fenced != nil {
		if err := t.refused(t.claimCtx, d.job, d.fenced); err != nil {
			select {
			case t.fence <- err:
			default:
			}
		}
	}
	if t.draining {
		if t.runs == 0 && t.drainIdle != nil {
			close(t.drainIdle)
			t.drainIdle = nil
		}
		return pending{}, false
	}
	if len(js.active) == 0 && len(js.queue) > 0 && !t.ended {
		next := js.queue[0]
		js.queue = js.queue[1:]
		return next, true
	}
	return pending{}, false
}

// maxStartWait bounds how long yieldToStarts holds back work that can wait.
const maxStartWait = 100 * time.Millisecond

// yieldToStarts lets the runs just launched reach their executors before the caller goes on
// with work that can wait (the next slots, log lines, outcome writes): on a busy machine that
// work would otherwise share the processors with a herd still starting. It yields until every
// launched run has started, or maxStartWait passed.
func (t *term) yieldToStarts() {
	var deadline time.Time
	for i := 0; t.unstarted.Load() > 0; i++ {
		if i%64 == 0 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(maxStartWait)
			} else if now.After(deadline) {
				return
			}
		}
		runtime.Gosched()
	}
}

// logStarted writes the start lines of the runs launched in this step. They are written after
// the step, when the runs have started, so that a herd does not wait for its own log lines; a
// run's end line is written when the loop hears of its end, always after.
func (t *term) logStarted() {
	if len(t.started) == 0 {
		return
	}
	t.yieldToStarts()
	t.markStarted(t.started)
	for i, run := range t.started {
		t.lg.Info("run started", zap.String("job", run.Job), zap.Time("slot", run.ScheduledAt), zap.Int64("run_id", run.RunID),
			zap.Int("attempt", max(run.Attempt, 1)))
		t.started[i] = scheduler.Run{}
	}
	t.started = t.started[:0]
	if cap(t.started) > maxKeptStarted {
		t.started = nil // a herd's worth: not kept until the next herd
	}
}

// maxKeptStarted bounds the capacity logStarted keeps between steps.
const maxKeptStarted = 4096
