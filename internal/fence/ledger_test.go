package fence

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"scheduler"
)

// checkOutputExcerpt checks an excerpt of "BEGIN"+"é"*MaxExcerpt+"END"+two replaced bytes,
// total bytes long once cleaned: at most MaxExcerpt characters, its start and its end kept, and
// a marker counting exactly the bytes left out.
func checkOutputExcerpt(t *testing.T, what, out string, total int) {
	t.Helper()
	head, rest, ok := strings.Cut(out, "\n[... ")
	countText, tail, ok2 := strings.Cut(rest, " bytes omitted ...]\n")
	if !ok || !ok2 {
		t.Fatalf("%s: output excerpt has no omission marker: %.80q...", what, out)
	}
	omitted, err := strconv.Atoi(countText)
	if err != nil {
		t.Fatalf("%s: marker count %q: %v", what, countText, err)
	}
	if n := utf8.RuneCountInString(out); n > MaxExcerpt {
		t.Errorf("%s: output excerpt has %d characters, want at most %d", what, n, MaxExcerpt)
	}
	if !strings.HasPrefix(head, "BEGINé") || !strings.HasSuffix(tail, "éEND\uFFFD\uFFFD") {
		t.Errorf("%s: output excerpt starts %.12q and ends %q, want its start and its end", what, head, tail[max(0, len(tail)-12):])
	}
	if got := len(head) + omitted + len(tail); got != total {
		t.Errorf("%s: head %d + omitted %d + tail %d = %d bytes, want %d", what, len(head), omitted, len(tail), got, total)
	}
}

