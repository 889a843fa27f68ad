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
