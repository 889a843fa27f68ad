package testenv

import (
	"testing"
	"time"
)

// Eventually calls cond every tick until it returns true, and fails tb with
// what it was waiting for if within passes first. cond runs on the caller's
// goroutine, so it may call tb's methods itself.
func Eventually(tb testing.TB, within, tick time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(tick)
	}
}
