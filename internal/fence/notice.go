package fence

import (
	"fmt"
	"time"

	"scheduler"
)

// The notices of outcomes (scheduler.Notice) are queued by the backends in
// the transaction that writes the outcome, after it and behind the same
// fence check: a refused write queues nothing, a committed one has queued
// its notice. Only a run the transaction itself finished or recorded gets
// its notice queued, so a completion of a run already finished (a redo
// after a failover, a repeat whose reply was lost) queues nothing; and the
// keys are unique, so a notice of a slot is queued once whatever happens.

// maxNoticeAfter bounds Notice.After: the count reads that many runs back.
const maxNoticeAfter = 1000

// noticeSlot stands in for the slot in checkMessage: the backend takes the
// slot from the run it writes.
var noticeSlot = time.Unix(1, 0)

// checkNotice checks the messages of n, queued for job's run with token.
func checkNotice(job string, token int64, n *scheduler.Notice) error {
	if n == nil {
		return nil
	}
	if n.After < 0 || n.After > maxNoticeAfter {
		return fmt.Errorf("%w: notice of job %q: after %d: want 0 to %d", ErrInvalidMessage, job, n.After, maxNoticeAfter)
	}
	for _, m := range n.Messages {
		m.Job, m.Token, m.ScheduledAt = job, token, noticeSlot
		if err := checkMessage(m); err != nil {
			return fmt.Errorf("notice of job %q: %w", job, err)
		}
	}
	return nil
}
