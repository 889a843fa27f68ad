package outcomes

import (
	"errors"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// LogRetrying logs a failed write of the outcomes of runs runs, c (of slot) the first of them,
// that is tried again after wait: one line per write, on the first failure and then every
// tenth, so that neither a herd nor a long outage floods the log.
func LogRetrying(lg *zap.Logger, c *scheduler.Completion, slot time.Time, runs, failures int, wait time.Duration, err error) {
	if failures != 1 && failures%10 != 0 {
		return
	}
	lg.Warn("record run outcome; retrying", zap.String("job", c.Job), zap.Time("slot", slot), zap.Int64("run_id", c.RunID),
		zap.Int("attempt", c.Attempt), zap.String("status", string(c.Status)), zap.Int("runs", runs),
		zap.Int("failures", failures), zap.Duration("in", wait), zap.Error(err))
}

// LogFinished writes the end line of the run c of slot, which took took, once the write of its
// outcome returned err: at the level what became of the outcome deserves.
func LogFinished(lg *zap.Logger, c *scheduler.Completion, slot time.Time, took time.Duration, err error) {
	fields := make([]zap.Field, 0, 9)
	fields = append(fields, zap.String("job", c.Job), zap.Time("slot", slot), zap.Int64("run_id", c.RunID),
		zap.String("status", string(c.Status)), zap.Int("attempt", c.Attempt), zap.Duration("took", took))
	if c.Error != "" {
		fields = append(fields, zap.String("error", c.Error))
	}
	switch {
	case errors.Is(err, scheduler.ErrFenced):
		lg.Warn("run outcome fenced out", append(fields, zap.Error(err))...)
	case Retryable(err):
		lg.Warn("run outcome not recorded before the term ended; the next leader runs the slot again", append(fields, zap.Error(err))...)
	case err != nil:
		lg.Error("record run outcome", append(fields, zap.Error(err))...)
	default:
		lg.Info("run finished", fields...)
	}
}
