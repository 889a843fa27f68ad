package zkelection

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"scheduler/internal/lease"
	"scheduler/internal/lease/leaselog"
)

// Observer keeps a follower-side view of who leads an election, for status
// pages and metrics. It is never evidence that the local node leads: only
// the Campaigner's term context is. It holds its own session and re-reads
// the leader whenever the candidates change.
type Observer struct {
	servers []string
	timeout time.Duration
	parent  string
	lg      *zap.Logger
	view    *leaselog.View[Leader]
}

// NewObserver returns an Observer of the election under parent (as in
// Config.Path) on servers, with sessions of timeout.
func NewObserver(servers []string, timeout time.Duration, parent string, lg *zap.Logger) (*Observer, error) {
	switch {
	case lg == nil:
		return nil, errors.New("zkelection: nil logger")
	case len(servers) == 0:
		return nil, errors.New("zkelection: observer: no servers")
	case parent == "" || parent[0] != '/' || path.Clean(parent) != parent:
		return nil, fmt.Errorf("zkelection: observer path %q: want an absolute, clean node path", parent)
	}
	lg = lg.Named("observer").With(zap.String("path", parent))
	return &Observer{servers: servers, timeout: timeout, parent: parent, lg: lg,
		view: leaselog.NewView(lg, func(l Leader) (string, int64) { return l.Node, l.Token })}, nil
}

// Current returns the leader as last read. ok is false when there is no
// candidate or the last read failed.
func (o *Observer) Current() (l Leader, ok bool) { return o.view.Current() }

// Problems returns what the last read found keeping the election from
// working, each with its remedy (see Election.Problems).
func (o *Observer) Problems() []string { return o.view.Problems() }

// Run keeps the view current until ctx is cancelled, then returns nil.
func (o *Observer) Run(ctx context.Context) error {
	failures := 0
	for {
		if err := o.follow(ctx); err != nil && ctx.Err() == nil {
			failures++
			o.view.Set(Leader{}, false)
			if failures == 1 {
				o.lg.Warn("observe leader", zap.Error(err))
			} else {
				o.lg.Debug("observe leader", zap.Int("attempt", failures), zap.Error(err))
			}
		} else {
			failures = 0
		}
		if !lease.Sleep(ctx, lease.Backoff(max(failures, 1), time.Second)) {
			return nil
		}
	}
}

// follow reads the leader on one session, again on every change of the
// candidates, until the session fails or ctx is done.
func (o *Observer) follow(ctx context.Context) error {
	conn, _, err := zk.Connect(o.servers, o.timeout, zk.WithLogger(printf{o.lg.Named("client").Sugar()}))
	if err != nil {
		return fmt.Errorf("connect to %v: %w", o.servers, err)
	}
	// The client's calls take no context: closing the session ends them.
	stop := context.AfterFunc(ctx, conn.Close)
	defer func() {
		if stop() {
			conn.Close()
		}
	}()
	for {
		_, _, ev, err := conn.ChildrenW(o.parent)
		if errors.Is(err, zk.ErrNoNode) {
			// No election yet: wait for its parent node instead.
			var exists bool
			exists, _, ev, err = conn.ExistsW(o.parent)
			if err == nil && exists {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", o.parent, err)
		}
		if err := o.await(ctx, conn, ev); err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// recheck is how often the observer reads the election again while its
// candidates do not change: an access list set by hand changes no child.
const recheck = 5 * time.Second

// await reads the election into the view, again every recheck, until ev
// fires or ctx is done.
func (o *Observer) await(ctx context.Context, conn *zk.Conn, ev <-chan zk.Event) error {
	for {
		e, err := ReadElection(conn, o.parent)
		if err != nil {
			var problems []string
			if errors.Is(err, lease.ErrNeedsOperator) {
				problems = []string{err.Error()}
			}
			o.view.SetProblems(problems)
			return err
		}
		o.view.SetProblems(e.Problems())
		o.view.Set(e.Leader, e.Leads)
		t := time.NewTimer(recheck)
		select {
		case e := <-ev:
			t.Stop()
			if e.Err != nil {
				return fmt.Errorf("watch %s: %w", o.parent, e.Err)
			}
			return nil
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
