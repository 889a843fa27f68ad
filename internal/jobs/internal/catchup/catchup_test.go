package catchup

import (
	"slices"
	"strings"
	"testing"
	"time"

	"scheduler"

	"scheduler/internal/schedule"
)

// t0 is a round instant the tests start from.
var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// job returns a job that runs every minute, overridden by mod.
func job(tb testing.TB, name string, mod func(*Job)) Job {
	tb.Helper()
	s, err := schedule.Parse("@every 1m", time.UTC)
	if err != nil {
		tb.Fatal(err)
	}
	j := Job{Name: name, Schedule: s, Misfire: MisfireOnce, Window: time.Hour, Enabled: true}
	if mod != nil {
		mod(&j)
	}
	return j
}

// TestDecide_OrphanIsAlwaysFinished: a slot an older leader started and left running is
// finished by the next leader whatever the misfire policy; the policy applies to the slots
// that never started.
func TestDecide_OrphanIsAlwaysFinished(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	orphan := scheduler.Run{RunID: 9, Job: "job", ScheduledAt: at(1), Status: scheduler.StatusRunning, Token: 5, Attempt: 1}
	done := scheduler.Run{RunID: 8, Job: "job", ScheduledAt: at(0), Status: scheduler.StatusSucceeded, Token: 5, Attempt: 1}
	for _, tc := range []struct {
		misfire Misfire
		run     []int // minutes of the slots run, oldest first
		missed  int
	}{
		{MisfireSkip, []int{1}, 3},
		{MisfireOnce, []int{1, 4}, 2},
		{MisfireAll, []int{1, 2, 3, 4}, 0},
	} {
		t.Run(string(tc.misfire), func(t *testing.T) {
			j := job(t, "job", func(j *Job) { j.Misfire = tc.misfire })
			plan, err := Decide(j, at(4).Add(30*time.Second), []scheduler.Run{done, orphan}, []scheduler.Run{orphan}, &orphan)
			if err != nil {
				t.Fatal(err)
			}
			var ran []int
			for _, p := range plan.Run {
				ran = append(ran, int(p.Key.At.Sub(t0)/time.Minute))
			}
			if !slices.Equal(ran, tc.run) || len(plan.Missed) != tc.missed || len(plan.Close) != 0 {
				t.Fatalf("run %v missed %d closed %d, want run %v missed %d closed 0", ran, len(plan.Missed), len(plan.Close), tc.run, tc.missed)
			}
			if plan.Run[0].Orphan == nil || plan.Run[0].Orphan.RunID != orphan.RunID {
				t.Fatalf("the orphan is not taken over: %+v", plan.Run[0])
			}
		})
	}
}

// TestDecide_OrphanThatRanIsNeverMissed: an orphan older than the catch-up window is not run
// again; one that started (its outcome was lost) is closed failed saying so, never missed; one
// claimed ahead that never started missed its slot.
func TestDecide_OrphanThatRanIsNeverMissed(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	j := job(t, "job", func(j *Job) { j.Window = 10 * time.Minute })
	ran := scheduler.Run{RunID: 1, Job: "job", ScheduledAt: at(0), Status: scheduler.StatusRunning, Token: 5, Attempt: 1}
	ahead := scheduler.Run{RunID: 2, Job: "job", ScheduledAt: at(1), Status: scheduler.StatusRunning, Token: 5}
	last := ahead
	plan, err := Decide(j, at(120), nil, []scheduler.Run{ran, ahead}, &last)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Close) != 2 {
		t.Fatalf("closed %+v, want both orphans", plan.Close)
	}
	for _, c := range plan.Close {
		switch c.RunID {
		case ran.RunID:
			if c.Status != scheduler.StatusFailed || c.Attempt != 1 || !strings.Contains(c.Reason, "started") {
				t.Errorf("orphan that ran closed as %+v, want failed, attempt 1, saying it started", c)
			}
		case ahead.RunID:
			if c.Status != scheduler.StatusMissed {
				t.Errorf("orphan that never started closed as %+v, want missed", c)
			}
		}
	}
	for _, m := range plan.Missed {
		if m.Slot.At.Equal(ran.ScheduledAt) {
			t.Errorf("the slot that ran is recorded missed: %+v", m)
		}
	}
}