func testLedger(t *testing.T, open func(Config) *Store) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	s := open(Config{Now: func() time.Time { return now }})
	ctx := testCtx(t)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600))
	at := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }

	var ids []int64
	for h := range 4 {
		r, err := s.Claim(ctx, 5, "n1", scheduler.SlotKey{Job: "inv", At: at(h)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.RunID)
	}
	// A manual run at the same time as a scheduled slot is a different run.
	manual, err := s.Claim(ctx, 5, "n1", scheduler.SlotKey{Job: "inv", At: at(1), Manual: true})
	if err != nil {
		t.Fatalf("manual run at a scheduled slot's time: %v", err)
	}
	got, err := s.Record(ctx, 5, "n1", scheduler.Outcome{Slot: scheduler.SlotKey{Job: "inv", At: at(5)}, Status: scheduler.StatusSkipped, Reason: "overlap: skip"})
	if err != nil || got.Status != scheduler.StatusSkipped || got.Attempt != 0 || keyOf(got.Key()) != keyOf(scheduler.SlotKey{Job: "inv", At: at(5)}) {
		t.Fatalf("record skipped = %+v (err %v)", got, err)
	}
	res, err := s.RecordMany(ctx, 5, "n1", []scheduler.Outcome{
		{Slot: scheduler.SlotKey{Job: "inv", At: at(6)}, Status: scheduler.StatusMissed, Reason: "no leader"},
		{Slot: scheduler.SlotKey{Job: "inv", At: at(0)}, Status: scheduler.StatusMissed},
	})
	if err != nil || !res[0].Written || res[1].Written || res[1].Run.Status != scheduler.StatusRunning {
		t.Fatalf("record many = %+v (err %v), want the first written and the second taken by a running run", res, err)
	}
	if _, err := s.Record(ctx, 5, "n1", scheduler.Outcome{Slot: scheduler.SlotKey{Job: "inv", At: at(7)}, Status: scheduler.StatusRunning}); err == nil {
		t.Fatal("record with status running: no error")
	}

	// Completion: output keeps its start and its end around a marker, error its start, both
	// bounded; history shows the same excerpt.
	long := strings.Repeat("é", MaxExcerpt) + "END"
	done, err := s.Complete(ctx, 5, scheduler.Completion{RunID: ids[1], Job: "inv", Status: scheduler.StatusFailed,
		Error: "START" + long, Output: "BEGIN" + long + "\x00\xff"})
	if err != nil {
		t.Fatal(err)
	}
	checkOutputExcerpt(t, "complete", done.Output, len("BEGIN"+long+"\uFFFD\uFFFD"))
	if runs, err := s.History(ctx, "inv", 100); err != nil {
		t.Fatal(err)
	} else {
		for _, r := range runs {
			if r.RunID == ids[1] {
				checkOutputExcerpt(t, "history", r.Output, len("BEGIN"+long+"\uFFFD\uFFFD"))
			}
		}
	}
	if n := utf8.RuneCountInString(done.Error); n != MaxExcerpt || !strings.HasPrefix(done.Error, "START") || !strings.HasSuffix(done.Error, "…") {
		t.Errorf("error excerpt: %d characters", n)
	}
	wantFinished := now.UTC().Truncate(time.Microsecond)
	if done.FinishedAt == nil || !done.FinishedAt.Equal(wantFinished) || done.FinishedAt.Location() != time.UTC {
		t.Errorf("finished_at = %v, want %v in UTC", done.FinishedAt, wantFinished)
	}
	if !done.ScheduledAt.Equal(at(1)) || done.ScheduledAt.Location() != time.UTC {
		t.Errorf("scheduled_at = %v, want %v in UTC", done.ScheduledAt, at(1))
	}

	// Batched completion reports the runs that were not running.
	cres, err := s.CompleteMany(ctx, 5, []scheduler.Completion{
		{RunID: ids[2], Job: "inv", Status: scheduler.StatusSucceeded, Output: "ok"},
		{RunID: ids[1], Job: "inv", Status: scheduler.StatusSucceeded},
		{RunID: 999999, Job: "inv", Status: scheduler.StatusSucceeded},
	})
	if err != nil || !cres[0].Written || cres[0].Run.Output != "ok" || cres[1].Written || cres[1].Run.Status != scheduler.StatusFailed || cres[2].Written || cres[2].Run.RunID != 0 {
		t.Fatalf("complete many = %+v (err %v)", cres, err)
	}
	if n, err := s.NextAttempt(ctx, 5, "inv", ids[3]); err != nil || n != 2 {
		t.Fatalf("next attempt = %d (err %v), want 2", n, err)
	}
	if _, err := s.NextAttempt(ctx, 5, "inv", ids[2]); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("next attempt of a finished run: err %v, want ErrNotRunning", err)
	}

	// History: newest slot first, manual runs included, limited.
	hist, err := s.History(ctx, "inv", 4)
	if err != nil {
		t.Fatal(err)
	}
	var slots []time.Time
	for _, r := range hist {
		slots = append(slots, r.ScheduledAt)
	}
	want := []time.Time{at(6), at(5), at(3), at(2)}
	if !slices.EqualFunc(slots, want, time.Time.Equal) {
		t.Fatalf("history slots = %v, want %v", slots, want)
	}
	if r := hist[1]; r.Reason != "overlap: skip" || r.StartedAt != nil || r.FinishedAt == nil {
		t.Fatalf("history: skipped slot = %+v, want reason %q, never started, finished", r, "overlap: skip")
	}
	if all, _ := s.History(ctx, "inv", 100); len(all) != 7 {
		t.Fatalf("full history has %d runs, want 7", len(all))
	}
	// Window: scheduled runs in [from, to].
	win, err := s.Window(ctx, []string{"inv"}, at(1), at(3))
	slices.SortFunc(win, func(a, b scheduler.Run) int { return a.ScheduledAt.Compare(b.ScheduledAt) })
	if err != nil || len(win) != 3 || !win[0].ScheduledAt.Equal(at(1)) || win[0].Manual || !win[2].ScheduledAt.Equal(at(3)) {
		t.Fatalf("window = %+v (err %v), want the 3 scheduled runs of hours 1..3", win, err)
	}
	// Last run per job.
	if _, err := s.Claim(ctx, 5, "n2", scheduler.SlotKey{Job: "stock", At: at(2)}); err != nil {
		t.Fatal(err)
	}
	last, err := s.Last(ctx)
	if err != nil || len(last) != 2 || !last["inv"].ScheduledAt.Equal(at(6)) || last["stock"].Node != "n2" {
		t.Fatalf("last = %+v (err %v)", last, err)
	}
	last, err = s.Last(ctx, "stock", "nothing")
	if err != nil || len(last) != 1 || last["stock"].Job != "stock" {
		t.Fatalf("last of stock = %+v (err %v)", last, err)
	}
	// The last scheduled run per job: past manual runs, even one whose slot lies ahead of every
	// other (its requester's clock was fast), and at the same slot as a scheduled one.
	for _, h := range []int{6, 100} {
		if _, err := s.Claim(ctx, 5, "n1", scheduler.SlotKey{Job: "inv", At: at(h), Manual: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Claim(ctx, 5, "n1", scheduler.SlotKey{Job: "adhoc", At: at(1), Manual: true}); err != nil {
		t.Fatal(err)
	}
	sched, err := s.LastScheduled(ctx, "inv", "stock", "adhoc", "nothing")
	if err != nil || len(sched) != 2 || !sched["inv"].ScheduledAt.Equal(at(6)) || sched["inv"].Manual || sched["stock"].Node != "n2" {
		t.Fatalf("last scheduled = %+v (err %v), want inv's of hour 6 and stock's; none of adhoc, which has manual runs only", sched, err)
	}
	if last, err := s.Last(ctx, "inv"); err != nil || !last["inv"].Manual {
		t.Fatalf("last of inv = %+v (err %v), want its newest, the manual run", last, err)
	}
	if manual.Manual != true || manual.RunID == ids[1] {
		t.Fatalf("manual run = %+v", manual)
	}

	// JSON: the fields of `history --json`.
	js, err := json.Marshal(hist[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"job", "scheduled_at", "status", "token", "node", "attempt", "started_at", "finished_at", "error", "run_id", "output", "reason"} {
		if _, ok := m[k]; !ok {
			t.Errorf("run JSON %s lacks %q", js, k)
		}
	}
	if m["scheduled_at"] != "2026-03-01T05:00:00Z" || m["status"] != "missed" {
		t.Errorf("run JSON %s: want scheduled_at 2026-03-01T05:00:00Z (RFC 3339, UTC) and status missed", js)
	}
}
