// The backfill against the real runner and the real store, Postgres and SQLite: the slots go
// through the runner's claim, the attempt's fenced transaction and the ledger as fired ones do.
package backfill_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/backfill"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
	"scheduler/internal/schedule"
)

// slotExec writes one row per attempt into stock_scans through the attempt's fenced
// transaction (sku: the slot and the token), and keeps the slots of its attempts in order. The
// attempt of holdAt first says so on entered and waits for release.
type slotExec struct {
	mu      sync.Mutex
	slots   []time.Time
	holdAt  time.Time
	entered chan struct{}
	release chan struct{}
}

func (e *slotExec) Execute(ctx context.Context, a scheduler.Attempt) (string, error) {
	e.mu.Lock()
	e.slots = append(e.slots, a.Slot)
	hold := !e.holdAt.IsZero() && e.holdAt.Equal(a.Slot)
	if hold {
		e.holdAt = time.Time{}
	}
	e.mu.Unlock()
	if hold {
		e.entered <- struct{}{}
		<-e.release
	}
	err := a.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO stock_scans (sku, quantity) VALUES ($1, $2)`,
			fmt.Sprintf("%s/%d", a.Slot.UTC().Format(time.RFC3339), a.Token), a.Attempt)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("write scan: %w", err)
	}
	return "scan written", nil
}

func (e *slotExec) ran() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.slots)
}

// day is the past day whose hourly slots the tests backfill.
var day = time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)

func hour(h int) time.Time { return day.Add(time.Duration(h) * time.Hour) }

func hours(from, to int) []time.Time {
	var out []time.Time
	for h := from; h <= to; h++ {
		out = append(out, hour(h))
	}
	return out
}

func newRunner(t *testing.T, store *fence.Store, node string, exec scheduler.Executor) *jobs.Runner {
	t.Helper()
	sch, err := schedule.Parse("@hourly", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	spec := jobs.Spec{Name: "job", Schedule: sch, Executor: exec, Timeout: time.Minute, Overlap: jobs.OverlapSkip,
		Misfire: jobs.MisfireSkip, Enabled: true}
	r, err := jobs.New([]jobs.Spec{spec}, jobs.Options{Node: node, Ledger: store, Logger: zaptest.NewLogger(t).Named(node)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lead runs r's term with token until the returned stop is called (or the test ends), and
// returns the channel of Lead's answer.
func lead(t *testing.T, r *jobs.Runner, token int64) (stop func(), ended <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done, returned := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(returned)
		done <- r.Lead(ctx, token)
	}()
	t.Cleanup(func() {
		cancel()
		<-returned
	})
	return cancel, done
}

func config(t *testing.T, r *jobs.Runner, store *fence.Store) backfill.Config {
	return backfill.Config{Runner: r, Ledger: store, Logger: zaptest.NewLogger(t), Poll: 5 * time.Millisecond, Retry: 20 * time.Millisecond}
}

// dayRuns returns the job's runs of the day by hour.
func dayRuns(ctx context.Context, t *testing.T, store *fence.Store) map[int]scheduler.Run {
	t.Helper()
	runs, err := store.SlotRuns(ctx, "job", hour(0), hour(23))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]scheduler.Run{}
	for _, r := range runs {
		out[int(r.ScheduledAt.Sub(day)/time.Hour)] = r
	}
	return out
}

// TestRun_PastDay: a backfill of a past day's hourly slots runs each slot once, in order,
// through the fenced path, and marks the runs; a slot that succeeded before is skipped, one that
// failed is run again as its run's next attempt; the same request again runs nothing; a rerun
// runs a succeeded slot again; bad requests are refused.
func TestRun_PastDay(t *testing.T) {
	fencetest.Each(t, 90*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		// An earlier leader ran the day's 03:00 (succeeded) and 05:00 (failed).
		if err := store.RaiseAll(ctx, []string{"job"}, 1); err != nil {
			t.Fatal(err)
		}
		for h, st := range map[int]scheduler.Status{3: scheduler.StatusSucceeded, 5: scheduler.StatusFailed} {
			run, err := store.Claim(ctx, 1, "old", scheduler.SlotKey{Job: "job", At: hour(h)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Complete(ctx, 1, scheduler.Completion{RunID: run.RunID, Job: "job", Status: st}); err != nil {
				t.Fatal(err)
			}
		}
		exec := &slotExec{}
		r := newRunner(t, store, "n1", exec)
		lead(t, r, 10)
		req := backfill.Request{Job: "job", ID: 100, Slots: hours(0, 23), Overlap: backfill.OverlapQueue}
		var reports []backfill.Progress
		p, err := backfill.Run(ctx, config(t, r, store), req, func(p backfill.Progress) { reports = append(reports, p) })
		want := backfill.Progress{Total: 24, Done: 24, Succeeded: 23, Skipped: 1}
		if err != nil || p != want {
			t.Fatalf("backfill = %+v (err %v), want %+v", p, err, want)
		}
		if len(reports) != 25 || reports[0].Done != 0 || reports[24] != want {
			t.Fatalf("reports %+v: want one at the start and one per slot, up to %+v", reports, want)
		}
		wantSlots := slices.DeleteFunc(hours(0, 23), func(at time.Time) bool { return at.Equal(hour(3)) })
		if got := exec.ran(); !slices.EqualFunc(got, wantSlots, time.Time.Equal) {
			t.Fatalf("attempts at %v, want each slot but 03:00 once, in order", got)
		}
		runs := dayRuns(ctx, t, store)
		for h := range 24 {
			run := runs[h]
			switch {
			case h == 3:
				if run.Backfill || run.Attempt != 1 || run.Token != 1 {
					t.Fatalf("03:00 = %+v, want the earlier success left alone", run)
				}
			case run.Status != scheduler.StatusSucceeded || run.BackfillID != 100 || !run.Backfill || run.Token != 10:
				t.Fatalf("%02d:00 = %+v, want succeeded under token 10, backfill 100", h, run)
			case h == 5 && run.Attempt != 2:
				t.Fatalf("05:00 = %+v, want the failed run taken over as attempt 2", run)
			case h != 5 && run.Attempt != 1:
				t.Fatalf("%02d:00 = %+v, want attempt 1", h, run)
			}
		}
		if n := len(fencetest.StockScans(ctx, t, store)); n != 23 {
			t.Fatalf("%d fenced writes, want 23", n)
		}

		// The same request again: every slot is decided already.
		if p, err := backfill.Run(ctx, config(t, r, store), req, nil); err != nil || p != want {
			t.Fatalf("the same backfill again = %+v (err %v), want %+v", p, err, want)
		}
		if n := len(exec.ran()); n != 23 {
			t.Fatalf("%d attempts after the same backfill again, want 23", n)
		}

		// A rerun of 02:00 to 03:00 runs them again, as the next attempts of their runs.
		rerun := backfill.Request{Job: "job", ID: 101, Slots: hours(2, 3), Rerun: true, Overlap: backfill.OverlapQueue}
		if p, err := backfill.Run(ctx, config(t, r, store), rerun, nil); err != nil || p != (backfill.Progress{Total: 2, Done: 2, Succeeded: 2}) {
			t.Fatalf("rerun = %+v (err %v), want 2 slots succeeded", p, err)
		}
		runs = dayRuns(ctx, t, store)
		for _, h := range []int{2, 3} {
			if run := runs[h]; run.BackfillID != 101 || run.Attempt != 2 || run.Status != scheduler.StatusSucceeded {
				t.Fatalf("%02d:00 after the rerun = %+v, want attempt 2 of backfill 101, succeeded", h, run)
			}
		}

		for what, bad := range map[string]backfill.Request{
			"no job":          {ID: 1, Slots: hours(0, 1), Overlap: backfill.OverlapQueue},
			"no request id":   {Job: "job", Slots: hours(0, 1), Overlap: backfill.OverlapQueue},
			"unknown overlap": {Job: "job", ID: 1, Slots: hours(0, 1), Overlap: "replace"},
		} {
			if _, err := backfill.Run(ctx, config(t, r, store), bad, nil); !errors.Is(err, backfill.ErrBadRequest) {
				t.Errorf("%s: err %v, want ErrBadRequest", what, err)
			}
		}
	})
}

// TestRun_Overlap: with a run of the job in progress, overlap skip skips the slot and queue
// waits for the run to end; allow runs every slot.
func TestRun_Overlap(t *testing.T) {
	fencetest.Each(t, 90*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		exec := &slotExec{}
		r := newRunner(t, store, "n1", exec)
		lead(t, r, 10)
		// A run of the job in progress: a manual one, claimed in the ledger under the term.
		busy, err := store.Claim(ctx, 10, "n1", scheduler.SlotKey{Job: "job", At: time.Now(), Manual: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := backfill.Run(ctx, config(t, r, store), backfill.Request{Job: "job", ID: 1, Slots: hours(0, 1), Overlap: backfill.OverlapSkip}, nil)
		if err != nil || p != (backfill.Progress{Total: 2, Done: 2, Skipped: 2}) || len(exec.ran()) != 0 {
			t.Fatalf("skip while a run is in progress = %+v (err %v), attempts %v: want both skipped, none run", p, err, exec.ran())
		}
		queued := make(chan error, 1)
		go func() {
			_, err := backfill.Run(ctx, config(t, r, store), backfill.Request{Job: "job", ID: 2, Slots: hours(2, 3), Overlap: backfill.OverlapQueue}, nil)
			queued <- err
		}()
		select {
		case err := <-queued:
			t.Fatalf("queue ended (err %v) while a run was in progress", err)
		case <-time.After(200 * time.Millisecond):
		}
		if len(exec.ran()) != 0 {
			t.Fatalf("attempts %v while a run was in progress under overlap queue", exec.ran())
		}
		if _, err := store.Complete(ctx, 10, scheduler.Completion{RunID: busy.RunID, Job: "job", Status: scheduler.StatusSucceeded}); err != nil {
			t.Fatal(err)
		}
		if err := <-queued; err != nil {
			t.Fatalf("queue: %v", err)
		}
		p, err = backfill.Run(ctx, config(t, r, store), backfill.Request{Job: "job", ID: 3, Slots: hours(4, 9), Overlap: backfill.OverlapAllow}, nil)
		if err != nil || p != (backfill.Progress{Total: 6, Done: 6, Succeeded: 6}) {
			t.Fatalf("allow = %+v (err %v), want 6 succeeded", p, err)
		}
		if got := exec.ran(); len(got) != 8 || !got[0].Equal(hour(2)) || !got[1].Equal(hour(3)) {
			t.Fatalf("attempts %v, want 02:00 and 03:00 (queued), then the 6 allowed", got)
		}
	})
}

// TestRun_Failover: a newer leader raises the job's fence while a backfill runs; the old term's
// next fenced write is refused and the term ends. The newer leader carries on with the same
// request: the slots the old term finished are not run again, the one it left running is taken
// over, and each slot ends with exactly one write; its catch-up records nothing for the time
// since the backfilled slots.
func TestRun_Failover(t *testing.T) {
	fencetest.Each(t, 90*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		exec := &slotExec{holdAt: hour(5), entered: make(chan struct{}), release: make(chan struct{})}
		req := backfill.Request{Job: "job", ID: 7, Slots: hours(0, 23), Overlap: backfill.OverlapQueue}

		old := newRunner(t, store, "old", exec)
		_, ended := lead(t, old, 10)
		octx, stopOld := context.WithCancel(ctx)
		defer stopOld()
		backfilled := make(chan error, 1)
		go func() {
			_, err := backfill.Run(octx, config(t, old, store), req, nil)
			backfilled <- err
		}()
		<-exec.entered
		if err := store.RaiseAll(ctx, []string{"job"}, 20); err != nil {
			t.Fatal(err)
		}
		exec.release <- struct{}{}
		if err := <-ended; !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("old Lead=%v, want the term ended by the store's refusal", err)
		}
		// The daemon ends a term's backfill with the term.
		stopOld()
		if err := <-backfilled; !errors.Is(err, context.Canceled) {
			t.Fatalf("the old term's backfill = %v, want it ended with the term", err)
		}

		next := newRunner(t, store, "new", exec)
		lead(t, next, 20)
		p, err := backfill.Run(ctx, config(t, next, store), req, nil)
		if want := (backfill.Progress{Total: 24, Done: 24, Succeeded: 24}); err != nil || p != want {
			t.Fatalf("backfill on the next leader = %+v (err %v), want %+v", p, err, want)
		}
		got := exec.ran()
		if !slices.IsSortedFunc(got, time.Time.Compare) || len(got) != 25 {
			t.Fatalf("attempts at %v: want 25 in slot order (05:00 twice: refused, then taken over)", got)
		}
		runs := dayRuns(ctx, t, store)
		for h := range 24 {
			run := runs[h]
			wantToken, wantAttempt := int64(20), 1
			switch {
			case h < 5:
				wantToken = 10
			case h == 5:
				wantAttempt = 2
			}
			if run.Status != scheduler.StatusSucceeded || run.BackfillID != 7 || run.Token != wantToken || run.Attempt != wantAttempt {
				t.Fatalf("%02d:00 = %+v, want succeeded, backfill 7, token %d, attempt %d", h, run, wantToken, wantAttempt)
			}
		}
		// The next leader's catch-up took the backfilled runs for none of the job's history:
		// it recorded no slot since then missed.
		if later, err := store.SlotRuns(ctx, "job", hour(24), time.Now()); err != nil || len(later) != 0 {
			t.Fatalf("runs after the backfilled day: %d (err %v), want none", len(later), err)
		}
		skus := fencetest.StockScans(ctx, t, store)
		if len(skus) != 24 {
			t.Fatalf("fenced writes %v: want one per slot", skus)
		}
		for h := range 24 {
			tok := 20
			if h < 5 {
				tok = 10
			}
			if want := fmt.Sprintf("%s/%d", hour(h).Format(time.RFC3339), tok); !slices.Contains(skus, want) {
				t.Fatalf("fenced writes %v: no %s", skus, want)
			}
		}
	})
}