// TestNotRun: an orphan that never started is closed with the status asked for; one that
// started is closed failed, with its attempt, saying it started.
func TestNotRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		attempt     int
		status      scheduler.Status
		wantStatus  scheduler.Status
		wantStarted bool
	}{
		{"NeverStartedMissed", 0, scheduler.StatusMissed, scheduler.StatusMissed, false},
		{"NeverStartedSkipped", 0, scheduler.StatusSkipped, scheduler.StatusSkipped, false},
		{"StartedIsFailed", 2, scheduler.StatusSkipped, scheduler.StatusFailed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := scheduler.Run{RunID: 7, Job: "job", ScheduledAt: t0, Status: scheduler.StatusRunning, Attempt: tc.attempt}
			c := NotRun(o, tc.status, "paused")
			if c.RunID != 7 || c.Job != "job" || c.Status != tc.wantStatus || c.Attempt != tc.attempt {
				t.Fatalf("closed as %+v, want run 7 of job, status %s, attempt %d", c, tc.wantStatus, tc.attempt)
			}
			if started := strings.Contains(c.Reason, "started"); started != tc.wantStarted || !strings.HasPrefix(c.Reason, "paused") {
				t.Fatalf("reason %q: says it started=%v, want %v, after the reason given", c.Reason, started, tc.wantStarted)
			}
		})
	}
}

// TestDecide_OrphanOlderThanTheNewestRun: a slot an older leader started and left running is
// finished by the next leader also when a later slot of the job has a run already (claimed ahead
// or queued behind it, or recorded skipped for overlap, before the leader stopped). Such a slot
// was once closed failed as if it were older than the catch-up window, its work half done.
func TestDecide_OrphanOlderThanTheNewestRun(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	orphan := scheduler.Run{RunID: 9, Job: "job", ScheduledAt: at(1), Status: scheduler.StatusRunning, Token: 5, Attempt: 1}
	queued := scheduler.Run{RunID: 10, Job: "job", ScheduledAt: at(2), Status: scheduler.StatusRunning, Token: 5}
	skipped := scheduler.Run{RunID: 10, Job: "job", ScheduledAt: at(2), Status: scheduler.StatusSkipped, Token: 5}
	for _, tc := range []struct {
		name    string
		window  []scheduler.Run
		orphans []scheduler.Run
		last    scheduler.Run
		run     []int // minutes of the slots run, oldest first
	}{
		{"LaterSlotQueued", []scheduler.Run{orphan, queued}, []scheduler.Run{orphan, queued}, queued, []int{1, 2}},
		{"LaterSlotSkipped", []scheduler.Run{orphan, skipped}, []scheduler.Run{orphan}, skipped, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Decide(job(t, "job", nil), at(2).Add(30*time.Second), tc.window, tc.orphans, &tc.last)
			if err != nil {
				t.Fatal(err)
			}
			var ran []int
			for _, p := range plan.Run {
				ran = append(ran, int(p.Key.At.Sub(t0)/time.Minute))
			}
			if !slices.Equal(ran, tc.run) || len(plan.Close) != 0 || len(plan.Missed) != 0 {
				t.Fatalf("run %v closed %+v missed %+v, want run %v and nothing closed or missed", ran, plan.Close, plan.Missed, tc.run)
			}
			if plan.Run[0].Orphan == nil || plan.Run[0].Orphan.RunID != orphan.RunID {
				t.Fatalf("the orphan is not taken over: %+v", plan.Run[0])
			}
		})
	}
}

