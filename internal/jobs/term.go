package jobs

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
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

	jobs  map[string]*jobState
	heap  fireHeap
	cmds  chan func()
	done  chan runDone
	runs  int // runs started and not yet reported done
	fence chan error

	runsCtx    context.Context
	cancelRuns context.CancelCauseFunc

	draining  bool
	drainIdle chan struct{} // closed when draining and no run is left
	exited    chan struct{} // closed when the loop has returned
	failures  int           // consecutive failed ledger writes in the loop
}

// jobState is what the loop knows of one job in this term.
type jobState struct {
	spec    *Spec
	active  map[int64]*activeRun
	queue   []pending // slots waiting for the current run (overlap queue, misfire all)
	entry   *fireEntry
	removed bool // dropped from the table by a reload; kept until its runs end
}

type activeRun struct {
	run    LedgerRun
	cancel context.CancelCauseFunc
}

// runDone reports the end of a run to the loop.
type runDone struct {
	job    string
	runID  int64
	fenced error // non-nil when the store refused the token
}

func newTerm(r *Runner, token int64) *term {
	return &term{
		r:      r,
		token:  token,
		lg:     r.lg.With(zap.Int64("token", token)),
		jobs:   map[string]*jobState{},
		cmds:   make(chan func()),
		done:   make(chan runDone),
		fence:  make(chan error, 1),
		exited: make(chan struct{}),
	}
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
	t.runsCtx, t.cancelRuns = context.WithCancelCause(context.WithoutCancel(ctx))
	defer func() {
		// Leadership is over (or in doubt): stop every run at once and wait for them. Their
		// ledger rows stay running, for the next leader to take over.
		t.cancelRuns(errTermEnded)
		for t.runs > 0 {
			t.runDone(<-t.done)
		}
	}()
	if err := t.takeOver(ctx, specs); err != nil {
		return err
	}
	for {
		var (
			timer  Timer
			timerC <-chan time.Time
		)
		if len(t.heap) > 0 && !t.draining {
			timer = t.r.clock.NewTimer(t.heap[0].at.Sub(t.r.clock.Now()))
			timerC = timer.C()
		}
		err := t.step(ctx, timerC)
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
	case <-timerC:
		return t.fireDue(ctx)
	}
	return nil
}

// takeOver raises every job's fence, then catches up on missed slots and seeds the timers.
func (t *term) takeOver(ctx context.Context, specs []*Spec) error {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
		t.jobs[s.Name] = &jobState{spec: s, active: map[int64]*activeRun{}}
	}
	if err := t.r.opts.Ledger.RaiseAll(ctx, names, t.token); err != nil {
		return fmt.Errorf("raise the fences of %d jobs to token %d: %w", len(names), t.token, err)
	}
	now := t.r.clock.Now()
	if err := t.catchUp(ctx, specs, now); err != nil {
		return err
	}
	for _, s := range specs {
		t.schedule(t.jobs[s.Name], now)
	}
	t.lg.Info("leading", zap.Int("jobs", len(specs)))
	return nil
}

// schedule puts the job's first slot firing after now on the heap.
func (t *term) schedule(js *jobState, now time.Time) {
	if !js.spec.Enabled || js.removed {
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
			js.entry = &fireEntry{at: at, slot: SlotKey{Job: js.spec.Name, At: sl.At}}
			heap.Push(&t.heap, js.entry)
			return
		}
		after = sl.At
	}
}

// scheduleAfter puts the job's slot following slot on the heap.
func (t *term) scheduleAfter(js *jobState, slot time.Time) {
	if !js.spec.Enabled || js.removed {
		return
	}
	if sl := js.spec.Schedule.Next(slot); !sl.At.IsZero() {
		js.entry = &fireEntry{at: js.spec.fireAt(sl.At), slot: SlotKey{Job: js.spec.Name, At: sl.At}}
		heap.Push(&t.heap, js.entry)
	}
}

// fireDue dispatches every slot whose time has come and schedules each job's next slot.
func (t *term) fireDue(ctx context.Context) error {
	now := t.r.clock.Now()
	var due []pending
	for len(t.heap) > 0 && !t.heap[0].at.After(now) {
		e := heap.Pop(&t.heap).(*fireEntry)
		js := t.jobs[e.slot.Job]
		if e.retry != nil {
			due = append(due, *e.retry)
			continue
		}
		if js == nil || js.entry != e {
			continue // superseded by a reload
		}
		js.entry = nil
		due = append(due, pending{slot: e.slot})
		t.scheduleAfter(js, e.slot.At)
	}
	return t.dispatch(ctx, due)
}

