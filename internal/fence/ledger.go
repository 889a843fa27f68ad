package fence

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// ledger is the backend half of the run ledger. Writes are fenced with
// token on the jobs they touch, in one transaction.
type ledger interface {
	// Claim creates the runs of slots; ahead leaves them not started
	// (attempt 0, no start time) until Start marks them.
	Claim(ctx context.Context, token int64, node string, now time.Time, slots []scheduler.SlotKey, ahead bool) ([]scheduler.Result, error)
	// Start marks the not-started runs among refs as started at now and
	// returns how many it marked.
	Start(ctx context.Context, token int64, now time.Time, refs []scheduler.RunRef) (int, error)
	Record(ctx context.Context, token int64, node string, now time.Time, outs []scheduler.Outcome) ([]scheduler.Result, error)
	// Reclaim takes over the orphans among slots and returns the runs of
	// the slots that have one, each with whether it took it over.
	Reclaim(ctx context.Context, token int64, node string, now time.Time, slots []scheduler.SlotKey) ([]scheduler.Result, error)
	Complete(ctx context.Context, token int64, now time.Time, cs []scheduler.Completion) ([]scheduler.Result, error)
	NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error)
	Window(ctx context.Context, jobs []string, from, to time.Time) ([]scheduler.Run, error)
	History(ctx context.Context, job string, limit int) ([]scheduler.Run, error)
	Last(ctx context.Context, jobs []string) ([]scheduler.Run, error)
	LastScheduled(ctx context.Context, jobs []string) ([]scheduler.Run, error)
	Orphans(ctx context.Context, jobs []string) ([]scheduler.Run, error)
	Prune(ctx context.Context, token int64, r scheduler.Retention) (int, error)
}

// Claim creates the running run of slot, attempt 1, in one fenced round
// trip. If the slot already has a run (running under this or another
// token, or finished) it fails with a *SlotTakenError carrying that run
// (errors.Is(err, ErrSlotTaken)); an orphan found that way is taken over
// with Reclaim.
func (s *Store) Claim(ctx context.Context, token int64, node string, slot scheduler.SlotKey) (scheduler.Run, error) {
	res, err := s.ClaimMany(ctx, token, node, []scheduler.SlotKey{slot})
	return onlyRun("claim", res, err)
}

// onlyRun returns the run of a batch of one slot, written or taken.
func onlyRun(what string, res []scheduler.Result, err error) (scheduler.Run, error) {
	switch {
	case err != nil:
		return scheduler.Run{}, err
	case !res[0].Written:
		return scheduler.Run{}, fmt.Errorf("%s: %w", what, &SlotTakenError{Run: res[0].Run})
	}
	return res[0].Run, nil
}

// ClaimMany claims many slots in one fenced transaction and one round trip,
// entering the fence of every job involved. Each result says whether the
// slot was claimed or already had a run; the order follows slots.
// Duplicate slots are claimed once. A slot with Backfill set is claimed for
// that backfill request, as ClaimBackfill does, in a transaction of its own.
//
// A claimed run's started_at (Run.StartedAt in History) is its intended
// start: the slot's time when the claim is made ahead of the slot (the run
// starts when the slot fires), else the claim's time. Completing it before
// its slot (a run claimed ahead, then closed without running) moves
// started_at back to the finish time, so that no run finishes before it
// started.
func (s *Store) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	return s.claimMany(ctx, token, node, slots, false)
}

// claimMany is ClaimMany, or ClaimAheadMany when ahead.
func (s *Store) claimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey, ahead bool) ([]scheduler.Result, error) {
	aheadOf := ""
	if ahead {
		aheadOf = " ahead"
	}
	if err := checkSlots(token, node, slots); err != nil {
		return nil, fmt.Errorf("claim%s: %w", aheadOf, err)
	}
	if len(slots) == 0 {
		return nil, nil
	}
	all := withNormTimes(slots)
	if !ahead && hasBackfill(all) {
		return s.claimWithBackfill(ctx, token, node, all)
	}
	res, err := retried(ctx, s, slots[0].Job, token, func() ([]scheduler.Result, error) {
		return s.b.Claim(ctx, token, node, s.now(), normSlots(all), ahead)
	})
	if err != nil {
		return nil, fmt.Errorf("claim %d slots%s with token %d: %w", len(slots), aheadOf, token, err)
	}
	return expand(all, res), nil
}

// Record stores a slot that ends without running (skipped, missed) with a
// reason, fenced like a claim. A slot that already has a run fails with a
// *SlotTakenError.
func (s *Store) Record(ctx context.Context, token int64, node string, out scheduler.Outcome) (scheduler.Run, error) {
	res, err := s.RecordMany(ctx, token, node, []scheduler.Outcome{out})
	return onlyRun("record", res, err)
}

