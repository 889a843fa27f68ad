package outbox

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// unrecorded holds the outcomes whose record failed, by key, for Run to
// record later in the term: the message is not sent again meanwhile. An
// outcome the fence refused is kept too: when the election still confirms
// the term (RunConfirmed), a reset of the fence lets it be recorded under
// the same token. refused is the first such refusal: Run starts no delivery
// once it is set.
type unrecorded struct {
	mu      sync.Mutex
	res     map[string]outcome
	refused error
}

func newUnrecorded() *unrecorded { return &unrecorded{res: map[string]outcome{}} }

// keep holds o for a later record; fenced is the refusal that failed it, if
// the fence refused it.
func (u *unrecorded) keep(o outcome, fenced error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.res[o.m.Key] = o
	if fenced != nil && u.refused == nil {
		u.refused = fenced
	}
}

// refusal returns the fence's refusal of a record, and forgets it: the
// outcomes it refused are still held, for recordLeft.
func (u *unrecorded) refusal() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	err := u.refused
	u.refused = nil
	return err
}

// outcome is an attempt's message and the result to record.
type outcome struct {
	m   scheduler.Message
	res scheduler.Delivery
}

// recordLeft records the outcomes left, once each, and returns an error
// wrapping ErrFenced if the store refused token.
func (d *Dispatcher) recordLeft(ctx context.Context, lg *zap.Logger, token int64, left *unrecorded) error {
	left.mu.Lock()
	defer left.mu.Unlock()
	for key, o := range left.res {
		err := d.cfg.Store.RecordDelivery(ctx, token, key, o.res)
		switch {
		case err == nil:
			delete(left.res, key)
			lg.Info("outbox record made late", zap.String("key", key), zap.String("job", o.m.Job), zap.Time("slot", o.m.ScheduledAt),
				zap.Int("attempt", o.m.Attempts), zap.String("outcome", string(o.res.Outcome)))
			// Counted now that it is recorded: an outcome that the next term
			// repeats instead is counted by that term.
			if d.cfg.Observe != nil {
				d.cfg.Observe(o.m, o.res)
			}
		case d.cfg.Fenced(err):
			return fmt.Errorf("dispatch with token %d: %w: %w", token, ErrFenced, err)
		case d.cfg.NotClaimed(err):
			// Final: the message is no longer this term's to record.
			delete(left.res, key)
			lg.Warn("outbox record given up: the message is no longer claimed by this term", zap.String("key", key),
				zap.String("job", o.m.Job), zap.Time("slot", o.m.ScheduledAt), zap.Int("attempt", o.m.Attempts),
				zap.String("outcome", string(o.res.Outcome)), zap.Error(err))
		default:
			return nil // the store is still away: try again at the next round
		}
	}
	return nil
}

// releaseOwn hands the messages sending under token back to pending once every outcome of the
// term is recorded, when no delivery is in flight, and reports whether that is still to do. It
// returns an error wrapping ErrFenced if the store refused token.
func (d *Dispatcher) releaseOwn(ctx context.Context, lg *zap.Logger, token int64, left *unrecorded) (bool, error) {
	left.mu.Lock()
	pending := len(left.res)
	left.mu.Unlock()
	if pending > 0 {
		return true, nil // the store is still away; what they hold is sent, not to be sent again
	}
	n, err := d.cfg.Store.ReleaseOutbox(ctx, token, d.cfg.Now())
	switch {
	case err != nil && d.cfg.Fenced(err):
		return false, fmt.Errorf("dispatch with token %d: %w: %w", token, ErrFenced, err)
	case err != nil:
		return true, nil
	case n > 0:
		lg.Warn("outbox claim or hand-back committed though its answer was lost; its messages are handed back to pending", zap.Int64("messages", n))
	}
	return false, nil
}

// record records res for key, retrying within RecordTimeout, even after
// the term's ctx ended: a message left sending waits for the next term, and
// one delivered but not recorded is sent again.
func (d *Dispatcher) record(ctx context.Context, token int64, key string, res scheduler.Delivery) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.RecordTimeout)
	defer cancel()
	wait := 20 * time.Millisecond
	for {
		err := d.cfg.Store.RecordDelivery(rctx, token, key, res)
		if err == nil || d.cfg.Fenced(err) || d.cfg.NotClaimed(err) {
			return err
		}
		select {
		case <-rctx.Done():
			return err
		case <-d.cfg.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}
