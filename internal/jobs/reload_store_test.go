package jobs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
)

// slotLedger is the store, counting the claims of each slot and the executions of each slot.
type slotLedger struct {
	*fence.Store
	mu     sync.Mutex
	claims map[time.Time]int
	ran    map[time.Time]int
}

func newSlotLedger(store *fence.Store) *slotLedger {
	return &slotLedger{Store: store, claims: map[time.Time]int{}, ran: map[time.Time]int{}}
}

func (l *slotLedger) count(m map[time.Time]int, at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return m[at.UTC()]
}

func (l *slotLedger) claimed(slots []scheduler.SlotKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range slots {
		l.claims[s.At.UTC()]++
	}
}

func (l *slotLedger) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	l.claimed(slots)
	return l.Store.ClaimMany(ctx, token, node, slots)
}

func (l *slotLedger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	l.claimed(slots)
	return l.Store.ClaimAheadMany(ctx, token, node, slots)
}

// Execute runs a slot of the job: it counts it.
func (l *slotLedger) Execute(_ context.Context, a scheduler.Attempt) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ran[a.Slot.UTC()]++
	return "ran", nil
}

// TestRunner_ReloadAfterClaimAheadOnStore: a reload changes a job's timing after its next slot was
// claimed ahead in the real store. A slot the new timing still has runs once, as the run claimed
// for it and claimed once; one it does not have is closed skipped. Before, both were closed
// skipped.
func TestRunner_ReloadAfterClaimAheadOnStore(t *testing.T) {
	for name, kept := range map[string]bool{"SlotKept": true, "SlotGone": false} {
		t.Run(name, func(t *testing.T) {
			fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
				led := newSlotLedger(store)
				r, err := jobs.New([]jobs.Spec{testSpec(t, led, "@every 2s")}, jobs.Options{Node: "n1", Ledger: led, Logger: zaptest.NewLogger(t)})
				if err != nil {
					t.Fatal(err)
				}
				leadFor(t, r, 10)
				slot := claimedAhead(ctx, t, store)
				// The new timing: every second keeps the slot; a period it is no multiple of does not.
				to := "@every 1s"
				for _, n := range []int64{3, 5, 7, 11, 13} {
					if !kept && slot.Unix()%n != 0 {
						to = "@every " + time.Duration(n*int64(time.Second)).String()
						break
					}
				}
				if err := r.SetTable([]jobs.Spec{testSpec(t, led, to)}); err != nil {
					t.Fatal(err)
				}
				run := waitRun(ctx, t, store, slot)
				want, runs := scheduler.StatusSucceeded, 1
				if !kept {
					want, runs = scheduler.StatusSkipped, 0
				}
				if run.Status != want || run.Token != 10 || run.Attempt != runs || led.count(led.ran, slot) != runs || led.count(led.claims, slot) != 1 {
					t.Fatalf("run=%+v, %d executions, %d claims; want %s under token 10, attempt %d, executed %d times, claimed once",
						run, led.count(led.ran, slot), led.count(led.claims, slot), want, runs, runs)
				}
				if !kept && run.Reason != "the job's schedule changed before the slot" {
					t.Fatalf("reason %q, want the schedule's change", run.Reason)
				}
				oneRowPerSlot(ctx, t, store)
			})
		})
	}
}

// claimedAhead waits for the job's next slot to be claimed ahead (running, not started) and
// returns it.
func claimedAhead(ctx context.Context, t *testing.T, store *fence.Store) time.Time {
	t.Helper()
	return awaitRun(ctx, t, store, "no slot claimed ahead", func(r scheduler.Run) bool {
		return r.Status == scheduler.StatusRunning && r.Attempt == 0
	}).ScheduledAt
}

// oneRowPerSlot fails the test if the job has two runs of one slot.
func oneRowPerSlot(ctx context.Context, t *testing.T, store *fence.Store) {
	t.Helper()
	runs, err := store.History(ctx, "job", 100)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Time]bool{}
	for _, r := range runs {
		if k := r.ScheduledAt.UTC(); seen[k] && !r.Manual {
			t.Fatalf("two runs of slot %s: %+v", k, runs)
		}
		seen[r.ScheduledAt.UTC()] = true
	}
}

// TestRunner_ReloadRemovesJobWithQueuedSlot: an older leader left three slots of a misfire-all
// job running; the catch-up takes the first over and queues the other two behind it. A reload
// then removes or disables the job. The queued runs are closed skipped at once, saying why, and
// the running one finishes: no run of the job stays running. Before, the queued runs were let go
// in memory and stayed running in the ledger (a removed job has no leader to finish them), or
// ran after all (a disabled job).
func TestRunner_ReloadRemovesJobWithQueuedSlot(t *testing.T) {
	for name, reason := range map[string]string{"removed": "the job was removed from the table", "disabled": "the job was disabled"} {
		t.Run(name, func(t *testing.T) {
			fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
				last := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
				slots := []scheduler.SlotKey{{Job: "job", At: last.Add(-2 * time.Minute)}, {Job: "job", At: last.Add(-time.Minute)}, {Job: "job", At: last}}
				if _, err := store.ClaimMany(ctx, 5, "old", slots); err != nil {
					t.Fatal(err)
				}
				g := &gatedExec{entered: make(chan struct{}), release: make(chan struct{})}
				g.armed.Store(true)
				spec := testSpec(t, g, "@every 1m")
				spec.Misfire, spec.Overlap = jobs.MisfireAll, jobs.OverlapQueue
				r := newRunner(t, spec, "n1", store)
				leadFor(t, r, 10)
				<-g.entered
				var table []jobs.Spec
				if name == "disabled" {
					spec.Enabled = false
					table = append(table, spec)
				}
				if err := r.SetTable(table); err != nil {
					t.Fatal(err)
				}
				for _, s := range slots[1:] {
					if run := waitRun(ctx, t, store, s.At); run.Status != scheduler.StatusSkipped || run.Reason != reason {
						t.Fatalf("queued slot's run %+v, want skipped (%s), not run", run, reason)
					}
				}
				close(g.release)
				if run := waitRun(ctx, t, store, slots[0].At); run.Status != scheduler.StatusSucceeded || run.Attempt != 2 {
					t.Fatalf("taken-over run %+v, want succeeded at attempt 2", run)
				}
				oneRowPerSlot(ctx, t, store)
			})
		})
	}
}
