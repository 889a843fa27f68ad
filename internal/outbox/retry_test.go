package outbox

import (
	"errors"
	"testing"
	"time"

	"scheduler"
)

func TestPolicy_Outcome(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	p := policy{maxAttempts: 4, backoff: time.Second, maxBackoff: 5 * time.Second, jitter: func(d time.Duration) time.Duration { return d }}
	failed := errors.New("503")
	for _, c := range []struct {
		name     string
		attempts int
		err      error
		want     scheduler.DeliveryOutcome
		wait     time.Duration
	}{
		{"Delivered", 1, nil, scheduler.DeliveryOK, 0},
		{"FirstFailure", 1, failed, scheduler.DeliveryRetry, time.Second},
		{"SecondFailureDoubles", 2, failed, scheduler.DeliveryRetry, 2 * time.Second},
		{"ThirdFailureCapped", 3, failed, scheduler.DeliveryRetry, 4 * time.Second},
		{"LastAttemptDead", 4, failed, scheduler.DeliveryDead, 0},
		{"PermanentDeadAtOnce", 1, Permanent(failed), scheduler.DeliveryDead, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := p.outcome(scheduler.Message{Attempts: c.attempts}, c.err, now)
			if d.Outcome != c.want || !d.At.Equal(now) {
				t.Fatalf("outcome = %+v, want %s at %s", d, c.want, now)
			}
			if c.want == scheduler.DeliveryRetry && d.Next.Sub(now) != c.wait {
				t.Fatalf("next attempt after %s, want %s", d.Next.Sub(now), c.wait)
			}
			if c.err != nil && d.Error == "" {
				t.Fatal("no error recorded")
			}
		})
	}
	if got := p.delay(30); got != 5*time.Second {
		t.Fatalf("delay after attempt 30 = %s, want the maximum 5s", got)
	}
	for range 100 {
		if d := halfJitter(time.Minute); d < 30*time.Second || d > time.Minute {
			t.Fatalf("halfJitter(1m) = %s, want within [30s, 1m]", d)
		}
	}
}
