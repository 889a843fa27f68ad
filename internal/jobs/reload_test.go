package jobs

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/schedule"
	"scheduler/internal/testenv"
)

// slotClaims is a fakeLedger that counts the claims of each slot, ahead or at fire.
type slotClaims struct {
	*fakeLedger
	mu sync.Mutex
	n  map[time.Time]int
	// hold: the next claim ahead says it is sent on sent, and waits for release to close.
	hold          atomic.Bool
	sent, release chan struct{}
}

func (l *slotClaims) count(slots []scheduler.SlotKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range slots {
		l.n[s.At.UTC()]++
	}
}

func (l *slotClaims) claimsOf(at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[at.UTC()]
}

func (l *slotClaims) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	l.count(slots)
	return l.fakeLedger.ClaimMany(ctx, token, node, slots)
}

func (l *slotClaims) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	if l.hold.CompareAndSwap(true, false) {
		l.sent <- struct{}{}
		<-l.release
	}
	l.count(slots)
	return l.fakeLedger.ClaimAheadMany(ctx, token, node, slots)
}

// reloadCase is a reload of a job whose slot 12:10 was claimed ahead.
type reloadCase struct {
	name      string
	from, to  func(*Spec)
	claimLead time.Duration // how long before its fire time the slot is claimed (ClaimAhead)
	fire      time.Duration // after the slot, when it fires by the new timing; < 0: at once
	ran       bool          // the slot runs (else it is closed skipped)
	reason    string        // why it is closed skipped, if not reasonReloaded
	before    []time.Time   // slots of the new timing that fire before it, and run
}

// TestRunner_ReloadKeepsSlotClaimedAhead: a reload changes a job's timing after its next slot
// was claimed ahead, before or after the claim answered. A slot the new timing still has runs
// once, as the run claimed for it, at its new fire time (at once if that passed); one it does
// not have is closed skipped. Before, every such slot was closed skipped ("the job's schedule
// changed") and never run.
func TestRunner_ReloadKeepsSlotClaimedAhead(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	slot := t0.Add(10 * time.Minute)
	jittered := func(text string, jitter time.Duration) func(*Spec) {
		return func(s *Spec) { s.Schedule, s.Jitter = mustSchedule(t, text), jitter }
	}
	every := func(text string) func(*Spec) { return jittered(text, 0) }
	for _, tc := range []reloadCase{
		{name: "CoarserSchedule", from: every("*/5 * * * *"), to: every("*/10 * * * *"), ran: true},
		{name: "EquivalentText", from: every("*/10 * * * *"), to: every("@every 10m"), ran: true},
		{name: "SameInstantOtherZone", from: every("10 12 * * *"),
			to: func(s *Spec) { s.Schedule = mustScheduleIn(t, "10 13 * * *", paris) }, ran: true},
		{name: "JitterAdded", from: every("*/10 * * * *"), to: jittered("*/10 * * * *", 5*time.Minute),
			fire: schedule.Jitter("job", slot, 5*time.Minute), ran: true},
		{name: "JitterRemoved", from: jittered("*/10 * * * *", 5*time.Minute), to: every("*/10 * * * *"), fire: -1, ran: true},
		{name: "DenserSchedule", from: every("*/10 * * * *"), to: every("@every 20s"), claimLead: 30 * time.Second, ran: true,
			before: []time.Time{slot.Add(-20 * time.Second)}},
		{name: "SlotGone", from: every("*/10 * * * *"), to: every("*/7 * * * *")},
		{name: "Disabled", from: every("*/10 * * * *"), to: func(s *Spec) { every("*/10 * * * *")(s); s.Enabled = false }, reason: reasonDisabled},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, slot, false) })
		t.Run(tc.name+"/ClaimInFlight", func(t *testing.T) { tc.check(t, slot, true) })
	}
}

