package zkelection

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/lease"
)

// errNotLeading says that the candidate node vanished before it led.
var errNotLeading = errors.New("candidate node gone before it led")

// round runs one campaign on a new session: connect, create a candidate
// node, wait until it is the first created, lead, close the session. It returns
// how long lead ran (zero when it never led), or an error when it ended
// before leading for any reason but ctx.
//
// The client's calls take no context; closing the session is what ends a
// blocked call, so the round closes it as soon as its guard is cancelled.
// Closing also deletes the candidate node at once, which is the resign.
func (c *Campaigner) round(ctx context.Context, lead lease.LeadFunc) (time.Duration, error) {
	guard, lose := context.WithCancelCause(ctx)
	ready := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect(c.cfg.Servers, c.cfg.SessionTimeout,
		zk.WithLogger(printf{c.lg.Named("client").Sugar()}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			switch ev.State {
			case zk.StateHasSession:
				once.Do(func() { close(ready) })
			case zk.StateDisconnected, zk.StateExpired:
				// Disconnected: the session may live on the server, but no
				// request proves for how long. Step down now.
				lose(&lease.LostError{Reason: ReasonSessionDone, At: c.cfg.Now()})
			}
		}))
	if err != nil {
		lose(context.Canceled)
		return 0, fmt.Errorf("connect to %v: %w", c.cfg.Servers, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		<-guard.Done()
		conn.Close()
	})
	defer func() {
		lose(context.Canceled)
		wg.Wait()
	}()

	t := time.NewTimer(2 * c.cfg.SessionTimeout)
	select {
	case <-ready:
		t.Stop()
	case <-guard.Done():
		t.Stop()
		return 0, fmt.Errorf("connect to %v: %w", c.cfg.Servers, context.Cause(guard))
	case <-t.C:
		return 0, fmt.Errorf("connect to %v: no session after %v", c.cfg.Servers, 2*c.cfg.SessionTimeout)
	}
	lg := c.lg.With(zap.String("session", fmt.Sprintf("%x", conn.SessionID())))

	if err := ensurePath(conn, c.cfg.Path); err != nil {
		return 0, refused(c.cfg.Path, err)
	}
	me, err := conn.CreateProtectedEphemeralSequential(c.cfg.Path+"/"+candidatePrefix, []byte(c.cfg.Node), zk.WorldACL(zk.PermAll))
	if err != nil {
		return 0, refused(c.cfg.Path, fmt.Errorf("create candidate under %s: %w", c.cfg.Path, err))
	}
	_, stat, err := conn.Exists(me)
	if err != nil {
		return 0, fmt.Errorf("read candidate %s: %w", me, err)
	}
	lg = lg.With(zap.String("candidate", me))
	granted, err := c.await(guard, conn, me)
	if err != nil {
		return 0, err
	}

	term := scheduler.Term{Token: stat.Czxid, Node: c.cfg.Node, Since: c.cfg.Now()}
	lg = lg.With(zap.Int64("token", term.Token))
	wg.Go(func() { c.watchSelf(guard, conn, me, lose) })
	lg.Info("campaign won", zap.Time("deadline", granted.Add(c.cfg.SessionTimeout-c.cfg.Margin)))
	held := c.serve(guard, term, candidacy{conn: conn, me: me}, granted, c.checkFor(conn, me, &wg), lead, lg)
	return held, nil
}

