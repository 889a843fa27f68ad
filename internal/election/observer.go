package election

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Observer keeps a follower-side view of who leads an election, for status
// pages and metrics. It is never evidence that the local node leads: only
// the Campaigner's term context is.
//
// It does not use Election.Observe, which reports only puts (never "no
// leader"), can report a candidate that is not the leader and closes for
// good on any watch disruption. Instead it re-reads the leader with
// ReadLeader whenever a key of the election changes, and re-subscribes
// after a watch fails.
type Observer struct {
	cli    *clientv3.Client
	prefix string
	now    func() time.Time
	lg     *zap.Logger

	mu       sync.Mutex
	cur      Leader
	ok       bool
	onChange func(l Leader, ok bool)
	stray    []Candidate // lease-less keys under the prefix, as last read
}

// OnChange registers fn to be called, from Run's goroutine, each time the
// view changes to another leader or to none. Call it before Run; fn must
// return quickly (it feeds metrics).
func (o *Observer) OnChange(fn func(l Leader, ok bool)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.onChange = fn
}

// NewObserver returns an Observer of the election prefix (as in
// Config.Prefix) on cli.
func NewObserver(cli *clientv3.Client, prefix string, lg *zap.Logger) (*Observer, error) {
	switch {
	case cli == nil:
		return nil, errors.New("election: nil etcd client")
	case lg == nil:
		return nil, errors.New("election: nil logger")
	case prefix == "" || strings.HasSuffix(prefix, "/"):
		return nil, fmt.Errorf("election: observer prefix %q: empty or ending in /", prefix)
	}
	return &Observer{cli: cli, prefix: prefix, now: time.Now, lg: lg.Named("observer").With(zap.String("prefix", prefix))}, nil
}

// Current returns the leader as last read. ok is false when there is no
// leader or the last read failed (etcd unreachable or without quorum).
func (o *Observer) Current() (l Leader, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cur, o.ok
}

// Leaseless returns the keys under the prefix bound to no lease, as last
// read, oldest first: no replica writes such a key, and each one blocks the
// candidates behind it until it is removed (see ReadLeaseless).
func (o *Observer) Leaseless() []Candidate {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Candidate(nil), o.stray...)
}

// Run keeps the view current until ctx is cancelled, then returns nil.
func (o *Observer) Run(ctx context.Context) error {
	failures := 0
	for {
		if err := o.follow(ctx); err != nil && ctx.Err() == nil {
			failures++
			if failures == 1 {
				o.lg.Warn("observe leader", zap.Error(err))
			} else {
				o.lg.Debug("observe leader", zap.Int("attempt", failures), zap.Error(err))
			}
		} else {
			failures = 0
		}
		t := time.NewTimer(backoff(max(failures, 1), time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// follow reads the leader and re-reads it on every change of a key of the
// election, until the watch ends. The watch covers every key starting with
// the election name, so both the candidate keys and termKey; unrelated
// keys that happen to share the name only cause extra reads.
func (o *Observer) follow(ctx context.Context) error {
	rev, err := o.refresh(ctx)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range o.cli.Watch(wctx, o.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			o.set(Leader{}, false)
			return fmt.Errorf("watch %s: %w", o.prefix, err)
		}
		if len(wr.Events) == 0 {
			continue
		}
		if _, err := o.refresh(ctx); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	o.set(Leader{}, false)
	return fmt.Errorf("watch %s: closed", o.prefix)
}

// refresh reads the leader into the view and returns the revision read at.
func (o *Observer) refresh(ctx context.Context) (int64, error) {
	l, stray, rev, err := readLeader(ctx, o.cli, o.prefix)
	if err == nil || errors.Is(err, ErrNoLeader) {
		o.setLeaseless(stray)
	}
	switch {
	case errors.Is(err, ErrNoLeader):
		o.set(Leader{}, false)
		return rev, nil
	case err != nil:
		o.set(Leader{}, false)
		return 0, err
	}
	o.set(l, true)
	return rev, nil
}

// set updates the view. A leader that published no start time keeps the
// time this observer first saw its token.
func (o *Observer) set(l Leader, ok bool) {
	o.mu.Lock()
	changed := ok != o.ok || l.Token != o.cur.Token
	notify := o.onChange
	defer func() {
		o.mu.Unlock()
		if changed && notify != nil {
			notify(l, ok)
		}
	}()
	if ok && l.Since.IsZero() {
		if o.ok && o.cur.Token == l.Token && !o.cur.Since.IsZero() {
			l.Since = o.cur.Since
		} else {
			l.Since = o.now()
		}
	}
	if changed {
		o.lg.Info("leader changed", zap.Bool("known", ok), zap.String("leader", ShownValue(l.Node)), zap.Int64("token", l.Token))
	}
	o.cur, o.ok = l, ok
}

// setLeaseless records the lease-less keys read, and logs each one at error
// level when it first appears: it stops the election once it stands before
// every candidate.
func (o *Observer) setLeaseless(stray []Candidate) {
	o.mu.Lock()
	seen := make(map[string]int64, len(o.stray))
	for _, s := range o.stray {
		seen[s.Key] = s.Rev
	}
	o.stray = stray
	o.mu.Unlock()
	for _, s := range stray {
		if rev, ok := seen[s.Key]; ok && rev == s.Rev {
			continue
		}
		o.lg.Error("lease-less key under the election prefix",
			zap.String("key", s.Key), zap.String("value", ShownValue(s.Node)), zap.Int64("create_revision", s.Rev),
			zap.String("remove", RemoveCommand(s.Key)))
	}
}