// check runs the case; inFlight: the reload comes before the claim's answer.
func (tc reloadCase) check(t *testing.T, slot time.Time, inFlight bool) {
	var mu sync.Mutex
	ran := map[time.Time]int{}
	exec := execFunc(func(_ context.Context, a scheduler.Attempt) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		ran[a.Slot.UTC()]++
		return "ran", nil
	})
	runs := func(at time.Time) int { mu.Lock(); defer mu.Unlock(); return ran[at] }
	from := spec(t, "job", exec, tc.from)
	oldFire := from.FireAt(slot)
	lead := cmp.Or(tc.claimLead, time.Second)
	clk := newFakeClock(oldFire.Add(-lead - 30*time.Second))
	led := &slotClaims{fakeLedger: newFakeLedger(), n: map[time.Time]int{}, sent: make(chan struct{}), release: make(chan struct{})}
	led.hold.Store(inFlight)
	core, logs := observer.New(zapcore.InfoLevel)
	r := mustNew(t, []Spec{from}, Options{Node: "n1", Ledger: led, Clock: clk, ClaimAhead: lead,
		Logger: zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))})
	stop := leadAsync(t, r, token).stop
	armed := func() {
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 1 })
	}
	armed()
	clk.Advance(30 * time.Second) // the slot is claimed ahead
	if inFlight {
		<-led.sent
	} else {
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "the claim ahead", func() bool {
			rows := led.snapshot("job")
			return len(rows) == 1 && rows[0].ScheduledAt.Equal(slot) && clk.Pending() == 1
		})
	}
	if err := r.SetTable([]Spec{spec(t, "job", exec, tc.to)}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "reloaded", func() bool { return logs.FilterMessage("table reloaded").Len() == 1 })
	if inFlight {
		close(led.release) // the claim answers
	}
	fire := slot.Add(tc.fire)
	if tc.fire < 0 {
		fire = clk.Now()
	}
	for _, at := range tc.before {
		armed()
		clk.Advance(at.Sub(clk.Now()))
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "the slot before", func() bool { return runs(at) == 1 })
	}
	switch {
	case tc.ran && fire.After(clk.Now()):
		armed()
		clk.Advance(fire.Sub(clk.Now()) - time.Millisecond)
		time.Sleep(20 * time.Millisecond) // the loop's turn: a run started early would show
		if n := runs(slot); n != 0 {
			t.Fatalf("the slot ran %d times before its new fire time", n)
		}
		clk.Advance(time.Millisecond)
	case !tc.ran:
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() >= 1 })
		clk.Advance(oldFire.Sub(clk.Now()))
	}
	var row ledgerRow
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the slot settled", func() bool {
		for _, r := range led.snapshot("job") {
			if r.ScheduledAt.Equal(slot) && r.Status != scheduler.StatusRunning {
				row = r
				return true
			}
		}
		return false
	})
	if err := stop(); err != nil {
		t.Fatalf("Lead=%v", err)
	}
	want, wantRuns := scheduler.StatusSucceeded, 1
	if !tc.ran {
		want, wantRuns = scheduler.StatusSkipped, 0
	}
	if row.Status != want || runs(slot) != wantRuns || row.Token != token || row.Attempt != wantRuns || led.claimsOf(slot) != 1 {
		t.Fatalf("slot 12:10: row %+v, %d runs, %d claims; want %s, run %d times (attempt %d) under token %d, claimed once",
			row, runs(slot), led.claimsOf(slot), want, wantRuns, wantRuns, token)
	}
	if reason := cmp.Or(tc.reason, reasonReloaded); !tc.ran && row.Completion.Reason != reason {
		t.Fatalf("reason %q, want %q", row.Completion.Reason, reason)
	}
	seen := map[time.Time]bool{}
	for _, r := range led.snapshot("job") {
		if seen[r.ScheduledAt.UTC()] {
			t.Fatalf("two rows for slot %s", r.ScheduledAt)
		}
		seen[r.ScheduledAt.UTC()] = true
	}
}

