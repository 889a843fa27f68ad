package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// Store is the outbox the dispatcher delivers from; the scheduler's store
// satisfies it. Both writes are fenced with token: a token older than the
// store's dispatcher fence claims and records nothing.
type Store interface {
	// ClaimOutbox marks up to limit messages due at now sending, under
	// token, and returns them; it also takes over the messages older terms
	// left sending.
	ClaimOutbox(ctx context.Context, token int64, limit int, now time.Time) ([]scheduler.Message, error)
	// RecordDelivery records the outcome of an attempt of the message key.
	RecordDelivery(ctx context.Context, token int64, key string, d scheduler.Delivery) error
	// ReleaseOutbox hands the messages sending under token back to pending, their claim's
	// attempt not counted, and returns how many.
	ReleaseOutbox(ctx context.Context, token int64, now time.Time) (int64, error)
}

// Deliverer delivers messages of one kind. An error wrapped with Permanent
// makes the message dead at once; any other error is retried.
type Deliverer interface {
	Deliver(ctx context.Context, m scheduler.Message, token int64) error
}

// ErrFenced reports that a newer term holds the dispatcher's fence: this
// term delivers nothing more.
var ErrFenced = errors.New("outbox: fenced out by a newer leader")

// Defaults of Config.
const (
	DefaultBatch         = 100
	DefaultConcurrency   = 8
	DefaultMaxAttempts   = 10
	DefaultRetryBackoff  = 30 * time.Second
	DefaultMaxBackoff    = time.Hour
	DefaultPoll          = time.Second
	DefaultSendTimeout   = 30 * time.Second
	DefaultClaimTTL      = 5 * time.Minute
	DefaultRecordTimeout = 10 * time.Second
)

// Config configures a Dispatcher.
type Config struct {
	// Store is where messages are claimed and results recorded. Required.
	Store Store
	// Deliverers deliver each kind of message. Required, at least one. A
	// message of a kind without a deliverer is retried (and dead after
	// MaxAttempts), so that a replica configured without it loses nothing.
	Deliverers map[scheduler.MessageKind]Deliverer
	// Batch is the most messages one claim takes. Default DefaultBatch.
	Batch int
	// Concurrency is the most deliveries in flight. Default DefaultConcurrency.
	Concurrency int
	// MaxAttempts is the attempts after which a failing message is dead.
	// Default DefaultMaxAttempts.
	MaxAttempts int
	// RetryBackoff is the wait after a first failed attempt, doubled after
	// each further one up to MaxBackoff, and jittered. Default
	// DefaultRetryBackoff.
	RetryBackoff time.Duration
	// MaxBackoff caps the wait between attempts. Default DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Poll is the wait before the next claim when a claim found fewer
	// messages than Batch, or failed. Default DefaultPoll.
	Poll time.Duration
	// SendTimeout bounds one delivery. Default DefaultSendTimeout.
	SendTimeout time.Duration
	// ClaimTTL: a claimed message whose claim is older than this when its
	// send would start is not sent but put back to pending (the process
	// was frozen, and a newer term may be sending it). Default
	// DefaultClaimTTL.
	ClaimTTL time.Duration
	// RecordTimeout bounds the record of a result, which is made even when
	// the term's ctx has ended: a delivered message recorded is one a next
	// term does not send again. Default DefaultRecordTimeout.
	RecordTimeout time.Duration
	// Fenced reports whether a store error means a newer term holds the
	// fence; Run then returns ErrFenced. Default: no error does, and Run
	// retries claims until ctx ends.
	Fenced func(error) bool
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Jitter turns a backoff into the wait used. Default: uniform in
	// [d/2, d].
	Jitter func(d time.Duration) time.Duration
	// After returns a channel that receives after d, for Poll. Default
	// time.After.
	After func(d time.Duration) <-chan time.Time
	// Observe, if set, is called with each attempt's outcome, for metrics.
	Observe func(m scheduler.Message, d scheduler.Delivery)
	// Dead, if set, makes the notice that the record of m's death queues with it, in the same
	// fenced write (the failure notifications of m's job); nil: none.
	Dead func(m scheduler.Message, d scheduler.Delivery) *scheduler.Notice
	// Logger receives one line per attempt. Default: no logging.
	Logger *zap.Logger
}

