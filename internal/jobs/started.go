package jobs

import (
	"go.uber.org/zap"

	"scheduler/internal/jobs/internal/runkey"
)

// markStarted records, off the loop and off the runs' start path, that the runs just launched
// that were claimed ahead (attempt 0) have started. If the write does not land and the term
// ends with such a run cut off, the next leader numbers its retry as attempt 1 again: the
// count then misses that attempt, which the log shows.
func (t *tenure) markStarted(launched []runkey.Started) {
	if t.ended {
		return
	}
	runs := runkey.ClaimedAhead(launched)
	if len(runs) == 0 {
		return
	}
	t.marks.Go(func() {
		ctx, cancel := t.writeCtx(t.runsCtx)
		defer cancel()
		if _, err := t.led.StartMany(ctx, t.token, runs); err != nil {
			t.lg.Warn("record runs started", zap.Int("runs", len(runs)), zap.String("job", runs[0].Job),
				zap.Int64("run_id", runs[0].RunID), zap.Error(err))
		}
	})
}
