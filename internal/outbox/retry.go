package outbox

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"scheduler"
)

// PermanentError marks a delivery error that no retry can fix; the message
// is dead at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }

func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a *PermanentError; nil stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err, or an error it wraps, is a *PermanentError.
func IsPermanent(err error) bool {
	var pe *PermanentError
	return errors.As(err, &pe)
}

// policy is the retry policy: exponential backoff from Backoff, doubled per
// attempt, up to MaxBackoff, jittered; dead after MaxAttempts attempts.
type policy struct {
	maxAttempts         int
	backoff, maxBackoff time.Duration
	jitter              func(time.Duration) time.Duration
}

// outcome turns the result of attempt m.Attempts of m, ended at now, into
// what the store records.
func (p policy) outcome(m scheduler.Message, err error, now time.Time) scheduler.Delivery {
	switch {
	case err == nil:
		return scheduler.Delivery{Outcome: scheduler.DeliveryOK, At: now}
	case IsPermanent(err):
		return scheduler.Delivery{Outcome: scheduler.DeliveryDead, Error: err.Error(), At: now}
	case m.Attempts >= p.maxAttempts:
		return scheduler.Delivery{Outcome: scheduler.DeliveryDead, At: now,
			Error: fmt.Sprintf("%d attempts, the last: %v", m.Attempts, err)}
	}
	return scheduler.Delivery{Outcome: scheduler.DeliveryRetry, Error: err.Error(), At: now, Next: now.Add(p.delay(m.Attempts))}
}

// delay is the wait after attempt n (1 for the first) failed.
func (p policy) delay(n int) time.Duration {
	d := p.backoff
	for i := 1; i < n && d < p.maxBackoff; i++ {
		d *= 2
	}
	return p.jitter(min(d, p.maxBackoff))
}

// halfJitter returns a duration drawn uniformly from [d/2, d]: retries of
// messages that failed together spread out, and no wait is shorter than
// half the policy's.
func halfJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d-d/2+1)
}