// Dispatcher delivers the outbox's messages for one term at a time.
type Dispatcher struct {
	cfg     Config
	policy  policy
	lg      *zap.Logger
	gate    *gate                  // the deliveries in flight, for Drain
	blocked atomic.Pointer[string] // why the outbox is blocked in this term (RunConfirmed); nil: it is not
}

// New validates cfg, fills in its defaults and returns a Dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("outbox: no store")
	}
	if len(cfg.Deliverers) == 0 {
		return nil, errors.New("outbox: no deliverer")
	}
	for k, d := range cfg.Deliverers {
		if d == nil {
			return nil, fmt.Errorf("outbox: deliverer of %q is nil", k)
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.Batch, DefaultBatch)
	def(&cfg.Concurrency, DefaultConcurrency)
	def(&cfg.MaxAttempts, DefaultMaxAttempts)
	defDur(&cfg.RetryBackoff, DefaultRetryBackoff)
	defDur(&cfg.MaxBackoff, DefaultMaxBackoff)
	defDur(&cfg.Poll, DefaultPoll)
	defDur(&cfg.SendTimeout, DefaultSendTimeout)
	defDur(&cfg.ClaimTTL, DefaultClaimTTL)
	defDur(&cfg.RecordTimeout, DefaultRecordTimeout)
	switch {
	case cfg.Batch < 0, cfg.Concurrency < 0, cfg.MaxAttempts < 0:
		return nil, fmt.Errorf("outbox: batch %d, concurrency %d, max attempts %d: want > 0",
			cfg.Batch, cfg.Concurrency, cfg.MaxAttempts)
	case cfg.RetryBackoff < 0, cfg.MaxBackoff < cfg.RetryBackoff, cfg.Poll < 0, cfg.SendTimeout < 0,
		cfg.ClaimTTL < 0, cfg.RecordTimeout < 0:
		return nil, fmt.Errorf("outbox: retry backoff %s, max backoff %s, poll %s, send timeout %s, claim ttl %s, record timeout %s: want > 0 and max backoff >= retry backoff",
			cfg.RetryBackoff, cfg.MaxBackoff, cfg.Poll, cfg.SendTimeout, cfg.ClaimTTL, cfg.RecordTimeout)
	}
	if cfg.Fenced == nil {
		cfg.Fenced = func(error) bool { return false }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Jitter == nil {
		cfg.Jitter = halfJitter
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	return &Dispatcher{
		cfg:    cfg,
		policy: policy{maxAttempts: cfg.MaxAttempts, backoff: cfg.RetryBackoff, maxBackoff: cfg.MaxBackoff, jitter: cfg.Jitter},
		lg:     lg.Named("outbox"),
		gate:   newGate(),
	}, nil
}

// Run delivers messages under token until ctx ends, and then returns nil
// once every delivery it started has ended and been recorded (an outcome
// the store refused while it was away is tried once more, within
// RecordTimeout). It returns an
// error wrapping ErrFenced as soon as the store refuses token (after the
// deliveries in flight ended). Call it once per term, with the term's ctx.
// Messages claimed but not sent when ctx ends stay sending; the next term
// takes them over.
func (d *Dispatcher) Run(ctx context.Context, token int64) error {
	lg := d.lg.With(zap.Int64("token", token))
	sem := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	left := &unrecorded{res: map[string]outcome{}}
	defer func() {
		wg.Wait()
		// A last try, within RecordTimeout, for what the store refused
		// while it was away: each outcome recorded here is one the next
		// term does not send again.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.RecordTimeout)
		defer cancel()
		_ = d.recordLeft(rctx, lg, token, left)
	}()
	failures := 0
	// A claim that failed may have committed all the same, its answer lost: its messages are
	// then sending under token, and nothing of this term sends them. Once no delivery is in
	// flight and every outcome is recorded, whatever is still sending under token is that
	// claim's, and is handed back to pending.
	doubt := false
	for {
		if err := d.recordLeft(ctx, lg, token, left); err != nil {
			return err
		}
		if d.gate.isClosed() {
			<-ctx.Done() // drained: the term's end is all that is left
			return nil
		}
		if doubt {
			wg.Wait()
			var err error
			if doubt, err = d.releaseOwn(ctx, lg, token, left); err != nil {
				return err
			}
		}
		msgs, err := d.cfg.Store.ClaimOutbox(ctx, token, d.cfg.Batch, d.cfg.Now())
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && d.cfg.Fenced(err):
			lg.Warn("outbox fenced", zap.Error(err))
			return fmt.Errorf("dispatch with token %d: %w: %w", token, ErrFenced, err)
		case err != nil:
			doubt = true
			// Logged on the first failure and then every 60th, about once a
			// minute at the default poll.
			if failures%60 == 0 {
				lg.Error("outbox claim failed", zap.Int("failures", failures+1), zap.Error(err))
			}
			failures++
		default:
			failures = 0
			d.unblocked(lg)
		}
		for _, m := range msgs {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			if !d.gate.enter() {
				<-sem
				break // drained: what is left of the batch stays sending, for the next term
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				defer d.gate.leave()
				d.deliver(ctx, lg, token, m, left)
			}()
		}
		if err == nil && len(msgs) == d.cfg.Batch {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.cfg.After(d.cfg.Poll):
		}
	}
}

// unrecorded holds the outcomes whose record failed, by key, for Run to
// record later in the term: the message is not sent again meanwhile.
type unrecorded struct {
	mu  sync.Mutex
	res map[string]outcome
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
		lg.Warn("outbox claim committed though its answer was lost; its messages are handed back to pending", zap.Int64("messages", n))
	}
	return false, nil
}

