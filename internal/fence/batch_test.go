package fence

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"scheduler"
)

// stored returns the ledger's row of slot, every column, as History reads it.
func stored(t *testing.T, s *Store, slot scheduler.SlotKey) scheduler.Run {
	t.Helper()
	hist, err := s.History(testCtx(t), slot.Job, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range hist {
		if r.Key() == slot {
			return r
		}
	}
	t.Fatalf("no run of slot %s of job %q in the ledger", slot.At, slot.Job)
	return scheduler.Run{}
}

func testReclaimMany(t *testing.T, open func(Config) *Store) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := open(Config{Now: func() time.Time { return now }})
	ctx := testCtx(t)
	past := func(job string, m int) scheduler.SlotKey {
		return scheduler.SlotKey{Job: job, At: now.Add(-time.Duration(m) * time.Minute)}
	}
	orphanA, orphanB, ahead := past("a", 10), past("b", 10), scheduler.SlotKey{Job: "a", At: now.Add(5 * time.Minute)}
	finished, manual := past("b", 20), scheduler.SlotKey{Job: "c", At: now.Add(-time.Minute), Manual: true}
	ids := map[scheduler.SlotKey]int64{}
	for _, sl := range []scheduler.SlotKey{orphanA, orphanB, ahead, finished, manual} {
		r, err := s.Claim(ctx, 10, "old", sl)
		if err != nil {
			t.Fatal(err)
		}
		ids[sl] = r.RunID
	}
	if _, err := s.Complete(ctx, 10, scheduler.Completion{RunID: ids[finished], Job: "b", Status: scheduler.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseAll(ctx, []string{"a", "b", "c", "d"}, 20); err != nil {
		t.Fatal(err)
	}
	ours, err := s.Claim(ctx, 20, "new", past("d", 5))
	if err != nil {
		t.Fatal(err)
	}

	if res, err := s.ReclaimMany(ctx, 20, "new", nil); err != nil || res != nil {
		t.Fatalf("reclaim of no slots = %v (err %v), want nothing", res, err)
	}
	// An old leader is refused, and nothing changes.
	if _, err := s.ReclaimMany(ctx, 10, "old", []scheduler.SlotKey{orphanA, orphanB}); !errors.Is(err, ErrStale) {
		t.Fatalf("reclaim with the old token: err %v, want ErrStale", err)
	}
	if o, err := s.Orphans(ctx); err != nil || len(o) != 4 {
		t.Fatalf("orphans after a refused reclaim = %+v (err %v), want 4", o, err)
	}

	none := past("a", 30)
	slots := []scheduler.SlotKey{orphanA, orphanB, finished, ours.Key(), none, orphanA, ahead, manual}
	res, err := s.ReclaimMany(ctx, 20, "new", slots)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(slots) {
		t.Fatalf("%d results for %d slots", len(res), len(slots))
	}
	for i, want := range []struct {
		written bool
		id      int64
		status  scheduler.Status
		token   int64
		attempt int
	}{
		{true, ids[orphanA], scheduler.StatusRunning, 20, 2},
		{true, ids[orphanB], scheduler.StatusRunning, 20, 2},
		{false, ids[finished], scheduler.StatusSucceeded, 10, 1}, // not running
		{false, ours.RunID, scheduler.StatusRunning, 20, 1},      // already ours
		{false, 0, "", 0, 0}, // no run
		{false, ids[orphanA], scheduler.StatusRunning, 20, 2}, // a duplicate is taken over once
		{true, ids[ahead], scheduler.StatusRunning, 20, 2},
		{true, ids[manual], scheduler.StatusRunning, 20, 2},
	} {
		r := res[i]
		if r.Written != want.written || r.Run.RunID != want.id || r.Run.Status != want.status || r.Run.Token != want.token || r.Run.Attempt != want.attempt {
			t.Errorf("slot %d (%s %v): result %+v, want written=%v run %d %s token %d attempt %d",
				i, slots[i].Job, slots[i].At, r, want.written, want.id, want.status, want.token, want.attempt)
		}
		if r.Written && r.Run.Key() != slots[i] {
			t.Errorf("slot %d: taken over as %+v, want the slot itself", i, r.Run)
		}
		if r.Written && stored(t, s, slots[i]).Node != "new" {
			t.Errorf("slot %d: stored as %+v, want node new", i, stored(t, s, slots[i]))
		}
	}
	// A run taken over starts now, or at its slot if that is still to come.
	if st := stored(t, s, orphanA).StartedAt; st == nil || !st.Equal(now) {
		t.Errorf("started_at of an orphan of the past = %v, want %v", st, now)
	}
	if st := stored(t, s, ahead).StartedAt; st == nil || !st.Equal(ahead.At) {
		t.Errorf("started_at of an orphan claimed ahead = %v, want its slot %v", st, ahead.At)
	}
	if o, err := s.Orphans(ctx); err != nil || len(o) != 0 {
		t.Fatalf("orphans after the takeover = %+v (err %v), want none", o, err)
	}
	// Taken over once: again, nothing is taken.
	again, err := s.ReclaimMany(ctx, 20, "new", []scheduler.SlotKey{orphanA})
	if err != nil || again[0].Written || again[0].Run.Attempt != 2 {
		t.Fatalf("second reclaim = %+v (err %v), want not taken, attempt 2", again, err)
	}
	if _, err := s.Reclaim(ctx, 20, "new", orphanA); !errors.Is(err, ErrNotOrphaned) {
		t.Fatalf("reclaim of a run already ours: err %v, want ErrNotOrphaned", err)
	}
	// Input errors.
	if _, err := s.ReclaimMany(ctx, 20, "", []scheduler.SlotKey{orphanA}); err == nil {
		t.Error("reclaim without a node: no error")
	}
	if _, err := s.ReclaimMany(ctx, 0, "new", []scheduler.SlotKey{orphanA}); err == nil {
		t.Error("reclaim with token 0: no error")
	}
	if _, err := s.ReclaimMany(ctx, 20, "new", []scheduler.SlotKey{{Job: "a"}}); err == nil {
		t.Error("reclaim of a zero slot: no error")
	}
}

// testReclaimManyChunks takes over more orphans than one transaction holds.
func testReclaimManyChunks(t *testing.T, open func(Config) *Store) {
	s := open(Config{})
	ctx := testCtx(t)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	n := maxReclaimBatch + 50
	slots := make([]scheduler.SlotKey, n)
	for i := range slots {
		slots[i] = scheduler.SlotKey{Job: fmt.Sprintf("job%d", i%7), At: base.Add(time.Duration(i) * time.Minute)}
	}
	if _, err := s.ClaimMany(ctx, 10, "old", slots); err != nil {
		t.Fatal(err)
	}
	jobs := make([]string, len(slots))
	for i, sl := range slots {
		jobs[i] = sl.Job
	}
	if err := s.RaiseAll(ctx, jobs, 20); err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(slots)
	slices.Reverse(rev)
	res, err := s.ReclaimMany(ctx, 20, "new", rev)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Written || r.Run.Key() != rev[i] || r.Run.Token != 20 {
			t.Fatalf("slot %d of %d: %+v, want taken over with token 20", i, n, r)
		}
	}
	if o, err := s.Orphans(ctx); err != nil || len(o) != 0 {
		t.Fatalf("%d orphans left (err %v), want none", len(o), err)
	}
}

func testWindowMany(t *testing.T, open func(Config) *Store) {
	s := open(Config{})
	ctx := testCtx(t)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	for _, sl := range []scheduler.SlotKey{
		{Job: "b", At: at(2)}, {Job: "a", At: at(3)}, {Job: "a", At: at(1)}, {Job: "c", At: at(2)},
		{Job: "a", At: at(2), Manual: true}, {Job: "a", At: at(9)}, {Job: "b", At: at(0)},
	} {
		if _, err := s.Claim(ctx, 5, "n", sl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Record(ctx, 5, "n", scheduler.Outcome{Slot: scheduler.SlotKey{Job: "b", At: at(1)}, Status: scheduler.StatusMissed, Reason: "gone"}); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Window(ctx, []string{"b", "a", "a", "x"}, at(1), at(3))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, fmt.Sprintf("%s@%d/%s", r.Job, r.ScheduledAt.Sub(base)/time.Hour, r.Status))
	}
	slices.Sort(got)
	want := []string{"a@1/running", "a@3/running", "b@1/missed", "b@2/running"}
	if !slices.Equal(got, want) {
		t.Fatalf("window = %v, want %v (scheduled runs of a and b in hours 1..3)", got, want)
	}
	if runs, err := s.Window(ctx, nil, at(0), at(9)); err != nil || len(runs) != 0 {
		t.Fatalf("window of no jobs = %v (err %v), want none", runs, err)
	}
}

// testStartedAt checks that a claim made ahead of its slot records the slot as its start, and
// that a run closed before its slot does not finish before it started.
func testStartedAt(t *testing.T, open func(Config) *Store) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := open(Config{Now: func() time.Time { return now }})
	ctx := testCtx(t)
	ahead, late := scheduler.SlotKey{Job: "j", At: now.Add(800 * time.Millisecond)}, scheduler.SlotKey{Job: "j", At: now.Add(-time.Second)}
	res, err := s.ClaimMany(ctx, 5, "n", []scheduler.SlotKey{ahead, late})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Written || !res[1].Written {
		t.Fatalf("claims = %+v, want both written", res)
	}
	if st := stored(t, s, ahead).StartedAt; st == nil || !st.Equal(ahead.At) {
		t.Errorf("started_at of a claim ahead of its slot = %v, want the slot %v", st, ahead.At)
	}
	if st := stored(t, s, late).StartedAt; st == nil || !st.Equal(now) {
		t.Errorf("started_at of a claim after its slot = %v, want the claim's time %v", st, now)
	}
	// Closed before its slot came (a reload removed the job): it took no time.
	done, err := s.Complete(ctx, 5, scheduler.Completion{RunID: res[0].Run.RunID, Job: "j", Status: scheduler.StatusSkipped, Reason: "removed"})
	if err != nil {
		t.Fatal(err)
	}
	if done.StartedAt == nil || done.FinishedAt == nil || done.FinishedAt.Before(*done.StartedAt) || !done.StartedAt.Equal(now) {
		t.Errorf("run closed before its slot: started %v, finished %v, want both %v", done.StartedAt, done.FinishedAt, now)
	}
	hist, err := s.History(ctx, "j", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range hist {
		if r.StartedAt != nil && r.FinishedAt != nil && r.FinishedAt.Before(*r.StartedAt) {
			t.Errorf("history: run %d finished at %v before it started at %v", r.RunID, r.FinishedAt, r.StartedAt)
		}
	}
}
