package outbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	gomail "github.com/wneessen/go-mail"
	"go.uber.org/zap"

	"scheduler"
)

// deliver sends m, claimed under token, and records the outcome; an
// outcome it could not record is left in left. It returns what the attempt
// says of m's destination.
func (d *Dispatcher) deliver(ctx context.Context, lg *zap.Logger, token int64, m scheduler.Message, left *unrecorded) verdict {
	lg = lg.With(zap.String("key", m.Key), zap.String("job", m.Job), zap.Time("slot", m.ScheduledAt),
		zap.String("kind", string(m.Kind)), zap.Int("attempt", m.Attempts))
	if ctx.Err() != nil {
		return nothingLearnt // the next term takes it over
	}
	v := nothingLearnt
	var res scheduler.Delivery
	if age := d.cfg.Now().Sub(m.Updated); age > d.cfg.ClaimTTL {
		// Not sent: so old a claim may be another's by now. It goes back to pending, due at once,
		// its attempt not counted, as a hand-back's; recorded as a retry if that fails.
		if d.handBackExpired(ctx, token, m) {
			lg.Warn("outbox claim expired; handed back unsent", zap.Duration("age", age))
			return nothingLearnt
		}
		lg.Warn("outbox claim expired", zap.Duration("age", age))
		res = scheduler.Delivery{Outcome: scheduler.DeliveryRetry, Error: fmt.Sprintf("claim expired after %s", age),
			At: d.cfg.Now(), Next: d.cfg.Now()}
	} else {
		err := d.send(ctx, m, token)
		res = d.policy.outcome(m, err, d.cfg.Now())
		switch {
		case err == nil, IsPermanent(err):
			v = answered
		case ctx.Err() != nil:
			// The term ended during the send: hand it on without a backoff.
			res = scheduler.Delivery{Outcome: scheduler.DeliveryRetry, Error: err.Error(), At: res.At, Next: res.At}
		case unanswered(err):
			v = failed
		default:
			v = answered // a reply that asks to try later: the destination answers
		}
	}
	if d.cfg.Scrub != nil {
		// A server's refusal may quote what it was sent, the SMTP login's password included.
		res.Error = d.cfg.Scrub(res.Error)
	}
	if res.Outcome == scheduler.DeliveryDead && d.cfg.Dead != nil {
		res.Notice = d.cfg.Dead(m, res)
	}
	if err := d.record(ctx, token, m.Key, res); err != nil {
		lg.Warn("outbox record failed", zap.String("outcome", string(res.Outcome)), zap.Error(err))
		if d.cfg.NotClaimed(err) {
			return v // no longer this term's: nothing to record it for
		}
		var fenced error
		if d.cfg.Fenced(err) {
			fenced = err
		}
		left.keep(outcome{m: m, res: res}, fenced)
		return v
	}
	switch res.Outcome {
	case scheduler.DeliveryOK:
		lg.Info("message delivered")
	case scheduler.DeliveryRetry:
		lg.Warn("message retried", zap.Time("next", res.Next), zap.String("error", res.Error))
	default:
		lg.Error("message dead", zap.String("error", res.Error))
	}
	if d.cfg.Observe != nil {
		d.cfg.Observe(m, res)
	}
	return v
}

// handBackExpired hands m, whose claim expired, back to pending under token, due at once and
// its attempt not counted, within RecordTimeout; false if the store did not take it.
func (d *Dispatcher) handBackExpired(ctx context.Context, token int64, m scheduler.Message) bool {
	hctx, cancel := context.WithTimeout(ctx, d.cfg.RecordTimeout)
	defer cancel()
	now := d.cfg.Now()
	n, err := d.cfg.Store.DeferOutbox(hctx, token, []string{m.Key}, now, now)
	return err == nil && n == 1
}

// send delivers m with its kind's deliverer, within SendTimeout.
func (d *Dispatcher) send(ctx context.Context, m scheduler.Message, token int64) error {
	dl, ok := d.cfg.Deliverers[m.Kind]
	if !ok {
		return fmt.Errorf("no deliverer for %s messages", m.Kind)
	}
	sctx, cancel := context.WithTimeout(ctx, d.cfg.SendTimeout)
	defer cancel()
	if err := dl.Deliver(sctx, m, token); err != nil {
		return fmt.Errorf("deliver %s message %q to %s: %w", m.Kind, m.Key, m.Destination, err)
	}
	return nil
}

// unanswered reports whether err, a retryable failure, says that the destination did not
// answer (a timeout, a connection refused, reset or closed) rather than that it replied, asking
// to try later (a webhook's 5xx or 429, an SMTP 4xx): only a destination that does not answer
// holds the slots it gets, and one message's refusal must not slow the relay's others.
func unanswered(err error) bool {
	var se *gomail.SendError
	if errors.As(err, &se) {
		return se.ErrorCode() < 400 // no reply code: the session broke
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
