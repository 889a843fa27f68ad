package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"scheduler"
)

// TestConformance runs the same suite against Postgres and SQLite.
func TestConformance(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Run("StaleTokenRefused", func(t *testing.T) { testStaleTokenRefused(t, b.fresh(t)) })
			t.Run("RaiseAllWaitsForInFlightOlderWriter", func(t *testing.T) {
				s := b.fresh(t)(Config{})
				ctx := testCtx(t)
				err := checkRaiseWaits(ctx, s, s, "nightly", 10, raiseAllTo(s, 20, "nightly", "other"))
				if err != nil {
					t.Fatal(err)
				}
			})
			t.Run("NewerWriterWaitsForInFlightOlderWriter", func(t *testing.T) {
				s := b.fresh(t)(Config{})
				ctx := testCtx(t)
				err := checkRaiseWaits(ctx, s, s, "nightly", 10, func(ctx context.Context) error {
					return s.Fenced(ctx, "nightly", 20, func(_ context.Context, tx scheduler.Tx) error { return insertProbe(ctx, tx, "nightly", 20, "newer") })
				})
				if err != nil {
					t.Fatal(err)
				}
			})
			t.Run("OlderWriterArrivingDuringRaiseIsRefused", func(t *testing.T) {
				s := b.fresh(t)(Config{})
				if err := checkLateWriter(testCtx(t), s, s, holdRaise(s), "nightly", 10, 20); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("OlderWriterArrivingDuringRaiseAllIsRefused", func(t *testing.T) {
				s := b.fresh(t)(Config{})
				if err := checkLateWriterDuringRaiseAll(testCtx(t), s, "alpha", "beta", 10, 20); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("OlderWriterQueuesBehindWaitingRaise", func(t *testing.T) {
				// Fairness: a raise waiting for an in-flight writer is not
				// overtaken by later writers with the same old token.
				s := b.fresh(t)(Config{})
				if err := checkLateWriterDuringRaiseAll(testCtx(t), s, "alpha", "alpha", 10, 20); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("SameTokenWriters", func(t *testing.T) {
				s := b.fresh(t)(Config{})
				ctx, cancel := context.WithTimeout(testCtx(t), 15*time.Second)
				defer cancel()
				if err := checkSameToken(ctx, t, s, "nightly", 10); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("ClaimUniqueUnderConcurrentClaimers", func(t *testing.T) { testClaimUnique(t, b.fresh(t)) })
			t.Run("OrphanedRunDetectedAndReclaimed", func(t *testing.T) { testOrphans(t, b.fresh(t)) })
			t.Run("TokenRegressionGuard", func(t *testing.T) { testRegression(t, b.fresh(t)) })
			t.Run("Ledger", func(t *testing.T) { testLedger(t, b.fresh(t)) })
			t.Run("ReclaimMany", func(t *testing.T) { testReclaimMany(t, b.fresh(t)) })
			t.Run("ReclaimManyChunks", func(t *testing.T) { testReclaimManyChunks(t, b.fresh(t)) })
			t.Run("WindowOfManyJobs", func(t *testing.T) { testWindowMany(t, b.fresh(t)) })
			t.Run("StartedAtOfClaimsAhead", func(t *testing.T) { testStartedAt(t, b.fresh(t)) })
			t.Run("TxPlaceholders", func(t *testing.T) { testTxPlaceholders(t, b.fresh(t)) })
			t.Run("StatementErrors", func(t *testing.T) { testStatementErrors(t, b.fresh(t)) })
		})
	}
}

func testStaleTokenRefused(t *testing.T, open func(Config) *Store) {
	s := open(Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"invoices"}, 20); err != nil {
		t.Fatalf("raise: %v", err)
	}
	if err := ensureProbe(ctx, s); err != nil {
		t.Fatal(err)
	}
	var stmtErr error
	err := s.Fenced(ctx, "invoices", 10, func(_ context.Context, tx scheduler.Tx) error {
		stmtErr = insertProbe(ctx, tx, "invoices", 10, "stale")
		return nil // even if fn drops the error, nothing commits
	})
	var se *scheduler.FenceError
	if !errors.Is(err, ErrStale) || !errors.As(err, &se) {
		t.Fatalf("write with token 10 after raise to 20: err %v, want ErrStale", err)
	}
	if se.Job != "invoices" || se.Token != 10 || se.Fence != 20 {
		t.Fatalf("stale error = %+v, want job invoices, token 10, fence 20", *se)
	}
	if !errors.Is(stmtErr, ErrStale) && stmtErr != nil {
		t.Fatalf("fn's statement under a stale token: err %v, want ErrStale (or fn not called)", stmtErr)
	}
	if n, err := probes(ctx, s, "invoices", 10, "stale"); err != nil || n != 0 {
		t.Fatalf("stale write committed %d rows (err %v)", n, err)
	}
	// No statement at all: the verdict is still stale.
	if err := s.Fenced(ctx, "invoices", 10, func(context.Context, scheduler.Tx) error { return nil }); !errors.Is(err, ErrStale) {
		t.Fatalf("empty fn with token 10: err %v, want ErrStale", err)
	}
	if err := s.Fenced(ctx, "invoices", 20, func(context.Context, scheduler.Tx) error { return nil }); err != nil {
		t.Fatalf("write with the fence's own token: %v", err)
	}
	// A newer token raises the fence itself, then the previous one is stale.
	if err := s.Fenced(ctx, "invoices", 30, func(context.Context, scheduler.Tx) error { return nil }); err != nil {
		t.Fatalf("write with token 30: %v", err)
	}
	if err := s.Fenced(ctx, "invoices", 20, func(context.Context, scheduler.Tx) error { return nil }); !errors.Is(err, ErrStale) {
		t.Fatalf("write with token 20 after 30: err %v, want ErrStale", err)
	}
	// A function's error rolls back and is returned as it is.
	boom := errors.New("boom")
	if err := s.Fenced(ctx, "invoices", 30, func(context.Context, scheduler.Tx) error { return boom }); err != boom {
		t.Fatalf("fn error: got %v, want it unchanged", err)
	}
	fences, err := s.Fences(ctx)
	if err != nil || fences["invoices"] != 30 {
		t.Fatalf("fences = %v (err %v), want invoices:30", fences, err)
	}
	if err := s.Fenced(ctx, "invoices", 0, func(context.Context, scheduler.Tx) error { return nil }); err == nil || errors.Is(err, ErrStale) {
		t.Fatalf("token 0: err %v, want an invalid-token error", err)
	}
}

func testClaimUnique(t *testing.T, open func(Config) *Store) {
	s := open(Config{})
	ctx := testCtx(t)
	base := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	const nSlots, nClaimers = 20, 6
	var slots []scheduler.SlotKey
	for i := range nSlots {
		slots = append(slots, scheduler.SlotKey{Job: fmt.Sprintf("job%d", i%3), At: base.Add(time.Duration(i) * time.Hour)})
	}
	if err := s.RaiseAll(ctx, []string{"job0", "job1", "job2"}, 7); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		winners = map[slotKey][]string{}
		seen    = map[slotKey]map[int64]bool{}
		wg      sync.WaitGroup
		errs    = make(chan error, nClaimers)
	)
	for c := range nClaimers {
		wg.Go(func() {
			node := fmt.Sprintf("node%d", c)
			// Each claimer claims every slot, in its own order and batches.
			mine := append([]scheduler.SlotKey(nil), slots...)
			for i := range mine {
				j := (i*7 + c*5) % len(mine)
				mine[i], mine[j] = mine[j], mine[i]
			}
			for lo := 0; lo < len(mine); lo += 1 + c {
				res, err := s.ClaimMany(ctx, 7, node, mine[lo:min(lo+1+c, len(mine))])
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, r := range res {
					k := keyOf(r.Run.Key())
					if r.Written {
						winners[k] = append(winners[k], node)
					}
					if seen[k] == nil {
						seen[k] = map[int64]bool{}
					}
					seen[k][r.Run.RunID] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("claim: %v", err)
	}
	for _, sl := range slots {
		k := keyOf(sl)
		if len(winners[k]) != 1 {
			t.Errorf("slot %v claimed by %v, want exactly one claimer", k, winners[k])
		}
		if len(seen[k]) != 1 {
			t.Errorf("slot %v reported with run ids %v, want one run", k, seen[k])
		}
	}
	// A second claim of a running slot reports the run that is there.
	_, err := s.Claim(ctx, 7, "late", slots[0])
	var taken *SlotTakenError
	if !errors.Is(err, ErrSlotTaken) || !errors.As(err, &taken) {
		t.Fatalf("claim of a claimed slot: err %v, want ErrSlotTaken", err)
	}
	if taken.Run.Status != scheduler.StatusRunning || taken.Run.Token != 7 || taken.Run.Key() != slots[0] {
		t.Fatalf("taken run = %+v, want running with token 7", taken.Run)
	}
	if r := stored(t, s, slots[0]); r.Node != winners[keyOf(slots[0])][0] {
		t.Fatalf("stored run = %+v, want the claim by %v", r, winners[keyOf(slots[0])])
	}
	// Duplicates within one call are claimed once.
	dup := scheduler.SlotKey{Job: "job0", At: base.Add(-time.Hour)}
	res, err := s.ClaimMany(ctx, 7, "n", []scheduler.SlotKey{dup, dup})
	if err != nil || len(res) != 2 || !res[0].Written || res[1].Written || res[0].Run.RunID != res[1].Run.RunID {
		t.Fatalf("duplicate slots: %+v (err %v), want the first written and the second the same run", res, err)
	}
	// A finished slot is taken too, and says so.
	if _, err := s.Complete(ctx, 7, scheduler.Completion{RunID: res[0].Run.RunID, Job: "job0", Status: scheduler.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Claim(ctx, 7, "n", dup)
	if !errors.As(err, &taken) || taken.Run.Status != scheduler.StatusSucceeded {
		t.Fatalf("claim of a succeeded slot: err %v, want SlotTakenError with status succeeded", err)
	}
}

func testOrphans(t *testing.T, open func(Config) *Store) {
	s := open(Config{})
	ctx := testCtx(t)
	slot := scheduler.SlotKey{Job: "stock", At: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)}
	other := scheduler.SlotKey{Job: "stock", At: slot.At.Add(time.Hour)}
	run, err := s.Claim(ctx, 10, "old-leader", slot)
	if err != nil {
		t.Fatal(err)
	}
	if run.Attempt != 1 || run.Status != scheduler.StatusRunning {
		t.Fatalf("claimed run = %+v", run)
	}
	if r := stored(t, s, slot); r.StartedAt == nil || r.FinishedAt != nil || r.Node != "old-leader" {
		t.Fatalf("stored claimed run = %+v", r)
	}
	done, err := s.Claim(ctx, 10, "old-leader", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, 10, scheduler.Completion{RunID: done.RunID, Job: "stock", Status: scheduler.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	if o, err := s.Orphans(ctx); err != nil || len(o) != 0 {
		t.Fatalf("orphans before any takeover = %+v (err %v), want none", o, err)
	}

	// The old leader dies; a new one raises the fence.
	if err := s.RaiseAll(ctx, []string{"stock"}, 20); err != nil {
		t.Fatal(err)
	}
	orphans, err := s.Orphans(ctx, "stock")
	if err != nil || len(orphans) != 1 || orphans[0].RunID != run.RunID || orphans[0].Token != 10 {
		t.Fatalf("orphans = %+v (err %v), want run %d of token 10", orphans, err, run.RunID)
	}
	if all, err := s.Orphans(ctx); err != nil || len(all) != 1 {
		t.Fatalf("orphans of all jobs = %+v (err %v), want 1", all, err)
	}
	// The old leader wakes up: its completion is fenced out.
	_, err = s.Complete(ctx, 10, scheduler.Completion{RunID: run.RunID, Job: "stock", Status: scheduler.StatusSucceeded})
	if !errors.Is(err, ErrStale) {
		t.Fatalf("old leader's completion: err %v, want ErrStale", err)
	}
	// The new leader takes it over.
	re, err := s.Reclaim(ctx, 20, "new-leader", slot)
	if err != nil {
		t.Fatalf("reclaim: %v", err)
	}
	if re.RunID != run.RunID || re.Attempt != 2 || re.Token != 20 || stored(t, s, slot).Node != "new-leader" || re.Status != scheduler.StatusRunning {
		t.Fatalf("reclaimed run = %+v, want run %d attempt 2 token 20 on new-leader", re, run.RunID)
	}
	if o, err := s.Orphans(ctx); err != nil || len(o) != 0 {
		t.Fatalf("orphans after reclaim = %+v (err %v), want none", o, err)
	}
	if _, err := s.Reclaim(ctx, 20, "new-leader", slot); !errors.Is(err, ErrNotOrphaned) {
		t.Fatalf("reclaim of own run: err %v, want ErrNotOrphaned", err)
	}
	if _, err := s.Reclaim(ctx, 20, "new-leader", other); !errors.Is(err, ErrNotOrphaned) {
		t.Fatalf("reclaim of a finished run: err %v, want ErrNotOrphaned", err)
	}
	if _, err := s.Reclaim(ctx, 20, "new-leader", scheduler.SlotKey{Job: "stock", At: slot.At.Add(-time.Hour)}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("reclaim of an empty slot: err %v, want ErrNotRunning", err)
	}
	if _, err := s.Reclaim(ctx, 10, "old-leader", slot); !errors.Is(err, ErrStale) {
		t.Fatalf("reclaim with the old token: err %v, want ErrStale", err)
	}
	fin, err := s.Complete(ctx, 20, scheduler.Completion{RunID: run.RunID, Job: "stock", Status: scheduler.StatusFailed, Error: "exit status 1"})
	if err != nil || fin.Status != scheduler.StatusFailed || fin.FinishedAt == nil || fin.Error != "exit status 1" {
		t.Fatalf("complete = %+v (err %v)", fin, err)
	}
	if _, err := s.Complete(ctx, 20, scheduler.Completion{RunID: run.RunID, Job: "stock", Status: scheduler.StatusSucceeded}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("second completion: err %v, want ErrNotRunning", err)
	}
	// A completion written again (its first write's answer lost) finds the run as that write
	// left it: the runner tells its own earlier write by the status, token and attempt.
	again, err := s.Complete(ctx, 20, scheduler.Completion{RunID: run.RunID, Job: "stock", Status: scheduler.StatusFailed, Error: "exit status 1", Attempt: fin.Attempt})
	if !errors.Is(err, ErrNotRunning) || again.RunID != run.RunID || again.Status != scheduler.StatusFailed || again.Token != 20 || again.Attempt != fin.Attempt {
		t.Fatalf("the same completion again = %+v (err %v), want ErrNotRunning with the run failed under token 20, attempt %d", again, err, fin.Attempt)
	}
	many, err := s.CompleteMany(ctx, 20, []scheduler.Completion{{RunID: run.RunID, Job: "stock", Status: scheduler.StatusFailed, Attempt: fin.Attempt}})
	if err != nil || len(many) != 1 || many[0].Written || many[0].Run.Status != scheduler.StatusFailed || many[0].Run.Token != 20 || many[0].Run.Attempt != fin.Attempt {
		t.Fatalf("CompleteMany of the same completion again = %+v (err %v), want it not written, the run failed under token 20", many, err)
	}

	// An orphan can also be closed as fenced instead of run again.
	third, err := s.Claim(ctx, 20, "new-leader", scheduler.SlotKey{Job: "stock", At: slot.At.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseAll(ctx, []string{"stock"}, 30); err != nil {
		t.Fatal(err)
	}
	closed, err := s.Complete(ctx, 30, scheduler.Completion{RunID: third.RunID, Job: "stock", Status: scheduler.StatusFenced, Reason: "leader changed"})
	if err != nil || closed.Status != scheduler.StatusFenced || closed.Token != 20 || closed.Reason != "leader changed" {
		t.Fatalf("closing an orphan as fenced = %+v (err %v)", closed, err)
	}
}

func testRegression(t *testing.T, open func(Config) *Store) {
	s := open(Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"a", "b"}, 50); err != nil {
		t.Fatal(err)
	}
	if err := s.Fenced(ctx, "b", 60, func(context.Context, scheduler.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// A leader elected by an etcd restored from an old snapshot.
	err := s.RaiseAll(ctx, []string{"a", "b", "c"}, 40)
	var re *scheduler.FenceError
	if !errors.Is(err, ErrTokenRegressed) || !errors.As(err, &re) {
		t.Fatalf("raise with a regressed token: err %v, want ErrTokenRegressed", err)
	}
	if re.Token != 40 || re.Job != "b" || re.Fence != 60 {
		t.Fatalf("regression = %+v, want token 40, job b, fence 60", *re)
	}
	for _, want := range []string{"etcdutl snapshot restore", "--bump-revision 60", "--mark-compacted", "refusing to run jobs", "fence"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	fences, err := s.Fences(ctx, "a", "b", "c")
	if err != nil || fences["a"] != 50 || fences["b"] != 60 || len(fences) != 2 {
		t.Fatalf("fences after a refused raise = %v (err %v), want a:50 b:60 and nothing raised", fences, err)
	}
	if err := s.CheckToken(ctx, 40); !errors.Is(err, ErrTokenRegressed) {
		t.Fatalf("check token 40: err %v, want ErrTokenRegressed", err)
	}
	if err := s.CheckToken(ctx, 61); err != nil {
		t.Fatalf("check token 61: %v", err)
	}
	// After an operator reset (etcd deliberately rebuilt), a low token works.
	for _, j := range []string{"a", "b"} {
		if err := s.ResetFence(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RaiseAll(ctx, []string{"a", "b", "c"}, 3); err != nil {
		t.Fatalf("raise after reset: %v", err)
	}
}
