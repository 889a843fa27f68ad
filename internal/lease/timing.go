package lease

import (
	"fmt"
	"time"
)

// minTTL is the shortest lease (or session timeout) a backend accepts.
const minTTL = time.Second

// Timing checks the timing part of a backend's config and fills in its
// defaults: ttl, named name in errors, at least a second; the margin as
// Margin has it; the poll, when the backend has one, not negative and zero
// meaning ttl; the clock, nil meaning time.Now. It returns every problem
// found.
func Timing(name string, ttl time.Duration, margin, poll *time.Duration, now *func() time.Time) []error {
	var errs []error
	if ttl < minTTL {
		errs = append(errs, fmt.Errorf("%s %v: below %v", name, ttl, minTTL))
	}
	var err error
	if *margin, err = Margin(ttl, *margin); err != nil {
		errs = append(errs, err)
	}
	switch {
	case poll == nil:
	case *poll < 0:
		errs = append(errs, fmt.Errorf("poll %v: negative", *poll))
	case *poll == 0:
		*poll = ttl
	}
	if *now == nil {
		*now = time.Now
	}
	return errs
}

// minMargin is the smallest default margin: a timer wake-up and the
// cancellation reaching every goroutine of the leader fit in it with room.
const minMargin = 500 * time.Millisecond

// Margin returns the step-down margin for a lease of ttl: margin itself, or
// when zero the default max(ttl/5, 500ms). It returns an error too when the
// result is not in (0, 2/3 of ttl): a smaller margin leaves no time to step
// down, a larger one leaves less than one renewal period to renew in.
func Margin(ttl, margin time.Duration) (time.Duration, error) {
	if margin == 0 {
		margin = max(ttl/5, minMargin)
	}
	if limit := twoThirds(ttl); margin < 0 || margin >= limit {
		return margin, fmt.Errorf("margin %v: must be in (0, %v), or 0 for the default", margin, limit)
	}
	return margin, nil
}

// twoThirds is d*2/3 without the overflow of d*2, which would refuse every margin of a TTL
// longer than half the longest duration.
func twoThirds(d time.Duration) time.Duration { return d/3*2 + d%3*2/3 }
