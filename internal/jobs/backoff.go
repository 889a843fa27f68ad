package jobs

import "time"

// backoff is the wait before the retry that follows n consecutive failures (n >= 1): base,
// doubled per failure after the first, capped at most. Attempts, claims and outcome writes all
// back off so; each passes its own base and cap.
func backoff(base, most time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}
