package main

import (
	"scheduler/internal/fence"
	"scheduler/internal/retention"
)

// The store is handed to the pruner as it is (and to the runner: fence asserts that).
var _ retention.Ledger = (*fence.Store)(nil)