// await waits until me is the first candidate (byCreation), watching only its
// predecessor, so that a leader leaving wakes one candidate and not all.
// It returns when the request that found me first was sent: the session
// was alive on the server at least from then.
func (c *Campaigner) await(ctx context.Context, conn *zk.Conn, me string) (time.Time, error) {
	for {
		sent := c.cfg.Now()
		children, _, err := conn.Children(c.cfg.Path)
		if err != nil {
			return time.Time{}, refused(c.cfg.Path, fmt.Errorf("list candidates under %s: %w", c.cfg.Path, err))
		}
		cs, err := byCreation(conn, c.cfg.Path, children)
		if err != nil {
			return time.Time{}, refused(c.cfg.Path, err)
		}
		pred, ok := predecessor(cs, path.Base(me))
		switch {
		case !ok:
			return time.Time{}, fmt.Errorf("candidate %s: %w", me, errNotLeading)
		case pred == "":
			return sent, nil
		}
		exists, stat, ev, err := conn.ExistsW(path.Join(c.cfg.Path, pred))
		if err != nil {
			return time.Time{}, fmt.Errorf("watch candidate %s: %w", pred, err)
		}
		if !exists {
			continue
		}
		if stat.EphemeralOwner == 0 {
			if err := c.removeStray(conn, path.Join(c.cfg.Path, pred)); err != nil {
				return time.Time{}, err
			}
			continue
		}
		select {
		case <-ev:
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("wait for candidate %s: %w", pred, context.Cause(ctx))
		}
	}
}

// removeStray deletes p, a persistent node before this round's candidate:
// no session owns it, so it would stand there for ever. The delete is
// guarded by the version read, so a node written again meanwhile stays.
func (c *Campaigner) removeStray(conn *zk.Conn, p string) error {
	data, stat, err := conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read persistent node %s: %w", p, err)
	}
	if stat.EphemeralOwner != 0 {
		return nil
	}
	err = conn.Delete(p, stat.Version)
	switch {
	case errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion):
		return nil // gone or written again: the next look decides
	case err != nil:
		return refused(c.cfg.Path, fmt.Errorf("remove persistent node %s: %w", p, err))
	}
	c.lg.Warn("removed a persistent node under the election path: no replica writes one, and it stood before this candidate",
		zap.String("removed", p), zap.String("data", shown(data)), zap.Int64("czxid", stat.Czxid))
	return nil
}

// refused marks err as needing an operator when the server's access list
// refused it, naming the path and the remedy: the scheduler connects
// without authentication, so its candidates need every permission of
// world:anyone on the path.
func refused(parent string, err error) error {
	if !errors.Is(err, zk.ErrNoAuth) {
		return err
	}
	return fmt.Errorf("%w: %w: the access list of %s (or of a node above it) refuses this replica, which connects without "+
		"authentication; no replica can lead until it is restored with: zkCli.sh setAcl %s world:anyone:cdrwa",
		err, lease.ErrNeedsOperator, parent, parent)
}

// watchSelf ends the term when the candidate node is deleted, for instance
// by an operator, which the session does not report.
func (c *Campaigner) watchSelf(ctx context.Context, conn *zk.Conn, me string, lose func(error)) {
	for ctx.Err() == nil {
		exists, _, ev, err := conn.ExistsW(me)
		if ctx.Err() != nil {
			return
		}
		if err != nil || !exists {
			lose(&lease.LostError{Reason: ReasonKeyDeleted, At: c.cfg.Now()})
			return
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNodeDeleted {
				lose(&lease.LostError{Reason: ReasonKeyDeleted, At: c.cfg.Now()})
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// checkFor returns the session check of a term: a read of its candidate
// node, answered by the server, within ctx. The call runs in a goroutine of
// wg, since the client's calls take no context; it ends at the latest when
// the round closes the session.
func (c *Campaigner) checkFor(conn *zk.Conn, me string, wg *sync.WaitGroup) func(context.Context) error {
	return func(ctx context.Context) error {
		done := make(chan error, 1)
		wg.Go(func() {
			exists, _, err := conn.Exists(me)
			switch {
			case err != nil:
				done <- fmt.Errorf("check candidate %s: %w", me, err)
			case !exists:
				done <- fmt.Errorf("check candidate %s: %w", me, errGone)
			default:
				done <- nil
			}
		})
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return fmt.Errorf("check candidate %s: %w", me, ctx.Err())
		}
	}
}

// printf sends the client's log lines to zap at debug level: reconnects
// and the like, which the campaigner reports itself when they matter.
type printf struct{ lg *zap.SugaredLogger }

// Printf implements zk.Logger.
func (p printf) Printf(format string, args ...any) { p.lg.Debugf(format, args...) }
