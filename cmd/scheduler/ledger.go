package main

import (
	"scheduler/internal/fence"
	"scheduler/internal/jobs"
	"scheduler/internal/retention"
)

// The store is handed to the pruner as it is (and to the runner: fence asserts that). The runner
// finds in it, too, which fences other sessions hold when a takeover's raise gives up waiting.
var (
	_ retention.Ledger = (*fence.Store)(nil)
	_ jobs.HoldReader  = (*fence.Store)(nil)
)
