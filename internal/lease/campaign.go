package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

const (
	// backoffBase is the first pause after a failed round.
	backoffBase = 100 * time.Millisecond
	// errorLogEvery is how often a run of failed rounds is reported loud.
	errorLogEvery = 30 * time.Second
)

// Rounds says how Campaign repeats a backend's campaign rounds.
type Rounds struct {
	// Limit is the TTL (or session timeout): a term at least that long
	// counts as a success, and it caps the backoff.
	Limit time.Duration
	// Now reads the clock that rate-limits OnFailed's loud reports.
	Now func() time.Time
	// OnFailed, when set, is called after every failed round.
	OnFailed func(Failure)
}

// ErrNeedsOperator marks a round's error caused by a state of the server that
// the campaign cannot clear and that keeps every replica from leading (a
// counter past the largest token, an access list that refuses the
// candidates): the backend names the state and its remedy, and the failure
// is logged at error level.
var ErrNeedsOperator = errors.New("the election needs an operator")

// Failure is a failed campaign round, as reported to Rounds.OnFailed.
type Failure struct {
	// Err is what the round returned.
	Err error
	// Attempt counts the failures in a row, this one included.
	Attempt int
	// Loud says the failure is to be logged at warning level: the first,
	// and then one per errorLogEvery; the others are for debug level.
	Loud bool
	// Suppressed counts the quiet failures since the last loud one; set on
	// loud failures only.
	Suppressed int
}

// Campaign calls round until ctx is cancelled, then returns. round returns
// how long it led (zero when it never led), or an error when it ended
// before leading. After a failure, or a term shorter than Limit (so that a
// lead that returns at once cannot spin), it pauses with Backoff.
func Campaign(ctx context.Context, r Rounds, round func(context.Context) (time.Duration, error)) {
	var (
		failures   int
		lastLoud   time.Time
		suppressed int
	)
	for {
		held, err := round(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			failures++
			f := Failure{Err: err, Attempt: failures}
			if now := r.Now(); now.Sub(lastLoud) >= errorLogEvery {
				f.Loud, f.Suppressed = true, suppressed
				lastLoud, suppressed = now, 0
			} else {
				suppressed++
			}
			if r.OnFailed != nil {
				r.OnFailed(f)
			}
		case held >= r.Limit:
			failures = 0
		default:
			failures++
		}
		if failures > 0 && !Sleep(ctx, Backoff(failures, r.Limit)) {
			return
		}
	}
}

// Backoff returns the pause after the n-th failure in a row: doubling from
// backoffBase up to limit, with jitter in [d/2, d) so that replicas that
// failed together do not retry together.
func Backoff(n int, limit time.Duration) time.Duration {
	d := backoffBase
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + rand.N(d/2)
}

// Sleep waits for d or ctx, and reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Await waits for d to pass, a note on notes (a grant or a release
// announced by the server) or ctx, and reports false when ctx ended it.
func Await(ctx context.Context, d time.Duration, notes <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-notes:
		return true
	case <-t.C:
		return true
	}
}

// Listen runs listen in a goroutine that signals the returned channel on
// every grant or release the server announces, until stop is called; stop
// waits for it to return. The channel holds one note: a burst of
// announcements wakes a waiter once.
func Listen(ctx context.Context, listen func(ctx context.Context, notes chan<- struct{})) (notes <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { listen(lctx, ch) })
	return ch, func() {
		cancel()
		wg.Wait()
	}
}