// dispatch applies pause and overlap to due slots, then starts the ones that should run.
func (t *term) dispatch(ctx context.Context, due []pending) error {
	var (
		start   []pending
		records []Outcome
	)
	starting := map[string]int{}
	for _, p := range due {
		js := t.jobs[p.slot.Job]
		if js == nil {
			continue
		}
		if !p.slot.Manual && p.orphan == nil && t.r.opts.Paused != nil && t.r.opts.Paused(js.spec.Name) {
			records = append(records, Outcome{Slot: p.slot, Status: StatusSkipped, Reason: "paused"})
			continue
		}
		if len(js.active)+starting[js.spec.Name] > 0 {
			switch js.spec.Overlap {
			case OverlapSkip:
				records = append(records, Outcome{Slot: p.slot, Status: StatusSkipped, Reason: "overlap: the previous run is still running"})
				continue
			case OverlapQueue:
				js.queue = append(js.queue, p)
				continue
			case OverlapReplace:
				for _, a := range js.active {
					a.cancel(errReplaced)
				}
			}
		}
		starting[js.spec.Name]++
		start = append(start, p)
	}
	if err := t.record(ctx, records); err != nil {
		return err
	}
	return t.start(ctx, start)
}

// record stores slots that end without running; a failure other than the fence is logged
// (the slots stay without a row, and a later leader records them missed).
func (t *term) record(ctx context.Context, outs []Outcome) error {
	if len(outs) == 0 {
		return nil
	}
	err := t.r.opts.Ledger.RecordMany(ctx, t.token, t.r.opts.Node, outs)
	if errors.Is(err, ErrFenced) {
		return t.fenced(outs[0].Slot.Job, err)
	}
	if err != nil {
		t.lg.Warn("record slots", zap.Int("slots", len(outs)), zap.Error(err))
		return nil
	}
	for _, o := range outs {
		t.lg.Info("slot recorded", zap.String("job", o.Slot.Job), zap.Time("slot", o.Slot.At), zap.String("status", string(o.Status)), zap.String("reason", o.Reason))
		if h := t.r.opts.Hooks.Recorded; h != nil {
			h(o.Slot.Job, o.Status)
		}
	}
	return nil
}

// start claims fresh slots in one batch and takes over orphans, then launches their runs. A
// ledger failure other than the fence puts the slots back to be retried shortly.
func (t *term) start(ctx context.Context, ps []pending) error {
	var fresh []SlotKey
	for _, p := range ps {
		if p.orphan != nil {
			if err := t.reclaim(ctx, *p.orphan); err != nil {
				return err
			}
			continue
		}
		fresh = append(fresh, p.slot)
	}
	if len(fresh) == 0 {
		return nil
	}
	claimed, err := t.r.opts.Ledger.ClaimMany(ctx, t.token, t.r.opts.Node, fresh)
	switch {
	case errors.Is(err, ErrFenced):
		return t.fenced(fresh[0].Job, err)
	case err != nil:
		t.retryLater(fresh, err)
		return nil
	}
	t.failures = 0
	for _, c := range claimed {
		switch {
		case c.Written:
			t.launch(c.Run)
		case c.Run.Status == StatusRunning && c.Run.Token < t.token:
			if err := t.reclaim(ctx, c.Run); err != nil {
				return err
			}
		default:
			t.lg.Info("slot already has a run", zap.String("job", c.Run.Slot.Job), zap.Time("slot", c.Run.Slot.At),
				zap.String("status", string(c.Run.Status)), zap.Int64("run_token", c.Run.Token))
		}
	}
	return nil
}

// reclaim takes over a run an older leader left running, and runs it again.
func (t *term) reclaim(ctx context.Context, orphan LedgerRun) error {
	run, err := t.r.opts.Ledger.Reclaim(ctx, t.token, t.r.opts.Node, orphan.Slot)
	switch {
	case errors.Is(err, ErrFenced):
		return t.fenced(orphan.Slot.Job, err)
	case err != nil:
		t.lg.Warn("take over run", zap.String("job", orphan.Slot.Job), zap.Time("slot", orphan.Slot.At), zap.Int64("run_id", orphan.RunID), zap.Error(err))
		return nil
	}
	t.lg.Info("run taken over", zap.String("job", run.Slot.Job), zap.Time("slot", run.Slot.At), zap.Int64("run_id", run.RunID),
		zap.Int64("old_token", orphan.Token), zap.Int("attempt", run.Attempt))
	t.launch(run)
	return nil
}

