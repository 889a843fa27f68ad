// Package parallel runs a takeover's batches of writes side by side, at most a limit at once,
// and settles each on the calling goroutine as soon as it returns, so that the runs of one
// batch start while later batches are still being written. Every call it starts has returned
// before Do, Batches or Parts returns. Yield lets goroutines just started run first.
package parallel