// TestDecide_OrphanTakenOverTooOften: an orphan is taken over while its attempts stay within
// its retries and MaxTakeovers more; past them (its leader stopped during each: a job that
// brings its leader down) it is closed failed, saying so, whatever the misfire policy, a
// manual run's included. Before, each new leader ran it again, and went down with it.
func TestDecide_OrphanTakenOverTooOften(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	for _, tc := range []struct {
		retries, attempt int
		manual, run      bool
	}{
		{0, 3, false, true},
		{0, 4, false, false},
		{2, 5, false, true},
		{2, 6, false, false},
		{0, 4, true, false},
	} {
		orphan := scheduler.Run{RunID: 9, Job: "job", ScheduledAt: at(3), Manual: tc.manual, Status: scheduler.StatusRunning, Token: 5, Attempt: tc.attempt}
		last := scheduler.Run{RunID: 8, Job: "job", ScheduledAt: at(3), Status: scheduler.StatusSucceeded, Token: 5, Attempt: 1}
		if !tc.manual {
			last = orphan
		}
		j := job(t, "job", func(j *Job) { j.Retries, j.Misfire = tc.retries, MisfireSkip })
		plan, err := Decide(j, at(3).Add(30*time.Second), []scheduler.Run{orphan}, []scheduler.Run{orphan}, &last)
		if err != nil {
			t.Fatal(err)
		}
		ran := len(plan.Run) == 1 && plan.Run[0].Orphan != nil && plan.Run[0].Orphan.RunID == 9
		closed := len(plan.Close) == 1 && plan.Close[0].RunID == 9 && plan.Close[0].Status == scheduler.StatusFailed &&
			strings.Contains(plan.Close[0].Reason, "its leaders stopped during each of its")
		if ran != tc.run || closed == tc.run || len(plan.Run)+len(plan.Close) != 1 {
			t.Fatalf("retries %d, attempt %d, manual %v: plan %+v, want run %v (else closed failed)", tc.retries, tc.attempt, tc.manual, plan, tc.run)
		}
	}
}

// TestDecide_WindowOfTooManySlots: a one-second job down for 30 hours, its catch-up window 48
// hours: more slots than schedule.MaxBetween. The misfire policy still applies, to the newest
// slot due and the one before it: once runs the newest and records the other missed, skip
// records both missed. Before, the catch-up failed for the job: nothing was run or recorded.
func TestDecide_WindowOfTooManySlots(t *testing.T) {
	now := t0.Add(30*time.Hour + 500*time.Millisecond)
	last := scheduler.Run{RunID: 1, Job: "job", ScheduledAt: t0, Status: scheduler.StatusSucceeded, Token: 5, Attempt: 1}
	for _, misfire := range []Misfire{MisfireOnce, MisfireSkip} {
		for _, spec := range []string{"* * * * * *", "@every 1s"} {
			s, err := schedule.Parse(spec, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			j := job(t, "job", func(j *Job) { j.Schedule, j.Misfire, j.Window = s, misfire, 48*time.Hour })
			plan, err := Decide(j, now, []scheduler.Run{last}, nil, &last)
			if err != nil {
				t.Fatalf("%s, %s: %v", spec, misfire, err)
			}
			newest, before := t0.Add(30*time.Hour), t0.Add(30*time.Hour-time.Second)
			ran := len(plan.Run) == 1 && plan.Run[0].Key.At.Equal(newest)
			missed := func(at time.Time) bool {
				return slices.ContainsFunc(plan.Missed, func(o scheduler.Outcome) bool { return o.Slot.At.Equal(at) })
			}
			if misfire == MisfireOnce && (!ran || !missed(before) || len(plan.Missed) != 1) ||
				misfire == MisfireSkip && (len(plan.Run) != 0 || !missed(before) || !missed(newest) || len(plan.Missed) != 2) {
				t.Fatalf("%s, %s: run %v, missed %v", spec, misfire, plan.Run, plan.Missed)
			}
		}
	}
}

// TestDecide_JitterBeyondTheWindow: a jitter longer than the catch-up window. No slot whose
// jittered fire time is still to come is recorded missed, whichever branch decides it: the
// firing loop runs it. Before, the slots older than the window were recorded missed without
// looking at their fire time, and such a slot then never ran.
func TestDecide_JitterBeyondTheWindow(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	last := scheduler.Run{RunID: 1, Job: "job", ScheduledAt: at(0), Status: scheduler.StatusSucceeded, Token: 5, Attempt: 1}
	j := job(t, "job", func(j *Job) { j.Window, j.Jitter, j.Misfire = 5*time.Second, 50*time.Second, MisfireSkip })
	pending := 0
	for m := 1; m <= 30; m++ {
		now := at(m).Add(10 * time.Second) // the slot at(m) is older than the window
		plan, err := Decide(j, now, []scheduler.Run{last}, nil, &last)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range plan.Missed {
			if j.fireAt(o.Slot.At).After(now) {
				t.Fatalf("now %s: slot %s recorded missed, though it fires at %s", now, o.Slot.At, j.fireAt(o.Slot.At))
			}
		}
		if j.fireAt(at(m)).After(now) {
			pending++
		}
	}
	if pending == 0 {
		t.Fatal("no slot whose fire time was still to come: the case is not tested")
	}
}
