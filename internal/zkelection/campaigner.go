package zkelection

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/lease"
	"scheduler/internal/lease/leaselog"
)

// ErrNotConfirmed says that Confirm found the term no longer current.
var ErrNotConfirmed = errors.New("zkelection: term not confirmed")

// Campaigner campaigns for leadership of one election, term after term.
type Campaigner struct {
	cfg Config
	lg  *zap.Logger

	running atomic.Bool

	holding lease.Holding[candidacy] // the current term, with its session and node
}

// New returns a Campaigner for cfg. Each round opens its own session.
func New(cfg Config, lg *zap.Logger) (*Campaigner, error) {
	if lg == nil {
		return nil, errors.New("zkelection: nil logger")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Campaigner{
		cfg: cfg,
		lg:  lg.Named("election").With(zap.String("node", cfg.Node), zap.String("path", cfg.Path)),
	}, nil
}

// Run campaigns until ctx is cancelled, calling lead for every term won.
// Each round opens a session, creates an ephemeral sequential candidate
// node, waits until it is the first created, leads, and closes the session, which
// deletes the node so that the next candidate leads at once. Errors are
// logged, rate-limited, never returned: Run returns nil once ctx is
// cancelled and the last session is closed. Run must not be called again
// while it runs.
func (c *Campaigner) Run(ctx context.Context, lead lease.LeadFunc) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("zkelection: Run is already running")
	}
	defer c.running.Store(false)
	c.lg.Info("campaigning", zap.Duration("session_timeout", c.cfg.SessionTimeout), zap.Duration("margin", c.cfg.Margin))
	lease.Campaign(ctx, lease.Rounds{Limit: c.cfg.SessionTimeout, Now: c.cfg.Now, OnFailed: leaselog.RoundFailed(c.lg)},
		func(ctx context.Context) (time.Duration, error) { return c.round(ctx, lead) })
	return nil
}

// Confirm asks ZooKeeper whether the term with token is still this
// campaigner's: after a sync, its candidate node still exists with czxid
// token and is the first candidate. nil means confirmed. The client's calls
// take no context: ctx is checked before them, and they end when answered
// or when the client gives the connection up, within the session timeout.
// The answer is a snapshot: what a leader does still hangs off the term's
// context.
func (c *Campaigner) Confirm(ctx context.Context, token int64) error {
	held, err := c.holding.Check(token, ErrNotConfirmed)
	if err != nil {
		return err
	}
	conn, me := held.conn, held.me
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("confirm term %d of %s: %w", token, me, err)
	}
	err = confirm(conn, c.cfg.Path, me, token)
	if errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrSessionExpired) {
		// Every term ends when its session's connection does.
		return fmt.Errorf("%w: %w", ErrNotConfirmed, err)
	}
	return err
}

// confirm is Confirm's reads.
func confirm(conn *zk.Conn, parent, me string, token int64) error {
	// A read may be served by a follower that lags; sync first.
	if _, err := conn.Sync(parent); err != nil {
		return fmt.Errorf("confirm term %d of %s: sync: %w", token, me, err)
	}
	l, err := ReadLeader(conn, parent)
	switch {
	case errors.Is(err, ErrNoLeader):
		return fmt.Errorf("confirm term %d of %s: no candidate left: %w", token, me, ErrNotConfirmed)
	case err != nil:
		return fmt.Errorf("confirm term %d of %s: %w", token, me, err)
	case l.Path != path.Clean(me) || l.Token != token:
		return fmt.Errorf("confirm term %d of %s: the first candidate is %s with czxid %d: %w", token, me, l.Path, l.Token, ErrNotConfirmed)
	}
	return nil
}

// Leading returns the term this campaigner holds right now, if any: a
// snapshot for status pages; what a leader does hangs off lead's context.
func (c *Campaigner) Leading() (scheduler.Term, bool) { return c.holding.Leading() }

// candidacy is what a term keeps of its round: the session and the
// candidate node.
type candidacy struct {
	conn *zk.Conn
	me   string
}
