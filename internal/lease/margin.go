package lease

import (
	"fmt"
	"time"
)

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
	if margin < 0 || margin >= ttl*2/3 {
		return margin, fmt.Errorf("margin %v: must be in (0, %v), or 0 for the default", margin, ttl*2/3)
	}
	return margin, nil
}
