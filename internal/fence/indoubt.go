package fence

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/fence/internal/verdict"
)

// inDoubtWait bounds how long a sql job's run waits to learn whether a commit the server never
// answered committed: long enough for a server restart, short of holding a run for good.
const inDoubtWait = 30 * time.Second

// resolveInDoubt asks the server whether the transaction of a commit in doubt committed, and
// returns what FencedStatements would have returned had the reply come: its rows if it
// committed, the commit's failure if the server rolled it back. It asks again while the server
// cannot be reached or the transaction is still in progress (the server may be finishing the
// commit), for at most inDoubtWait and no longer than ctx once it has asked once. When it cannot
// tell, the error says so and is permanent: the run fails without a retry, since its statements
// may have committed and running them again could apply the slot's effect twice.
func (s *Store) resolveInDoubt(ctx context.Context, job string, token int64, doubt *verdict.InDoubtError) (int64, error) {
	lg := s.lg.With(zap.String("job", job), zap.Int64("token", token), zap.String("xid", doubt.Xid), zap.NamedError("commit_error", doubt.Err))
	bound, cancel := context.WithTimeout(context.WithoutCancel(ctx), inDoubtWait)
	defer cancel()
	wait, last := retryBackoff, error(nil)
	for {
		status, err := s.b.XactStatus(bound, doubt.Xid)
		switch {
		case err != nil && !Unreachable(err):
			lg.Error("a sql job's commit was not answered, and asking the server whether it committed failed", zap.Error(err))
			return 0, scheduler.Permanent(fmt.Errorf("%w; asking the server whether it committed failed: %w", doubt, err))
		case status == "committed":
			lg.Warn("a sql job's commit was not answered; the server says the transaction committed, so the run succeeded")
			return doubt.Rows, nil
		case status == "aborted":
			lg.Info("a sql job's commit was not answered; the server says the transaction rolled back")
			return 0, fmt.Errorf("%w (the server rolled it back)", doubt.Err)
		case err == nil && status == "":
			lg.Error("a sql job's commit was not answered, and the server no longer knows the transaction")
			return 0, scheduler.Permanent(fmt.Errorf("%w; the server no longer knows whether it committed", doubt))
		}
		last = err
		var cause error
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-bound.Done():
			cause = fmt.Errorf("no answer within %s", inDoubtWait)
		case <-t.C:
			wait = min(2*wait, time.Second)
			continue
		}
		t.Stop()
		lg.Error("a sql job's commit was not answered, and the server could not say whether it committed; its statements may have committed", zap.NamedError("last_error", last))
		return 0, scheduler.Permanent(fmt.Errorf("%w; the server could not say whether it committed: %w", doubt, cause))
	}
}
