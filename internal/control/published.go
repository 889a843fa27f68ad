package control

import "sync"

// published is closed once a registration has published its entry for the first time, so that
// a replica campaigns only once the others can tell its hold of the election from a stranger's:
// a leader that names no registered replica is reported as something outside the scheduler.
type published struct {
	once sync.Once
	ch   chan struct{}
}

func newPublished() published { return published{ch: make(chan struct{})} }

// done marks the entry published.
func (p *published) done() { p.once.Do(func() { close(p.ch) }) }
