// The runner uses the store as its scheduler.Ledger, with no translation between them: these
// tests drive the store through that interface, on both backends.
package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
)

func TestStore_Ledger(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		var l scheduler.Ledger = store
		// The batch answers as the runner reads them.
		reclaimMany := func(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Run, []bool, error) {
			res, err := l.ReclaimMany(ctx, token, node, slots)
			runs, taken := make([]scheduler.Run, len(res)), make([]bool, len(res))
			for i, r := range res {
				runs[i], taken[i] = r.Run, r.Written
			}
			return runs, taken, err
		}
		completeMany := func(ctx context.Context, token int64, cs []scheduler.Completion) ([]bool, error) {
			res, err := l.CompleteMany(ctx, token, cs)
			if err != nil {
				return nil, err
			}
			done := make([]bool, len(res))
			for i, r := range res {
				done[i] = r.Written
			}
			return done, nil
		}
		base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		slots := []scheduler.SlotKey{{Job: "a", At: base}, {Job: "b", At: base}, {Job: "a", At: base.Add(time.Minute)}}

		if err := l.RaiseAll(ctx, []string{"a", "b"}, 10); err != nil {
			t.Fatal(err)
		}
		claimed, err := l.ClaimMany(ctx, 10, "old", slots)
		if err != nil || len(claimed) != 3 || !claimed[0].Written || claimed[0].Run.Job != "a" || claimed[1].Run.Token != 10 {
			t.Fatalf("claim = %+v (err %v), want three runs claimed with token 10", claimed, err)
		}
		win, err := l.Window(ctx, []string{"a", "b", "c"}, base, base.Add(time.Minute))
		if err != nil || len(win) != 3 {
			t.Fatalf("window = %+v (err %v), want the 3 runs of a and b", win, err)
		}
		if runs, err := l.Window(ctx, nil, base, base); err != nil || len(runs) != 0 {
			t.Fatalf("window of no jobs = %+v (err %v)", runs, err)
		}

		// A new leader raises the fences: every write of the old one is fenced.
		if err := l.RaiseAll(ctx, []string{"a", "b"}, 20); err != nil {
			t.Fatal(err)
		}
		for op, err := range map[string]error{
			"ReclaimMany": func() error { _, _, err := reclaimMany(ctx, 10, "old", slots); return err }(),
			"CompleteMany": func() error {
				_, err := completeMany(ctx, 10, []scheduler.Completion{{RunID: claimed[0].Run.RunID, Job: "a", Status: scheduler.StatusSucceeded}})
				return err
			}(),
			"Complete": func() error {
				_, err := l.Complete(ctx, 10, scheduler.Completion{RunID: claimed[0].Run.RunID, Job: "a", Status: scheduler.StatusSucceeded})
				return err
			}(),
			"ClaimMany": func() error { _, err := l.ClaimMany(ctx, 10, "old", slots[:1]); return err }(),
			"RecordMany": func() error {
				_, err := l.RecordMany(ctx, 10, "old", []scheduler.Outcome{{Slot: scheduler.SlotKey{Job: "b", At: base.Add(time.Hour)}, Status: scheduler.StatusMissed}})
				return err
			}(),
			"Reclaim":     func() error { _, err := l.Reclaim(ctx, 10, "old", slots[0]); return err }(),
			"NextAttempt": func() error { _, err := l.NextAttempt(ctx, 10, "a", claimed[0].Run.RunID); return err }(),
			"Fenced": l.Fenced(ctx, "a", 10, func(context.Context, scheduler.Tx) error {
				return nil
			}),
		} {
			if !errors.Is(err, scheduler.ErrFenced) || !errors.Is(err, fence.ErrStale) {
				t.Errorf("%s with the old token: err %v, want scheduler.ErrFenced wrapping fence.ErrStale", op, err)
			}
			// The runner blocks the job the refusal names, so the refusal must name it.
			var fe *scheduler.FenceError
			if !errors.As(err, &fe) || fe.Job == "" || fe.Token != 10 || fe.Fence != 20 {
				t.Errorf("%s with the old token: err %v (%+v), want a *scheduler.FenceError naming the job, token 10, fence 20", op, err, fe)
			}
		}
		// A raise below a stored fence names the job and its fence too.
		var fe *scheduler.FenceError
		if err := l.RaiseAll(ctx, []string{"b"}, 10); !errors.As(err, &fe) || fe.Job != "b" || fe.Fence != 20 || !errors.Is(err, fence.ErrTokenRegressed) {
			t.Errorf("RaiseAll with the old token: err %v (%+v), want a *scheduler.FenceError for b, fence 20, wrapping ErrTokenRegressed", err, fe)
		}

		orphans, err := l.Orphans(ctx, "a", "b")
		if err != nil || len(orphans) != 3 {
			t.Fatalf("orphans = %+v (err %v), want 3", orphans, err)
		}
		if runs, taken, err := reclaimMany(ctx, 20, "new", nil); err != nil || len(runs) != 0 || len(taken) != 0 {
			t.Fatalf("reclaim of nothing = %v %v (err %v)", runs, taken, err)
		}
		missing := scheduler.SlotKey{Job: "b", At: base.Add(-time.Hour)}
		runs, taken, err := reclaimMany(ctx, 20, "new", []scheduler.SlotKey{slots[1], missing, slots[0]})
		if err != nil || len(runs) != 3 || !taken[0] || taken[1] || !taken[2] {
			t.Fatalf("reclaim = %+v %v (err %v), want the two runs taken over and nothing for the missing slot", runs, taken, err)
		}
		if r := runs[0]; r.RunID != claimed[1].Run.RunID || r.Attempt != 2 || r.Token != 20 || r.Status != scheduler.StatusRunning || !r.ScheduledAt.Equal(base) {
			t.Fatalf("run taken over = %+v, want run %d, attempt 2, token 20, running", r, claimed[1].Run.RunID)
		}
		if runs[1].RunID != 0 {
			t.Fatalf("missing slot's run = %+v, want none", runs[1])
		}
		// Taken over already: reported as running under our token, not taken.
		_, taken, err = reclaimMany(ctx, 20, "new", slots[:1])
		if err != nil || taken[0] {
			t.Fatalf("second reclaim: taken %v (err %v), want not taken", taken, err)
		}

		cs := []scheduler.Completion{
			{RunID: runs[0].RunID, Job: "b", Status: scheduler.StatusSucceeded},
			{RunID: runs[2].RunID, Job: "a", Status: scheduler.StatusFailed, Error: "boom", Attempt: 3},
		}
		if done, err := completeMany(ctx, 20, cs); err != nil || len(done) != 2 || !done[0] || !done[1] {
			t.Fatalf("complete = %v (err %v), want both done", done, err)
		}
		if done, err := completeMany(ctx, 20, cs); err != nil || done[0] || done[1] {
			t.Fatalf("complete again = %v (err %v), want neither done", done, err)
		}
		// A run finished already is not running: the runner must not retry the write.
		if _, err := l.Complete(ctx, 20, cs[0]); !errors.Is(err, scheduler.ErrNotRunning) || !errors.Is(err, fence.ErrNotRunning) {
			t.Fatalf("complete of a finished run: err %v, want scheduler.ErrNotRunning wrapping fence.ErrNotRunning", err)
		}
		if done, err := completeMany(ctx, 20, nil); err != nil || len(done) != 0 {
			t.Fatalf("complete of nothing = %v (err %v)", done, err)
		}
		last, err := l.LastScheduled(ctx, "a", "b")
		if err != nil || last["a"].Attempt != 1 || last["b"].Status != scheduler.StatusSucceeded {
			t.Fatalf("last = %+v (err %v), want a's newest still claimed (attempt 1) and b succeeded", last, err)
		}
		hist, err := store.History(ctx, "a", 10)
		if err != nil || len(hist) != 2 || hist[1].Attempt != 3 || hist[1].Error != "boom" {
			t.Fatalf("history of a = %+v (err %v), want the failed run with 3 attempts", hist, err)
		}
	})
}