// deliver sends m, claimed under token, and records the outcome; an
// outcome it could not record is left in left.
func (d *Dispatcher) deliver(ctx context.Context, lg *zap.Logger, token int64, m scheduler.Message, left *unrecorded) {
	lg = lg.With(zap.String("key", m.Key), zap.String("job", m.Job), zap.Time("slot", m.ScheduledAt),
		zap.String("kind", string(m.Kind)), zap.Int("attempt", m.Attempts))
	if ctx.Err() != nil {
		return // the next term takes it over
	}
	var res scheduler.Delivery
	if age := d.cfg.Now().Sub(m.Updated); age > d.cfg.ClaimTTL {
		lg.Warn("outbox claim expired", zap.Duration("age", age))
		res = scheduler.Delivery{Outcome: scheduler.DeliveryRetry, Error: fmt.Sprintf("claim expired after %s", age),
			At: d.cfg.Now(), Next: d.cfg.Now()}
	} else {
		err := d.send(ctx, m, token)
		res = d.policy.outcome(m, err, d.cfg.Now())
		if err != nil && ctx.Err() != nil && !IsPermanent(err) {
			// The term ended during the send: hand it on without a backoff.
			res = scheduler.Delivery{Outcome: scheduler.DeliveryRetry, Error: err.Error(), At: res.At, Next: res.At}
		}
	}
	if res.Outcome == scheduler.DeliveryDead && d.cfg.Dead != nil {
		res.Notice = d.cfg.Dead(m, res)
	}
	if err := d.record(ctx, token, m.Key, res); err != nil {
		lg.Warn("outbox record failed", zap.String("outcome", string(res.Outcome)), zap.Error(err))
		if !d.cfg.Fenced(err) {
			left.mu.Lock()
			left.res[m.Key] = outcome{m: m, res: res}
			left.mu.Unlock()
		}
		return
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
		if err == nil || d.cfg.Fenced(err) {
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