func mustScheduleIn(tb testing.TB, text string, loc *time.Location) *schedule.Schedule {
	tb.Helper()
	s, err := schedule.Parse(text, loc)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestRunner_ReloadWhileDrainingStartsNoCarriedSlot: a reload kept the slot 12:10, claimed
// ahead, for a denser timing whose slot 12:09:40 comes first, and the shutdown's drain began
// before either fired. A reload during the drain (a SIGHUP within the grace) must start
// nothing: the drain stops firing, and the claimed slot stays running for the next leader, as
// every slot claimed ahead does. Before, the reload fired the kept slot, its new fire time
// passed, in the middle of the shutdown.
func TestRunner_ReloadWhileDrainingStartsNoCarriedSlot(t *testing.T) {
	slot := t0.Add(10 * time.Minute)
	started := make(chan time.Time, 4)
	exec := execFunc(func(_ context.Context, a scheduler.Attempt) (string, error) {
		started <- a.Slot.UTC()
		return "ran", nil
	})
	every := func(text string) func(*Spec) { return func(s *Spec) { s.Schedule = mustSchedule(t, text) } }
	lead := 30 * time.Second
	clk := newFakeClock(slot.Add(-lead - 30*time.Second))
	led := newFakeLedger()
	core, logs := observer.New(zapcore.InfoLevel)
	r := mustNew(t, []Spec{spec(t, "job", exec, every("*/10 * * * *"))}, Options{Node: "n1", Ledger: led, Clock: clk,
		ClaimAhead: lead, Logger: zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))})
	stop := leadAsync(t, r, token).stop
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 1 })
	clk.Advance(30 * time.Second) // the slot is claimed ahead
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the claim ahead", func() bool {
		rows := led.snapshot("job")
		return len(rows) == 1 && rows[0].ScheduledAt.Equal(slot) && clk.Pending() == 1
	})
	denser := []Spec{spec(t, "job", exec, every("@every 20s"))}
	if err := r.SetTable(denser); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "reloaded", func() bool { return logs.FilterMessage("table reloaded").Len() == 1 })
	r.Drain(context.Background()) // no run in progress: it returns once the loop stopped firing
	clk.Advance(time.Minute)      // past the kept slot's fire time
	if err := r.SetTable(denser); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "reloaded while draining", func() bool {
		return logs.FilterMessage("table reloaded").Len() == 2
	})
	select {
	case at := <-started:
		t.Fatalf("slot %s started during the drain", at)
	case <-time.After(200 * time.Millisecond): // a run the reload launched reaches its executor by then
	}
	for _, row := range led.snapshot("job") {
		if row.Status != scheduler.StatusRunning || row.Attempt != 0 {
			t.Fatalf("row %+v: want every slot claimed ahead left running (attempt 0) for the next leader", row)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("Lead=%v", err)
	}
}

// TestRunner_ReloadJitterRemovedBeforeClaim: a reload that removes a job's jitter after its slot
// but before its jittered fire time (and so before its claim ahead) fires the slot at once: the
// new timing still has it, and its new fire time has passed. Before, the new timing's first slot
// was the next one, and the slot was lost: no run, no row, and no later catch-up looks before
// the next slot's run.
func TestRunner_ReloadJitterRemovedBeforeClaim(t *testing.T) {
	slot := t0.Add(10 * time.Minute)
	j := schedule.Jitter("job", slot, 9*time.Minute)
	if j < 10*time.Second {
		t.Fatalf("the jitter of the slot is %s: the test needs one of 10 s or more", j)
	}
	mk := func(jitter time.Duration) Spec {
		ok := execFunc(func(context.Context, scheduler.Attempt) (string, error) { return "ran", nil })
		return spec(t, "job", ok, func(s *Spec) { s.Schedule, s.Jitter = mustSchedule(t, "*/10 * * * *"), jitter })
	}
	h := newHarness(t, t0.Add(5*time.Minute), mk(9*time.Minute))
	h.lead(token)
	h.advance(slot.Add(j/2).Sub(h.clock.Now()), 1) // past the slot, before its claim ahead
	if err := h.runner.SetTable([]Spec{mk(0)}); err != nil {
		t.Fatal(err)
	}
	h.waitRows("job", "the slot run after the reload", func(rows []ledgerRow) bool {
		return slices.ContainsFunc(rows, func(r ledgerRow) bool { return r.ScheduledAt.Equal(slot) && r.Status == scheduler.StatusSucceeded })
	})
}

// TestRunner_ReloadSameSlotClaimedAhead: a reload that changes a job's timing but keeps its next
// slot, before that slot is claimed ahead, leaves it to be claimed ahead as before, not when it
// fires: the slot's entry carried over unclaimed does not take the new entry off the claim queue.
func TestRunner_ReloadSameSlotClaimedAhead(t *testing.T) {
	ok := execFunc(func(context.Context, scheduler.Attempt) (string, error) { return "ran", nil })
	every := func(text string) Spec {
		return spec(t, "job", ok, func(s *Spec) { s.Schedule = mustSchedule(t, text) })
	}
	clk, led := newFakeClock(t0.Add(30*time.Second)), newFakeLedger()
	core, logs := observer.New(zapcore.InfoLevel)
	r := mustNew(t, []Spec{every("* * * * *")}, Options{Node: "n1", Ledger: led, Clock: clk,
		Logger: zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))})
	defer leadAsync(t, r, token).stop()
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 1 })
	if err := r.SetTable([]Spec{every("*/1 * * * *")}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "reloaded", func() bool { return logs.FilterMessage("table reloaded").Len() == 1 })
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed again", func() bool { return clk.Pending() == 1 })
	clk.Advance(29*time.Second + 500*time.Millisecond) // within the slot's claim ahead, before it fires
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the slot claimed ahead", func() bool {
		rows := led.snapshot("job")
		return len(rows) == 1 && rows[0].ScheduledAt.Equal(t0.Add(time.Minute))
	})
}
