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

// TestStore_ClaimBackfill: a backfill claims a slot without a run, takes over a finished run that
// did not succeed (and one that did, with Rerun), leaves running runs, succeeded ones without
// Rerun and its own runs alone, marks its runs with its id, and is refused for a stale token.
func TestStore_ClaimBackfill(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, s *fence.Store) {
		const job, node = "report", "n1"
		day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		slot := func(h int) time.Time { return day.Add(time.Duration(h) * time.Hour) }
		if err := s.RaiseAll(ctx, []string{job}, 5); err != nil {
			t.Fatal(err)
		}
		// Slot 1 failed, slot 2 succeeded, slot 3 is running (a fired slot), slot 0 has no run.
		for h, st := range map[int]scheduler.Status{1: scheduler.StatusFailed, 2: scheduler.StatusSucceeded, 3: scheduler.StatusRunning} {
			r, err := s.Claim(ctx, 5, node, scheduler.SlotKey{Job: job, At: slot(h)})
			if err != nil {
				t.Fatal(err)
			}
			if st != scheduler.StatusRunning {
				if _, err := s.Complete(ctx, 5, scheduler.Completion{RunID: r.RunID, Job: job, Status: st, Error: "boom"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.RaiseAll(ctx, []string{job}, 7); err != nil {
			t.Fatal(err)
		}
		claim := func(h int, id int64, rerun bool) scheduler.Result {
			t.Helper()
			res, err := s.ClaimBackfill(ctx, 7, node, scheduler.BackfillSlot{Job: job, At: slot(h), ID: id, Rerun: rerun})
			if err != nil {
				t.Fatalf("claim backfill of slot %d: %v", h, err)
			}
			return res
		}
		const id = 1000
		if r := claim(0, id, false); !r.Written || r.Run.Attempt != 1 || r.Run.BackfillID != id || !r.Run.Backfill || r.Run.Token != 7 {
			t.Fatalf("slot without a run: %+v, want written, attempt 1, backfill %d, token 7", r, id)
		}
		if r := claim(1, id, false); !r.Written || r.Run.Attempt != 2 || r.Run.Status != scheduler.StatusRunning || r.Run.Error != "" || r.Run.FinishedAt != nil {
			t.Fatalf("failed slot: %+v, want taken over as attempt 2, running, its error cleared", r)
		}
		if r := claim(2, id, false); r.Written || r.Run.Status != scheduler.StatusSucceeded || r.Run.Backfill {
			t.Fatalf("succeeded slot without rerun: %+v, want left as it is", r)
		}
		if r := claim(3, id, true); r.Written || r.Run.Status != scheduler.StatusRunning || r.Run.Backfill {
			t.Fatalf("running slot: %+v, want left as it is", r)
		}
		// The request's own runs, finished or not, are not claimed again, even with rerun.
		if r := claim(1, id, true); r.Written || r.Run.Attempt != 2 {
			t.Fatalf("a slot the request claimed already: %+v, want not written", r)
		}
		r0 := claim(0, id, true)
		if _, err := s.Complete(ctx, 7, scheduler.Completion{RunID: r0.Run.RunID, Job: job, Status: scheduler.StatusSucceeded}); err != nil {
			t.Fatal(err)
		}
		if r := claim(0, id, true); r.Written {
			t.Fatalf("a slot the request finished: %+v, want not written", r)
		}
		// A rerun by another request takes the succeeded run over, keeping its id.
		r2 := claim(2, id+1, true)
		if !r2.Written || r2.Run.Attempt != 2 || r2.Run.BackfillID != id+1 {
			t.Fatalf("succeeded slot with rerun: %+v, want taken over as attempt 2 of backfill %d", r2, id+1)
		}
		runs, err := s.BackfillRuns(ctx, job, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || !runs[0].ScheduledAt.Equal(slot(0)) || !runs[1].ScheduledAt.Equal(slot(1)) || !runs[0].Backfill {
			t.Fatalf("runs of backfill %d: %+v, want slots 0 and 1 in order", id, runs)
		}
		hist, err := s.History(ctx, job, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range hist {
			if want := r.ScheduledAt.Equal(slot(0)) || r.ScheduledAt.Equal(slot(1)) || r.ScheduledAt.Equal(slot(2)); r.Backfill != want {
				t.Fatalf("history run of %s: backfill %v, want %v", r.ScheduledAt, r.Backfill, want)
			}
		}
		// A stale token's backfill writes nothing.
		_, err = s.ClaimBackfill(ctx, 5, node, scheduler.BackfillSlot{Job: job, At: slot(4), ID: id})
		if !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("claim with a stale token: err %v, want ErrFenced", err)
		}
		if runs, err := s.Window(ctx, []string{job}, slot(4), slot(4)); err != nil || len(runs) != 0 {
			t.Fatalf("runs of the slot a stale token claimed: %v (err %v), want none", runs, err)
		}
		if _, err := s.ClaimBackfill(ctx, 7, node, scheduler.BackfillSlot{Job: job, At: slot(4)}); err == nil {
			t.Fatal("claim without a request id: no error")
		}
	})
}
