package backoff

import "time"

// Wait is the wait before the retry that follows n consecutive failures (n >= 1): base,
// doubled per failure after the first, capped at most.
func Wait(base, most time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}
