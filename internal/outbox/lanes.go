package outbox

import (
	"cmp"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"

	"scheduler"
)

// A receiver that accepts the connection and never answers holds each delivery it gets for the
// whole send timeout. Served in claim order, its messages took every slot, wave after wave, and
// every other destination's messages waited behind it. So the claimed messages wait in lanes,
// one per destination, and a free slot goes to the lane with the fewest deliveries in flight,
// within the lane's limit:
//
//   - a destination that answered in this term (any reply, "try later" included) and has not
//     failed since may take every slot, so that one relay alone drains at full concurrency;
//   - one not heard from yet takes every slot while it is the only lane, and half of them while
//     another lane is active (or was, in the last claims): a receiver that hangs from its first
//     request cannot take the slots that another destination frees between two claims;
//   - one whose last attempt got no answer (a timeout, a connection refused or broken) is
//     probed with one delivery at a time, and such destinations together hold at most half the
//     slots, until an attempt answers. The messages it cannot take meanwhile are handed back to
//     the store (Store.DeferOutbox) with the destination's backoff, their attempt not counted,
//     so that they take neither memory nor the claims' room from the others.
//
// A delivery in flight is never cut short for another: a destination that answered and then
// hangs holds what it took until the send timeout, and fails then.

// lanes holds the claimed messages not yet started, by destination, and counts the deliveries
// in flight. Its methods are safe for concurrent use: deliveries end on their own goroutines.
type lanes struct {
	mu          sync.Mutex
	concurrency int
	byDest      map[string]*lane
	waiting     int // messages in the lanes' queues
	inflight    int
	seq         uint64        // claim order, for the oldest head among equals
	freed       chan struct{} // receives when a delivery ended
}

// lane is one destination's queue and state.
type lane struct {
	queue    []entry
	inflight int
	answered bool // an attempt answered in this term, and none failed since
	failures int  // attempts failed in a row
	idle     int  // claims since the lane last held anything
}

// entry is a claimed message in its claim order.
type entry struct {
	m   scheduler.Message
	seq uint64
}

// verdict is what an attempt says of its destination.
type verdict int

const (
	nothingLearnt verdict = iota // not sent: the term ended, the claim expired
	answered                     // a reply, whatever it said: the destination answers
	failed                       // no answer: a timeout, a connection refused or broken
)

// deferral is messages of one destination to hand back, with its failures in a row.
type deferral struct {
	dest     string
	keys     []string
	failures int
}

func newLanes(concurrency int) *lanes {
	return &lanes{concurrency: concurrency, byDest: map[string]*lane{}, freed: make(chan struct{}, 1)}
}

// destination is the lane of m: a webhook's scheme, host and port; the kind otherwise (every
// e-mail goes through the one relay).
func destination(m scheduler.Message) string {
	if m.Kind == scheduler.MessageWebhook {
		if u, err := url.Parse(m.Destination); err == nil && u.Host != "" {
			port := u.Port()
			if port == "" {
				port = "80"
				if strings.EqualFold(u.Scheme, "https") {
					port = "443"
				}
			}
			return string(m.Kind) + " " + strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
		}
	}
	return string(m.Kind)
}

// idleClaims is how many claims a lane that holds nothing and does not fail is kept for: it
// still limits a destination not heard from yet to its half. A failing lane is kept for
// idleFailingClaims (about the longest backoff at the default poll), so that it is probed
// again when its messages come back, and then forgotten: memory holds no lane for ever.
const (
	idleClaims        = 2
	idleFailingClaims = 3600
)

// share is half the slots: what a destination not heard from yet takes beside others, and
// what the failing destinations hold together at most.
func (l *lanes) share() int { return max(1, l.concurrency/2) }

// add queues msgs, just claimed, in their lanes, and forgets the lanes idle for idleClaims
// claims (a failing one for idleFailingClaims).
func (l *lanes) add(msgs []scheduler.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for dest, ln := range l.byDest {
		if len(ln.queue) > 0 || ln.inflight > 0 {
			ln.idle = 0
			continue
		}
		if ln.idle++; ln.idle > idleFailingClaims || (ln.idle > idleClaims && ln.failures == 0) {
			delete(l.byDest, dest)
		}
	}
	for _, m := range msgs {
		dest := destination(m)
		ln := l.byDest[dest]
		if ln == nil {
			ln = &lane{}
			l.byDest[dest] = ln
		}
		l.seq++
		ln.idle = 0
		ln.queue = append(ln.queue, entry{m: m, seq: l.seq})
		l.waiting++
	}
}

