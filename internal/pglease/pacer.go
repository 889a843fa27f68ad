package pglease

import (
	"sync/atomic"
	"time"
)

// minNoteGap is the least time between two marks a listener leaves for its waiters.
const minNoteGap = 50 * time.Millisecond

// notePacer passes a listener's marks on to notes at most once per gap: NOTIFY needs no
// privilege, and every login of the database can send on the lease channel, so a flood of
// notifications would otherwise drive every follower and observer into a read or a grant attempt
// each. A mark after a quiet gap passes at once, so a release or a grant is announced as soon
// as before; marks within the gap are folded into one at its end. mark is called from one
// goroutine.
type notePacer struct {
	notes chan<- struct{}
	gap   time.Duration
	now   func() time.Time
	after func(time.Duration, func()) // time.AfterFunc
	next  time.Time                   // when the next mark may pass at once
	armed atomic.Bool                 // a folded mark waits for its time
}

// newNotePacer returns a pacer of marks for notes on the real clock.
func newNotePacer(notes chan<- struct{}) *notePacer {
	return &notePacer{notes: notes, gap: minNoteGap, now: time.Now, after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
}

// mark signals notes now, or once at the end of the gap since the last signal.
func (p *notePacer) mark() {
	now := p.now()
	if !now.Before(p.next) {
		p.next = now.Add(p.gap)
		signal(p.notes)
		return
	}
	if p.armed.CompareAndSwap(false, true) {
		wait := p.next.Sub(now)
		p.next = p.next.Add(p.gap)
		p.after(wait, func() {
			p.armed.Store(false)
			signal(p.notes)
		})
	}
}
