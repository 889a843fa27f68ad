package backfills

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"scheduler/internal/control"
)

// Watch prints b's progress to out whenever it changes, reading it every poll, until the leader
// is done with it: nil if no slot failed. Ending ctx stops the watch, not the request.
func Watch(ctx context.Context, s State, b control.Backfill, poll time.Duration, out io.Writer) error {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	last := ""
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		cur, ok, err := s.Backfill(rctx, b.Job, b.ID)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil:
			fmt.Fprintf(out, "backfill %s: read progress: %v\n", b.Job, err)
		case !ok:
			return fmt.Errorf("backfill %d of %s: the request was removed", b.ID, b.Job)
		default:
			if line := Line(cur); line != last {
				fmt.Fprintln(out, line)
				last = line
			}
			switch {
			case cur.State == control.BackfillRefused:
				return fmt.Errorf("backfill %s: refused by the leader: %s", b.Job, cur.Error)
			case cur.State == control.BackfillDone && cur.Failed > 0:
				return fmt.Errorf("backfill %s: %d of %d slots failed; see `scheduler history %s`", b.Job, cur.Failed, cur.Total, b.Job)
			case cur.State == control.BackfillDone:
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("backfill %s: stopped waiting (the request goes on): %w", b.Job, ctx.Err())
		case <-tick.C:
		}
	}
}

// Line is how the command shows a request's progress.
func Line(b control.Backfill) string {
	if b.State == control.BackfillPending {
		return fmt.Sprintf("backfill %s: waiting for the leader", b.Job)
	}
	counts := []string{fmt.Sprintf("%d succeeded", b.Succeeded)}
	if b.Failed > 0 {
		counts = append(counts, fmt.Sprintf("%d failed", b.Failed))
	}
	if b.Skipped > 0 {
		counts = append(counts, fmt.Sprintf("%d skipped", b.Skipped))
	}
	line := fmt.Sprintf("backfill %s: %d/%d slots (%s)", b.Job, b.Done, b.Total, strings.Join(counts, ", "))
	if b.State == control.BackfillDone {
		line += ": done"
	}
	return line
}