// retryLater puts slots whose claim failed back on the heap, with a growing delay.
func (t *term) retryLater(slots []SlotKey, err error) {
	t.failures++
	delay := min(retryDelay<<min(t.failures-1, 10), maxRetryDelay)
	t.lg.Warn("claim slots; retrying", zap.Int("slots", len(slots)), zap.Duration("in", delay), zap.Int("failures", t.failures), zap.Error(err))
	at := t.r.clock.Now().Add(delay)
	for _, s := range slots {
		p := pending{slot: s}
		heap.Push(&t.heap, &fireEntry{at: at, slot: s, retry: &p})
	}
}

// fenced reports that the store refused this term's token: the term must end.
func (t *term) fenced(job string, err error) error {
	if h := t.r.opts.Hooks.Fenced; h != nil {
		h(job)
	}
	return fmt.Errorf("job %q: the store refused token %d, a newer leader exists: %w", job, t.token, err)
}

// launch starts the run's goroutine.
func (t *term) launch(run LedgerRun) {
	js := t.jobs[run.Slot.Job]
	ctx, cancel := context.WithCancelCause(t.runsCtx)
	js.active[run.RunID] = &activeRun{run: run, cancel: cancel}
	t.runs++
	go func() {
		defer cancel(nil)
		t.done <- t.execute(ctx, js.spec, run)
	}()
}

// runDone removes a finished run and starts the next queued slot of its job.
func (t *term) runDone(d runDone) {
	t.runs--
	js := t.jobs[d.job]
	delete(js.active, d.runID)
	if d.fenced != nil {
		select {
		case t.fence <- t.fenced(d.job, d.fenced):
		default:
		}
	}
	if t.draining {
		if t.runs == 0 && t.drainIdle != nil {
			close(t.drainIdle)
			t.drainIdle = nil
		}
		return
	}
	if len(js.active) == 0 && len(js.queue) > 0 && t.runsCtx.Err() == nil {
		next := js.queue[0]
		js.queue = js.queue[1:]
		if err := t.start(t.runsCtx, []pending{next}); err != nil {
			select {
			case t.fence <- err:
			default:
			}
		}
	}
}

// drain stops firing; idle is closed once no run is left.
func (t *term) drain(idle chan struct{}) {
	t.draining = true
	t.heap = t.heap[:0]
	for _, js := range t.jobs {
		js.entry, js.queue = nil, nil
	}
	if t.runs == 0 {
		close(idle)
		return
	}
	t.drainIdle = idle
	t.lg.Info("draining", zap.Int("runs", t.runs))
}

// trigger starts the manual run of job at slot at.
func (t *term) trigger(job string, at time.Time) error {
	js := t.jobs[job]
	if js == nil || js.removed {
		return fmt.Errorf("trigger %q: no such job", job)
	}
	if t.draining {
		return fmt.Errorf("trigger %q: shutting down", job)
	}
	at = at.UTC().Truncate(time.Microsecond)
	t.lg.Info("manual run requested", zap.String("job", job), zap.Time("slot", at))
	return t.dispatch(t.runsCtx, []pending{{slot: SlotKey{Job: job, At: at, Manual: true}}})
}

// reload applies a new table: new jobs get their fences raised, changed ones new timers.
func (t *term) reload(specs []*Spec) {
	now := t.r.clock.Now()
	var added []string
	keep := map[string]bool{}
	for _, s := range specs {
		keep[s.Name] = true
		js := t.jobs[s.Name]
		if js == nil {
			added = append(added, s.Name)
			t.jobs[s.Name] = &jobState{spec: s, active: map[int64]*activeRun{}}
			continue
		}
		old := js.spec
		js.spec, js.removed = s, false
		if !sameTiming(old, s) || js.entry == nil {
			js.entry = nil // its heap entry is now stale and skipped
			t.schedule(js, now)
		}
	}
	for name, js := range t.jobs {
		if !keep[name] {
			js.removed, js.entry, js.queue = true, nil, nil
		}
	}
	if len(added) > 0 {
		if err := t.r.opts.Ledger.RaiseAll(t.runsCtx, added, t.token); err != nil {
			t.lg.Error("raise fences of new jobs; they will not run in this term", zap.Strings("jobs", added), zap.Error(err))
			for _, n := range added {
				t.jobs[n].removed = true
			}
		} else {
			for _, n := range added {
				t.schedule(t.jobs[n], now)
			}
		}
	}
	t.lg.Info("table reloaded", zap.Int("jobs", len(specs)), zap.Strings("added", added))
}
