package main

import (
	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/retention"
)

// The store is handed to the runner and to the pruner as it is.
var (
	_ scheduler.Ledger = (*fence.Store)(nil)
	_ retention.Ledger = (*fence.Store)(nil)
)
