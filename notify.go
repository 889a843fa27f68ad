package scheduler

// Notice is what the write of a slot's final outcome queues in the outbox beside it, in the same
// fenced transaction: the job's failure notifications. A stale leader's write is refused and
// queues nothing; a committed outcome has queued its notice.
type Notice struct {
	// After queues Messages only when the outcome is the After-th consecutive failure of the
	// job, counted in slot order over its failed, fenced and missed runs up to a succeeded one
	// (skipped runs neither count nor reset); 0 queues them for every failure.
	After int
	// Messages are the notifications, with Key, Kind, Destination, Subject and Body set; the
	// store sets their job, slot and token from the run it writes. A message whose key exists
	// already (a redo of the slot) is not queued again.
	Messages []Message
}
