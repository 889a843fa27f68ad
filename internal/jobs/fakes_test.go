package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"scheduler"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs/internal/clock"
)

// fakeClock is a Clock that moves only when the test advances it.
type fakeClock = clock.Fake

func newFakeClock(now time.Time) *fakeClock { return clock.NewFake(now) }

// fakeLedger is an in-memory Ledger with the store's fencing rules: a write whose token is
// older than the job's fence fails with ErrFenced.
type fakeLedger struct {
	mu     sync.Mutex
	fences map[string]int64
	runs   map[slotID]*scheduler.Run
	extra  map[int64]scheduler.Completion // what completed each run
	nextID int64
	claims int // ClaimMany calls
}

type slotID struct {
	job    string
	at     int64
	manual bool
}

func idOf(s scheduler.SlotKey) slotID { return slotID{s.Job, s.At.UnixMicro(), s.Manual} }

func newFakeLedger() *fakeLedger {
	return &fakeLedger{fences: map[string]int64{}, runs: map[slotID]*scheduler.Run{}, extra: map[int64]scheduler.Completion{}}
}

func (l *fakeLedger) check(job string, token int64) error {
	if token < l.fences[job] {
		return &scheduler.FenceError{Job: job, Token: token, Fence: l.fences[job],
			Err: fmt.Errorf("job %q token %d < fence %d: %w", job, token, l.fences[job], scheduler.ErrFenced)}
	}
	l.fences[job] = token
	return nil
}

func (l *fakeLedger) RaiseAll(_ context.Context, jobs []string, token int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, j := range jobs {
		if err := l.check(j, token); err != nil {
			return err
		}
	}
	return nil
}

// reset removes a job's fence, as an operator's fence_admin_reset does.
func (l *fakeLedger) reset(job string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fences, job)
}

// raise moves a job's fence as a newer leader would.
func (l *fakeLedger) raise(job string, token int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fences[job] = token
}

func (l *fakeLedger) ClaimMany(_ context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.claims++
	for _, s := range slots {
		if err := l.check(s.Job, token); err != nil {
			return nil, err
		}
	}
	out := make([]scheduler.Result, len(slots))
	for i, s := range slots {
		if r, ok := l.runs[idOf(s)]; ok {
			out[i] = scheduler.Result{Run: *r}
			continue
		}
		l.nextID++
		r := &scheduler.Run{RunID: l.nextID, Job: s.Job, ScheduledAt: s.At, Manual: s.Manual, Status: scheduler.StatusRunning, Token: token, Attempt: 1}
		l.runs[idOf(s)] = r
		out[i] = scheduler.Result{Run: *r, Written: true}
	}
	return out, nil
}

// ClaimAheadMany is ClaimMany for runs not started: attempt 0 until StartMany.
func (l *fakeLedger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	out, err := l.ClaimMany(ctx, token, node, slots)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, c := range out {
		if c.Written {
			l.runs[idOf(c.Run.Key())].Attempt = 0
			out[i].Run.Attempt = 0
		}
	}
	return out, err
}

func (l *fakeLedger) StartMany(_ context.Context, token int64, refs []scheduler.RunRef) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range refs {
		if err := l.check(r.Job, token); err != nil {
			return 0, err
		}
	}
	n := 0
	for _, r := range refs {
		for _, cur := range l.runs {
			if cur.RunID == r.RunID && cur.Status == scheduler.StatusRunning && cur.Token == token && cur.Attempt == 0 {
				cur.Attempt = 1
				n++
			}
		}
	}
	return n, nil
}

func (l *fakeLedger) Reclaim(_ context.Context, token int64, node string, slot scheduler.SlotKey) (scheduler.Run, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(slot.Job, token); err != nil {
		return scheduler.Run{}, err
	}
	r, ok := l.runs[idOf(slot)]
	if !ok || r.Status != scheduler.StatusRunning || r.Token >= token {
		return scheduler.Run{}, fmt.Errorf("slot %v not orphaned", slot)
	}
	r.Token, r.Attempt = token, r.Attempt+1
	return *r, nil
}

// ReclaimMany is Reclaim for each slot; a slot whose run is not an orphan is not taken.
func (l *fakeLedger) ReclaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	out := make([]scheduler.Result, len(slots))
	for i, s := range slots {
		r, err := l.Reclaim(ctx, token, node, s)
		if errors.Is(err, scheduler.ErrFenced) {
			return nil, err
		}
		out[i] = scheduler.Result{Run: r, Written: err == nil}
	}
	return out, nil
}

// RecordMany records each slot without a run; Result i is outs[i]'s run, Written if it made it.
func (l *fakeLedger) RecordMany(_ context.Context, token int64, node string, outs []scheduler.Outcome) ([]scheduler.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range outs {
		if err := l.check(o.Slot.Job, token); err != nil {
			return nil, err
		}
	}
	res := make([]scheduler.Result, len(outs))
	for i, o := range outs {
		if r, ok := l.runs[idOf(o.Slot)]; ok {
			res[i] = scheduler.Result{Run: *r}
			continue
		}
		l.nextID++
		r := &scheduler.Run{RunID: l.nextID, Job: o.Slot.Job, ScheduledAt: o.Slot.At, Manual: o.Slot.Manual, Status: o.Status, Token: token}
		l.runs[idOf(o.Slot)] = r
		l.extra[l.nextID] = scheduler.Completion{RunID: l.nextID, Job: o.Slot.Job, Status: o.Status, Reason: o.Reason}
		res[i] = scheduler.Result{Run: *r, Written: true}
	}
	return res, nil
}

