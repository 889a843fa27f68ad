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
	// DeferOutbox hands the messages keys sending under token back to pending, due at next,
	// their claim's attempt not counted, and returns how many.
	DeferOutbox(ctx context.Context, token int64, keys []string, now, next time.Time) (int64, error)
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
	// NotClaimed reports whether a store error means the message is no longer sending under
	// the token (another term took it over, or a hand-back whose answer was lost committed): its
	// outcome can never be recorded, and is given up. Default: no error does.
	NotClaimed func(error) bool
	// Scrub, when set, removes secrets from a delivery's error before it is recorded, logged
	// or put in a dead message's notice: the error can quote a reply, and a server may quote
	// the credentials it refused.
	Scrub func(string) string
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
	if cfg.NotClaimed == nil {
		cfg.NotClaimed = func(error) bool { return false }
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
// takes them over. The claimed messages wait in lanes, one per destination,
// for a slot (lanes.go): at most Batch of them, and the messages of a
// destination that does not answer are handed back to the store until it does.
// A record the fence refuses stops Run as a refused claim does: it starts no
// delivery after it.
func (d *Dispatcher) Run(ctx context.Context, token int64) error {
	return d.run(ctx, token, newUnrecorded(), false)
}

// run is Run with the outcomes left unrecorded by an earlier run of the same
// term; again says that one ran (RunConfirmed), so that what it left sending
// under token and never started is handed back before anything is claimed.
func (d *Dispatcher) run(ctx context.Context, token int64, left *unrecorded, again bool) error {
	lg := d.lg.With(zap.Int64("token", token))
	ln := newLanes(d.cfg.Concurrency)
	var wg sync.WaitGroup
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
	// claim's, and is handed back to pending. A hand-back that failed is the same, and so is
	// what an earlier run of the term left in its lanes when the fence refused it.
	doubt := again
	// A refusal an earlier run saw after it stopped is not taken for a standing one: the
	// outcomes it refused are still held, and recordLeft finds out whether it stands.
	_ = left.refusal()
round:
	for {
		if err := d.refused(&wg, token, left); err != nil {
			return err
		}
		if err := d.recordLeft(ctx, lg, token, left); err != nil {
			return err
		}
		if d.gate.isClosed() {
			<-ctx.Done() // drained: the term's end is all that is left
			return nil
		}
		if doubt {
			wg.Wait()
			// What waits in the lanes is sending under token and not started: the release
			// hands it back with the lost claim's, or it stays sending for the next term.
			ln.drop()
			var err error
			if doubt, err = d.releaseOwn(ctx, lg, token, left); err != nil {
				return err
			}
		}
		waiting, _ := ln.counts()
		limit := d.cfg.Batch - waiting
		msgs, err := d.cfg.Store.ClaimOutbox(ctx, token, limit, d.cfg.Now())
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
		ln.add(msgs)
		// due: claim again once the lanes have room and few messages a slot could take; at
		// once after a full claim, after Poll otherwise.
		due := err == nil && len(msgs) == limit
		var poll <-chan time.Time
		if !due {
			poll = d.cfg.After(d.cfg.Poll)
		}
		for {
			if err := d.handBack(ctx, lg, token, ln, &doubt); err != nil {
				return err
			}
			for m, ok := ln.next(); ok; m, ok = ln.next() {
				if err := d.refused(&wg, token, left); err != nil {
					ln.abandon(m)
					return err // what waits stays sending under token: handed back once the fence lets it
				}
				if !d.gate.enter() {
					ln.abandon(m)
					continue round // drained: what waits stays sending, for the next term
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					v := nothingLearnt
					defer func() { d.learn(lg, ln, m, v) }()
					defer d.gate.leave()
					v = d.deliver(ctx, lg, token, m, left)
				}()
			}
			if waiting, ready := ln.counts(); due && waiting < d.cfg.Batch && ready <= d.cfg.Concurrency {
				continue round
			}
			select {
			case <-ctx.Done():
				return nil
			case <-ln.freed:
			case <-poll:
				due = true
			}
		}
	}
}

// refused returns an error wrapping ErrFenced once the fence refused a record of token, after
// the deliveries in flight ended.
func (d *Dispatcher) refused(wg *sync.WaitGroup, token int64, left *unrecorded) error {
	err := left.refusal()
	if err == nil {
		return nil
	}
	wg.Wait()
	return fmt.Errorf("dispatch with token %d: %w: %w", token, ErrFenced, err)
}

// handBack hands the messages that failing destinations cannot take now back to the store,
// due after the destination's backoff, their attempt not counted. A hand-back that failed may
// have committed all the same: its messages are not sent in this term, and doubt makes Run
// release them once nothing is in flight, as after a claim that failed.
func (d *Dispatcher) handBack(ctx context.Context, lg *zap.Logger, token int64, ln *lanes, doubt *bool) error {
	if ctx.Err() != nil {
		return nil // the term ended: what waits stays sending, for the next term
	}
	for _, df := range ln.deferrals() {
		now := d.cfg.Now()
		next := now.Add(d.policy.delay(df.failures))
		n, err := d.cfg.Store.DeferOutbox(ctx, token, df.keys, now, next)
		switch {
		case err != nil && d.cfg.Fenced(err):
			lg.Warn("outbox fenced", zap.Error(err))
			return fmt.Errorf("dispatch with token %d: %w: %w", token, ErrFenced, err)
		case err != nil:
			*doubt = true
			lg.Warn("outbox hand-back failed; its messages are released once nothing is in flight",
				zap.String("destination", df.dest), zap.Int("messages", len(df.keys)), zap.Error(err))
		default:
			lg.Debug("outbox messages handed back until their destination answers", zap.String("destination", df.dest),
				zap.Int64("messages", n), zap.Time("next", next))
		}
	}
	return nil
}

// learn counts m's delivery out of its lane and logs a change of its destination's state.
func (d *Dispatcher) learn(lg *zap.Logger, ln *lanes, m scheduler.Message, v verdict) {
	changed, failures := ln.done(m, v)
	switch {
	case !changed:
	case failures > 0:
		lg.Warn("outbox destination failing; one delivery at a time until it answers", zap.String("destination", destination(m)),
			zap.String("key", m.Key), zap.String("job", m.Job))
	default:
		lg.Info("outbox destination answers again", zap.String("destination", destination(m)))
	}
}