// limit is the most deliveries ln may have in flight. l.mu is held.
func (l *lanes) limit(ln *lane) int {
	switch {
	case ln.failures > 0:
		return 1
	case ln.answered || len(l.byDest) == 1:
		return l.concurrency
	}
	return l.share()
}

// startable reports whether ln may start one more delivery, with failingInflight deliveries in
// flight to failing destinations. l.mu is held.
func (l *lanes) startable(ln *lane, failingInflight int) bool {
	if ln.failures > 0 && failingInflight >= l.share() {
		return false
	}
	return ln.inflight < l.limit(ln)
}

// failingInflight counts the deliveries in flight to failing destinations. l.mu is held.
func (l *lanes) failingInflight() int {
	n := 0
	for _, ln := range l.byDest {
		if ln.failures > 0 {
			n += ln.inflight
		}
	}
	return n
}

// next takes the message to start now, counted in flight, or reports false when every slot
// is taken or no lane with waiting messages may start one.
func (l *lanes) next() (scheduler.Message, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight >= l.concurrency {
		return scheduler.Message{}, false
	}
	fi := l.failingInflight()
	var best *lane
	for _, ln := range l.byDest {
		if len(ln.queue) == 0 || !l.startable(ln, fi) {
			continue
		}
		if best == nil || ln.inflight < best.inflight || (ln.inflight == best.inflight && ln.queue[0].seq < best.queue[0].seq) {
			best = ln
		}
	}
	if best == nil {
		return scheduler.Message{}, false
	}
	m := best.queue[0].m
	best.queue[0] = entry{}
	best.queue = best.queue[1:]
	best.inflight++
	l.waiting--
	l.inflight++
	return m, true
}

// done counts m's delivery out, learns what v says of its destination, and reports whether
// the destination's state changed: it began to fail, or answered again.
func (l *lanes) done(m scheduler.Message, v verdict) (changed bool, failures int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.byDest[destination(m)]
	ln.inflight--
	l.inflight--
	switch v {
	case answered:
		changed = ln.failures > 0
		ln.failures, ln.answered = 0, true
	case failed:
		ln.failures++
		ln.answered = false
		changed = ln.failures == 1
	}
	failures = ln.failures
	select {
	case l.freed <- struct{}{}:
	default:
	}
	return changed, failures
}

// abandon counts m out without a delivery: it stays sending, for the next term.
func (l *lanes) abandon(m scheduler.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byDest[destination(m)].inflight--
	l.inflight--
}

// deferrals takes out of the lanes the messages of failing destinations beyond the one each
// may start: they are to be handed back. A probe is kept only while the failing destinations'
// half has room for it, the oldest first: one that waits for that room waits in the store, as
// their other messages do, and not in the claims' room, where many failing destinations (many
// ports of one host) would fill it and wait past their claim's TTL.
func (l *lanes) deferrals() []deferral {
	l.mu.Lock()
	defer l.mu.Unlock()
	var failing []string
	for dest, ln := range l.byDest {
		if ln.failures > 0 && len(ln.queue) > 0 {
			failing = append(failing, dest)
		}
	}
	slices.SortFunc(failing, func(a, b string) int { return cmp.Compare(l.byDest[a].queue[0].seq, l.byDest[b].queue[0].seq) })
	probes := l.share() - l.failingInflight()
	var out []deferral
	for _, dest := range failing {
		ln := l.byDest[dest]
		keep := 0
		if ln.inflight == 0 && probes > 0 {
			keep = 1 // the probe
			probes--
		}
		if len(ln.queue) <= keep {
			continue
		}
		df := deferral{dest: dest, failures: ln.failures}
		for _, e := range ln.queue[keep:] {
			df.keys = append(df.keys, e.m.Key)
		}
		l.waiting -= len(ln.queue) - keep
		ln.queue = ln.queue[:keep:keep]
		out = append(out, df)
	}
	return out
}

// drop empties every queue: what they held stays sending under the term's token.
func (l *lanes) drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.byDest {
		ln.queue = nil
	}
	l.waiting = 0
}

// counts returns the messages waiting, and how many of them a freed slot could take: all but
// those of the lanes their own limit holds back, which must not keep the claims from bringing
// other destinations' messages.
func (l *lanes) counts() (waiting, ready int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fi := l.failingInflight()
	for _, ln := range l.byDest {
		if len(ln.queue) > 0 && (l.startable(ln, fi) || l.limit(ln) == l.concurrency) {
			ready += len(ln.queue)
		}
	}
	return l.waiting, ready
}