// RecordMany is Record for many slots in one fenced round trip.
func (s *Store) RecordMany(ctx context.Context, token int64, node string, outs []scheduler.Outcome) ([]scheduler.Result, error) {
	slots := make([]scheduler.SlotKey, len(outs))
	norm := make([]scheduler.Outcome, len(outs))
	for i, o := range outs {
		if !o.Status.Terminal() {
			return nil, fmt.Errorf("record slot %s of job %q: status %q: want a terminal status", o.Slot.At.Format(timeLayout), o.Slot.Job, o.Status)
		}
		o.Slot.At = tables.NormTime(o.Slot.At)
		if err := checkNotice(o.Slot.Job, token, o.Notice); err != nil {
			return nil, fmt.Errorf("record slot %s: %w", o.Slot.At.Format(timeLayout), err)
		}
		slots[i] = o.Slot
		norm[i] = scheduler.Outcome{Slot: o.Slot, Status: o.Status, Reason: excerptHead(o.Reason), Notice: o.Notice}
	}
	if err := checkSlots(token, node, slots); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if len(outs) == 0 {
		return nil, nil
	}
	res, err := retried(ctx, s, outs[0].Slot.Job, token, func() ([]scheduler.Result, error) {
		return s.b.Record(ctx, token, node, s.now(), dedupOutcomes(slices.Clone(norm)))
	})
	if err != nil {
		return nil, fmt.Errorf("record %d slots with token %d: %w", len(outs), token, err)
	}
	return expand(slots, res), nil
}

// Complete finishes a running run with a terminal status, fenced with token
// on the run's job, and returns it. The current leader may complete any
// running run of a job it holds the fence of, including an orphan (for
// example as StatusFenced). A run that is not running (already complete) or
// does not exist fails with ErrNotRunning.
func (s *Store) Complete(ctx context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	res, err := s.CompleteMany(ctx, token, []scheduler.Completion{c})
	if err != nil {
		return scheduler.Run{}, err
	}
	if !res[0].Written {
		if res[0].Run.RunID == 0 {
			return scheduler.Run{}, fmt.Errorf("complete run %d of job %q: no such run: %w", c.RunID, c.Job, ErrNotRunning)
		}
		return res[0].Run, fmt.Errorf("complete run %d of job %q: it is %s: %w", c.RunID, c.Job, res[0].Run.Status, ErrNotRunning)
	}
	return res[0].Run, nil
}

// CompleteMany completes many runs in one fenced transaction and one round
// trip, entering the fence of every job involved. Runs that are running are
// completed; the others are left as they are and reported with Written
// false (and a zero Run if they do not exist). The order follows cs.
func (s *Store) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	norm := make([]scheduler.Completion, len(cs))
	seen := make(map[int64]bool, len(cs))
	for i, c := range cs {
		if err := checkJobToken(c.Job, token); err != nil {
			return nil, fmt.Errorf("complete run %d: %w", c.RunID, err)
		}
		if !c.Status.Terminal() {
			return nil, fmt.Errorf("complete run %d of job %q: status %q: want a terminal status", c.RunID, c.Job, c.Status)
		}
		if seen[c.RunID] {
			return nil, fmt.Errorf("complete run %d of job %q: run listed twice", c.RunID, c.Job)
		}
		if err := checkNotice(c.Job, token, c.Notice); err != nil {
			return nil, fmt.Errorf("complete run %d: %w", c.RunID, err)
		}
		seen[c.RunID] = true
		c.Error, c.Reason, c.Output = excerptHead(c.Error), excerptHead(c.Reason), excerptOutput(c.Output)
		norm[i] = c
	}
	if len(cs) == 0 {
		return nil, nil
	}
	// In run id order, as StartMany marks runs started: see there.
	slices.SortFunc(norm, func(a, b scheduler.Completion) int { return cmp.Compare(a.RunID, b.RunID) })
	res, err := retried(ctx, s, cs[0].Job, token, func() ([]scheduler.Result, error) {
		return s.b.Complete(ctx, token, s.now(), norm)
	})
	if err != nil {
		return nil, fmt.Errorf("complete %d runs with token %d: %w", len(cs), token, err)
	}
	by := make(map[int64]scheduler.Result, len(res))
	for _, r := range res {
		by[r.Run.RunID] = r
	}
	out := make([]scheduler.Result, len(cs))
	for i, c := range cs {
		out[i] = by[c.RunID]
	}
	return out, nil
}

// NextAttempt increases the attempt of a running run (a retry within the
// same leadership) and returns the new attempt number, fenced with token.
func (s *Store) NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error) {
	if err := checkJobToken(job, token); err != nil {
		return 0, fmt.Errorf("next attempt of run %d: %w", runID, err)
	}
	n, err := retried(ctx, s, job, token, func() (int, error) { return s.b.NextAttempt(ctx, token, job, runID) })
	if err != nil {
		return 0, fmt.Errorf("next attempt of run %d of job %q: %w", runID, job, err)
	}
	return n, nil
}

