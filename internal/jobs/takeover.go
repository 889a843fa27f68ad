package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// catchUp handles the slots due before now that no run finished: per job, planCatchup decides;
// then the missed slots are recorded in one batch, orphans closed, and the runs to make
// started (the first of each job at once, the rest queued behind it, in slot order).
func (t *term) catchUp(ctx context.Context, specs []*Spec, now time.Time) error {
	names := make([]string, len(specs))
	var widest time.Duration
	for i, s := range specs {
		names[i] = s.Name
		widest = max(widest, s.Catchup)
	}
	ledger := t.r.opts.Ledger
	window, err := ledger.Window(ctx, names, now.Add(-widest), now)
	if err != nil {
		return t.takeoverErr("read the ledger window", err)
	}
	last, err := ledger.Last(ctx, names)
	if err != nil {
		return t.takeoverErr("read the last runs", err)
	}
	orphans, err := ledger.Orphans(ctx, names)
	if err != nil {
		return t.takeoverErr("read orphaned runs", err)
	}
	windowOf := map[string][]LedgerRun{}
	for _, r := range window {
		windowOf[r.Slot.Job] = append(windowOf[r.Slot.Job], r)
	}
	orphansOf := map[string][]LedgerRun{}
	for _, r := range orphans {
		orphansOf[r.Slot.Job] = append(orphansOf[r.Slot.Job], r)
	}

	var (
		missed []Outcome
		closes []Completion
		first  []pending
	)
	for _, s := range specs {
		var lastRun *LedgerRun
		if r, ok := last[s.Name]; ok {
			lastRun = &r
		}
		plan, err := planCatchup(s, now, windowOf[s.Name], orphansOf[s.Name], lastRun)
		if err != nil {
			t.lg.Error("catch-up", zap.String("job", s.Name), zap.Error(err))
			continue
		}
		missed = append(missed, plan.missed...)
		closes = append(closes, plan.close...)
		if len(plan.run) == 0 {
			continue
		}
		if t.r.opts.Paused != nil && t.r.opts.Paused(s.Name) {
			for _, p := range plan.run {
				if p.orphan != nil {
					closes = append(closes, Completion{RunID: p.orphan.RunID, Job: s.Name, Status: StatusSkipped, Reason: "paused"})
				} else {
					missed = append(missed, Outcome{Slot: p.slot, Status: StatusSkipped, Reason: "paused"})
				}
			}
			continue
		}
		for _, p := range plan.run {
			t.lg.Info("catch-up run", zap.String("job", s.Name), zap.Time("slot", p.slot.At), zap.Bool("orphan", p.orphan != nil))
			if h := t.r.opts.Hooks.CatchupRun; h != nil {
				h(s.Name)
			}
		}
		first = append(first, plan.run[0])
		t.jobs[s.Name].queue = append(t.jobs[s.Name].queue, plan.run[1:]...)
	}
	for _, c := range closes {
		err := ledger.Complete(ctx, t.token, c)
		if errors.Is(err, ErrFenced) {
			return t.fenced(c.Job, err)
		}
		if err != nil {
			t.lg.Warn("close orphaned run", zap.String("job", c.Job), zap.Int64("run_id", c.RunID), zap.Error(err))
		}
	}
	if err := t.record(ctx, missed); err != nil {
		return err
	}
	return t.start(ctx, first)
}

func (t *term) takeoverErr(what string, err error) error {
	if errors.Is(err, ErrFenced) {
		return t.fenced("", err)
	}
	return fmt.Errorf("catch-up: %s: %w", what, err)
}
