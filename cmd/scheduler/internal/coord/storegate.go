package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/control"
)

// ErrOtherStore ends a term won by a replica whose store is not the deployment's: it resigns
// before it touches its store.
var ErrOtherStore = errors.New("this replica's store is not the deployment's store")

// StoreRecords is where a deployment's store is recorded beside its election, by the first
// leader, so that every later candidate can be judged against it.
type StoreRecords interface {
	// Claim records id, by node, unless a store is recorded, in one step, and returns the
	// record as it stands afterwards.
	Claim(ctx context.Context, id scheduler.StoreID, node string) (control.StoreRecord, error)
	// Recorded returns the record; ok is false when there is none.
	Recorded(ctx context.Context) (rec control.StoreRecord, ok bool, err error)
	// Remove is the command that removes the record, after a deliberate move to another store.
	Remove() string
}

// storeGate keeps a replica whose store is not the deployment's from leading: it campaigns
// only while the recorded store is its own or none is recorded, claims the record at the
// start of every term before lead runs (so before the term touches the store's fences), and
// stops campaigning, ending a term it holds, once the record names another store. A replica
// of a version that publishes no identity is not judged: its terms run as before, and the
// first judged leader records its store.
type storeGate struct {
	backend
	rec   StoreRecords
	own   scheduler.StoreID
	node  string
	every time.Duration // how often the record is read while campaigning or waiting
	lg    *zap.Logger

	problem atomic.Pointer[string] // why this replica does not lead, nil while it may
	mu      sync.Mutex             // serialises judge's log lines
	logged  string                 // the problem last logged
}

// StoreProblem says why this replica does not campaign, or "" while it may.
func (g *storeGate) StoreProblem() string {
	if p := g.problem.Load(); p != nil {
		return *p
	}
	return ""
}

// Run campaigns while the record allows it, until ctx ends; it returns nil then.
func (g *storeGate) Run(ctx context.Context, lead LeadFunc) error {
	for g.wait(ctx) {
		cctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { g.watch(cctx, stop) })
		err := g.backend.Run(cctx, func(tctx context.Context, t scheduler.Term) error {
			rec, err := g.rec.Claim(tctx, g.own, g.node)
			if err != nil && !errors.Is(err, control.ErrStoreRecordUnreadable) {
				return fmt.Errorf("term %d: %w", t.Token, err)
			}
			if !g.judge(rec, err) {
				stop()
				return fmt.Errorf("term %d: %w", t.Token, ErrOtherStore)
			}
			return lead(tctx, t)
		})
		stop()
		wg.Wait()
		if err != nil {
			return err
		}
	}
	return nil
}

// wait returns true once this replica may campaign (the record is its store's, or there is
// none, or it cannot be read: a term claims it before it leads), false when ctx ended.
func (g *storeGate) wait(ctx context.Context) bool {
	for {
		rec, ok, err := g.rec.Recorded(ctx)
		if ctx.Err() != nil {
			return false
		}
		if !ok && !errors.Is(err, control.ErrStoreRecordUnreadable) || g.judge(rec, err) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(g.every):
		}
	}
}

// watch reads the record every g.every until ctx ends, and calls stop once it names another
// store.
func (g *storeGate) watch(ctx context.Context, stop func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(g.every):
		}
		rec, ok, err := g.rec.Recorded(ctx)
		if (ok || errors.Is(err, control.ErrStoreRecordUnreadable)) && !g.judge(rec, err) {
			stop()
			return
		}
	}
}

// judge reports whether rec (or its unreadable err) lets this replica lead, records the
// problem for readiness and status, and logs each new problem once at error level, and the
// end of one at info.
func (g *storeGate) judge(rec control.StoreRecord, err error) bool {
	var p string
	switch {
	case err != nil:
		p = fmt.Sprintf("%v: this replica does not lead until it is removed", err)
	case !rec.Store.Same(g.own):
		p = otherStore("this replica's", "this replica does not lead", g.own, rec, g.rec.Remove())
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p == "" {
		if g.logged != "" {
			g.lg.Info("this replica's store is the deployment's store: campaigning", zap.String("store", g.own.String()))
		}
		g.problem.Store(nil)
		g.logged = ""
		return true
	}
	g.problem.Store(&p)
	if p != g.logged {
		fields := []zap.Field{zap.String("store", g.own.String()), zap.String("problem", p)}
		if err == nil {
			fields = append(fields, zap.String("deployment_store", rec.Store.String()), zap.String("recorded_by", rec.By))
		}
		g.lg.Error("not campaigning: this replica's store is not the deployment's store", fields...)
		g.logged = p
	}
	return false
}

// otherStore words why whose store own is not the deployment's store of rec, and so what
// follows, with the remedies; remove is the command that removes the record.
func otherStore(whose, so string, own scheduler.StoreID, rec control.StoreRecord, remove string) string {
	return fmt.Sprintf("%s store is not the deployment's store: it is %s; the deployment's store, recorded by %s at %s, is %s: %s. Fix store.dsn and store.schema; after a deliberate move of the deployment to this store, remove the record with: %s",
		whose, own, rec.By, rec.At.Format(time.RFC3339), rec.Store, so, remove)
}
