package lease

import (
	"sync/atomic"
	"time"
)

// MinNoteGap is the least time between two marks a Pacer passes on.
const MinNoteGap = 50 * time.Millisecond

// Pacer passes a listener's marks (a lease granted or released, announced by the backend) on to
// the waiters' notes at most once per gap: whoever can send on the channel (on Postgres every
// login of the database, NOTIFY needing no privilege) would otherwise drive every follower and
// observer into a read or a grant attempt per message. A mark after a quiet gap passes at once,
// so a release or a grant is announced as soon as before; marks within the gap are folded into
// one at its end. Mark is called from one goroutine.
type Pacer struct {
	notes chan<- struct{}
	gap   time.Duration
	now   func() time.Time
	after func(time.Duration, func()) // time.AfterFunc
	next  time.Time                   // when the next mark may pass at once
	armed atomic.Bool                 // a folded mark waits for its time
}

// NewPacer returns a pacer of marks for notes on the real clock.
func NewPacer(notes chan<- struct{}) *Pacer {
	return &Pacer{notes: notes, gap: MinNoteGap, now: time.Now, after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
}

// Mark signals notes now, or once at the end of the gap since the last signal.
func (p *Pacer) Mark() {
	now := p.now()
	if !now.Before(p.next) {
		p.next = now.Add(p.gap)
		p.signal()
		return
	}
	if p.armed.CompareAndSwap(false, true) {
		wait := p.next.Sub(now)
		p.next = p.next.Add(p.gap)
		p.after(wait, func() {
			p.armed.Store(false)
			p.signal()
		})
	}
}

// signal leaves a mark in notes unless one is there already.
func (p *Pacer) signal() {
	select {
	case p.notes <- struct{}{}:
	default:
	}
}
