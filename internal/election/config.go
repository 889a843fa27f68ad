package election

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Config configures a Campaigner.
type Config struct {
	// Prefix is the election name, e.g. "/scheduler/election". Candidates
	// put their keys under Prefix + "/", which is what
	// `etcdctl elect --listen PREFIX` observes. It must not end in "/", and
	// no other key may live under Prefix + "/" (a nested key would take part
	// in the election).
	Prefix string
	// Node is the replica name, the value every candidate key carries.
	Node string
	// TTL is the lease TTL, a whole number of seconds, at least 1 s. The
	// etcd server may grant more (its minimum is 1.5 election timeouts,
	// rounded up to a second); the granted TTL is what counts.
	TTL time.Duration
	// Margin is how long before the lease could expire on the server the
	// leader steps down when no renewal succeeded. Zero means
	// max(TTL/5, 500ms) of the granted TTL. It must be below 2/3 of TTL, so
	// that renewals and their retries fit before the deadline.
	Margin time.Duration
	// Now reads the clock for renewal bookkeeping and Term.Since. Nil means
	// time.Now. Deadlines are compared with values from Now, so a custom
	// clock must keep Go's monotonic reading (or never step).
	Now func() time.Time
	// Events receives leadership changes and renewals, e.g. for metrics.
	// Every hook is optional.
	Events Events
}

// Events are optional hooks, called synchronously from Run's goroutines.
// They must return quickly and must not call back into the Campaigner.
type Events struct {
	// OnElected is called when a term starts, right before lead.
	OnElected func(Term)
	// OnLost is called when a term is over: lead has returned.
	OnLost func(Term, Reason)
	// OnRenewed is called after every successful lease grant or renewal,
	// leader or not, with the time the request was sent and the TTL the
	// server reported.
	OnRenewed func(sent time.Time, ttl time.Duration)
}

// minMargin is the smallest default margin. It covers what the margin is
// for: between the deadline and the moment the leader has really stopped
// lie a timer wake-up, the cancellation reaching every goroutine of lead,
// and possibly a GC pause or a descheduled process; half a second is
// generous for the first two and modest for the last.
const minMargin = 500 * time.Millisecond

// defaultMargin returns the margin used when Config.Margin is zero.
//
// Network delay needs no share of the margin: the deadline is counted from
// when a renewal was sent, and the server renews later than that, so its
// expiry is later than ours by at least the request's travel time. What is
// left is our own reaction time (minMargin) and the clock rate difference
// between us and the etcd leader, which at the 100 ppm of a poor crystal is
// 1 ms over 10 s. TTL/5 scales the margin for long TTLs, where longer GC
// pauses and slower hosts are likelier to be tolerated. For every TTL of at
// least 1 s the result stays below 2/3 of the TTL, so the next renewal
// (renewEvery) and its retries can still move the deadline: with TTL 5 s the
// leader steps down 4 s after the last successful renewal was sent, after
// the renewal sent 2.5 s after it and two retries failed.
func defaultMargin(ttl time.Duration) time.Duration {
	return max(ttl/5, minMargin)
}

// validate checks c and fills in defaults.
func (c *Config) validate() error {
	var errs []error
	switch {
	case c.Prefix == "":
		errs = append(errs, errors.New("prefix: empty"))
	case strings.HasSuffix(c.Prefix, "/"):
		errs = append(errs, fmt.Errorf("prefix %q: must not end in /", c.Prefix))
	}
	if c.Node == "" {
		errs = append(errs, errors.New("node: empty"))
	}
	switch {
	case c.TTL < time.Second:
		errs = append(errs, fmt.Errorf("ttl %v: below 1s", c.TTL))
	case c.TTL%time.Second != 0:
		errs = append(errs, fmt.Errorf("ttl %v: not a whole number of seconds", c.TTL))
	}
	if c.Margin < 0 || (c.Margin > 0 && c.Margin >= twoThirds(c.TTL)) {
		errs = append(errs, fmt.Errorf("margin %v: must be in (0, %v), or 0 for the default", c.Margin, twoThirds(c.TTL)))
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("election config: %w", err)
	}
	return nil
}