func (l *fakeLedger) Complete(_ context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(c.Job, token); err != nil {
		return scheduler.Run{}, err
	}
	for _, r := range l.runs {
		if r.RunID == c.RunID {
			if r.Status != scheduler.StatusRunning {
				return *r, fmt.Errorf("run %d is %s: %w", c.RunID, r.Status, scheduler.ErrNotRunning)
			}
			r.Status = c.Status
			r.Attempt = max(r.Attempt, c.Attempt)
			l.extra[c.RunID] = c
			return *r, nil
		}
	}
	return scheduler.Run{}, fmt.Errorf("no run %d", c.RunID)
}

// CompleteMany is Complete for each completion, after one fence check of them all: a run no
// longer running is not written.
func (l *fakeLedger) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	l.mu.Lock()
	for _, c := range cs {
		if err := l.check(c.Job, token); err != nil {
			l.mu.Unlock()
			return nil, err
		}
	}
	l.mu.Unlock()
	return fencetest.Unbatched{Ledger: l}.CompleteMany(ctx, token, cs)
}

// Fenced runs fn with no transaction: the runner's tests write nothing through it.
func (l *fakeLedger) Fenced(_ context.Context, job string, token int64, fn func(context.Context, scheduler.Tx) error) error {
	l.mu.Lock()
	err := l.check(job, token)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return errors.New("fake ledger: no transactions")
}

// FencedStatements checks the fence and runs nothing.
func (l *fakeLedger) FencedStatements(_ context.Context, job string, token int64, _, _ string) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, l.check(job, token)
}

// RunSecret gives every run a secret made of its id.
func (l *fakeLedger) RunSecret(_ context.Context, runID string) (string, error) {
	return "secret-" + runID, nil
}

func (l *fakeLedger) NextAttempt(_ context.Context, token int64, job string, runID int64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(job, token); err != nil {
		return 0, err
	}
	for _, r := range l.runs {
		if r.RunID == runID {
			r.Attempt++
			return r.Attempt, nil
		}
	}
	return 0, fmt.Errorf("no run %d", runID)
}

func (l *fakeLedger) Window(_ context.Context, jobs []string, from, to time.Time) ([]scheduler.Run, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []scheduler.Run
	for _, r := range l.runs {
		if !r.Manual && !r.ScheduledAt.Before(from) && !r.ScheduledAt.After(to) && contains(jobs, r.Job) {
			out = append(out, *r)
		}
	}
	return out, nil
}

func (l *fakeLedger) LastScheduled(_ context.Context, jobs ...string) (map[string]scheduler.Run, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]scheduler.Run{}
	for _, r := range l.runs {
		if cur, ok := out[r.Job]; contains(jobs, r.Job) && !r.Manual && (!ok || r.ScheduledAt.After(cur.ScheduledAt)) {
			out[r.Job] = *r
		}
	}
	return out, nil
}

func (l *fakeLedger) Orphans(_ context.Context, jobs ...string) ([]scheduler.Run, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []scheduler.Run
	for _, r := range l.runs {
		if contains(jobs, r.Job) && r.Status == scheduler.StatusRunning && r.Token < l.fences[r.Job] {
			out = append(out, *r)
		}
	}
	return out, nil
}

// put stores a run as an earlier leader left it.
func (l *fakeLedger) put(r scheduler.Run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextID++
	r.RunID = l.nextID
	l.runs[idOf(r.Key())] = &r
}

// snapshot returns the job's runs, oldest slot first, with how each ended.
func (l *fakeLedger) snapshot(job string) []ledgerRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ledgerRow
	for _, r := range l.runs {
		if r.Job == job {
			out = append(out, ledgerRow{Run: *r, Completion: l.extra[r.RunID]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ScheduledAt.Before(out[j].ScheduledAt) })
	return out
}

type ledgerRow struct {
	scheduler.Run
	Completion scheduler.Completion
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// execFunc adapts a function to Executor.
type execFunc func(ctx context.Context, r scheduler.Attempt) (string, error)

func (f execFunc) Execute(ctx context.Context, r scheduler.Attempt) (string, error) { return f(ctx, r) }

// attemptLog is an Executor that succeeds with "ok" and keeps the attempts it ran, in order.
type attemptLog struct {
	mu  sync.Mutex
	ran []scheduler.Attempt
}

func (l *attemptLog) Execute(_ context.Context, a scheduler.Attempt) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ran = append(l.ran, a)
	return "ok", nil
}

// attempts returns the attempts run so far.
func (l *attemptLog) attempts() []scheduler.Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ran)
}