// Window returns the scheduled (not manual) runs of jobs with slots in
// [from, to], in one query, each as its key (as in a scheduler.Result): what
// a new leader compares with the slots it computes for catch-up. The runs
// come in no particular order, because a takeover reads a large part of the
// table with it and a sort would spill to disk.
func (s *Store) Window(ctx context.Context, jobs []string, from, to time.Time) ([]scheduler.Run, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	runs, err := s.b.Window(ctx, tables.Distinct(jobs), tables.NormTime(from), tables.NormTime(to))
	if err != nil {
		return nil, fmt.Errorf("runs of %d jobs from %s to %s: %w", len(jobs), from.Format(timeLayout), to.Format(timeLayout), err)
	}
	return runs, nil
}

// History returns job's newest limit runs (manual ones included), newest
// slot first. limit <= 0 means 20.
func (s *Store) History(ctx context.Context, job string, limit int) ([]scheduler.Run, error) {
	if limit <= 0 {
		limit = 20
	}
	runs, err := s.b.History(ctx, job, limit)
	if err != nil {
		return nil, fmt.Errorf("history of job %q: %w", job, err)
	}
	return runs, nil
}

// Last returns the newest run (by slot) of each job in jobs, or of every job
// in the ledger when jobs is empty. Jobs without runs are absent.
func (s *Store) Last(ctx context.Context, jobs ...string) (map[string]scheduler.Run, error) {
	return byJob(s.b.Last(ctx, jobs))("last runs")
}

// LastScheduled returns the newest run of a scheduled slot of each job in
// jobs: not a manual trigger's, whose slot is the time its requester's clock
// gave and says nothing of the schedule (it may lie in the future). A
// takeover's catch-up counts the job's history from it. Jobs without such a
// run are absent.
func (s *Store) LastScheduled(ctx context.Context, jobs ...string) (map[string]scheduler.Run, error) {
	return byJob(s.b.LastScheduled(ctx, jobs))("last scheduled runs")
}

// byJob returns a read of one run per job as a map by job, or its error wrapped as what.
func byJob(runs []scheduler.Run, err error) func(what string) (map[string]scheduler.Run, error) {
	return func(what string) (map[string]scheduler.Run, error) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		m := make(map[string]scheduler.Run, len(runs))
		for _, r := range runs {
			m[r.Job] = r
		}
		return m, nil
	}
}

// Orphans returns the runs left running under a token other than their
// job's current fence (of jobs, or of every job when empty), oldest slot
// first. After RaiseAll(token) those are exactly the running runs of
// earlier terms: their leaders can no longer write, so nothing will finish
// them but the new leader (Reclaim or Complete).
func (s *Store) Orphans(ctx context.Context, jobs ...string) ([]scheduler.Run, error) {
	runs, err := s.b.Orphans(ctx, jobs)
	if err != nil {
		return nil, fmt.Errorf("orphaned runs: %w", err)
	}
	return runs, nil
}

func checkSlots(token int64, node string, slots []scheduler.SlotKey) error {
	if node == "" {
		return errors.New("empty node name")
	}
	for _, sl := range slots {
		if err := checkJobToken(sl.Job, token); err != nil {
			return err
		}
		if sl.At.IsZero() {
			return fmt.Errorf("job %q: zero slot time", sl.Job)
		}
	}
	return nil
}

// withNormTimes returns a copy of slots with their times as the store keeps them.
func withNormTimes(slots []scheduler.SlotKey) []scheduler.SlotKey {
	all := make([]scheduler.SlotKey, len(slots))
	for i, sl := range slots {
		sl.At = tables.NormTime(sl.At)
		all[i] = sl
	}
	return all
}

// normSlots returns slots without duplicates.
func normSlots(slots []scheduler.SlotKey) []scheduler.SlotKey {
	out := make([]scheduler.SlotKey, 0, len(slots))
	seen := make(map[slotKey]bool, len(slots))
	for _, sl := range slots {
		if k := keyOf(sl); !seen[k] {
			seen[k] = true
			out = append(out, sl)
		}
	}
	return out
}

func dedupOutcomes(outs []scheduler.Outcome) []scheduler.Outcome {
	seen := make(map[slotKey]bool, len(outs))
	return slices.DeleteFunc(outs, func(o scheduler.Outcome) bool {
		k := keyOf(o.Slot)
		dup := seen[k]
		seen[k] = true
		return dup
	})
}

// expand maps results for distinct slots back onto the requested slots.
func expand(slots []scheduler.SlotKey, res []scheduler.Result) []scheduler.Result {
	by := make(map[slotKey]scheduler.Result, len(res))
	for _, r := range res {
		by[keyOf(r.Run.Key())] = r
	}
	out := make([]scheduler.Result, len(slots))
	seen := make(map[slotKey]bool, len(slots))
	for i, sl := range slots {
		k := keyOf(sl)
		out[i] = by[k]
		if seen[k] {
			out[i].Written = false // a duplicate is claimed once
		}
		seen[k] = true
	}
	return out
}
