package jobs

import (
	"context"
	"errors"

	"scheduler"
)

// Enqueue checks the fence and queues nothing: the runner's tests queue no messages.
func (l *fakeLedger) Enqueue(_ context.Context, _ scheduler.Tx, m scheduler.Message) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(m.Job, m.Token); err != nil {
		return false, err
	}
	return false, errors.New("fake ledger: no transactions")
}

// Enqueue queues nothing, at no cost.
func (l *nopLedger) Enqueue(context.Context, scheduler.Tx, scheduler.Message) (bool, error) {
	return true, nil
}
