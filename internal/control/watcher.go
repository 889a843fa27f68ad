package control

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Watcher keeps the set of paused jobs current in memory and delivers
// trigger requests, for a leader (it works on any replica).
//
// Run lists the paused jobs and the pending requests at one revision, then
// watches both from the next revision. When a watch fails (the revision
// was compacted, the etcd member lost its leader, the connection broke) it
// lists again and starts new watches, at once the first time and with a
// growing delay while failures repeat. Between a failure and the next
// successful list, Paused answers from the last state seen.
//
// Requests are delivered at least once per Run: those pending at the first
// list, then each new one as it is written, oldest first. A request whose
// deletion the Watcher sees before delivering it is not delivered. After a re-list, every request
// still pending is delivered again, including ones delivered before and
// not yet deleted with Store.Done: the run ledger makes the second run of
// the same manual slot a no-op. A request the consumer takes and then
// cannot handle (because the term ended, say) is not offered again until
// the next re-list; a new leader should therefore start a new Watcher (or
// call Store.Requests) for its term. Requests wait in memory, not in the
// channel, so a consumer that does not read never holds up Paused.
type Watcher struct {
	s   *Store
	lg  *zap.Logger
	out chan Request

	ready     chan struct{}
	readyOnce sync.Once
	started   atomic.Bool

	// afterList, when set (by tests), is called after each successful list
	// with its revision, before the watches start.
	afterList func(rev int64)

	// ignored holds the keys that do not parse (written by hand) as last reported, so that each
	// is logged once, not at every re-list; only Run's goroutine uses it.
	ignored map[string]bool
	known   func(job string) bool // see KnownJobs; nil: every job

	mu     sync.RWMutex
	paused map[string]struct{}
}

// NewWatcher returns a Watcher of s's keys that logs through lg (nil: no
// logging). Call Run to start it.
func (s *Store) NewWatcher(lg *zap.Logger) *Watcher {
	if lg == nil {
		lg = zap.NewNop()
	}
	return &Watcher{
		s:       s,
		lg:      lg.Named("control").With(zap.String("prefix", s.k.prefix)),
		out:     make(chan Request),
		ready:   make(chan struct{}),
		paused:  map[string]struct{}{},
		ignored: map[string]bool{},
	}
}

// KnownJobs makes the Watcher warn, once per key, of a pause key that names a job known says the
// table lacks, instead of logging it as a paused job; the key still pauses that job, should the
// table gain it. known is called from Run, for each pause key read. Call KnownJobs before Run;
// it returns w.
func (w *Watcher) KnownJobs(known func(job string) bool) *Watcher {
	w.known = known
	return w
}

// Paused reports whether job was paused at the last state seen; false
// before the first list (see Ready). Safe for concurrent use; it takes a
// read lock and a map lookup.
func (w *Watcher) Paused(job string) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	_, ok := w.paused[job]
	return ok
}

// Ready is closed once the first list has succeeded: from then on Paused
// reflects etcd. A leader waits for it before its first slot fires.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Requests returns the channel on which Run delivers trigger requests
// (see Watcher for the guarantees). It is closed when Run returns.
func (w *Watcher) Requests() <-chan Request { return w.out }

// Run keeps the Watcher current until ctx ends, then returns nil. It
// starts no goroutine of its own beyond the etcd client's watch streams,
// which end with it. Run may be called once; a second call returns an
// error at once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("control: watcher run twice")
	}
	defer close(w.out)
	var q queue
	failures := 0
	for {
		progressed, err := w.cycle(ctx, &q)
		if ctx.Err() != nil {
			return nil
		}
		if progressed {
			failures = 0
		}
		failures++
		switch {
		case errors.Is(err, rpctypes.ErrCompacted) || failures == 1:
			w.lg.Info("watch ended; listing again", zap.Int("attempt", failures), zap.Error(err))
		case failures == 2:
			w.lg.Warn("watch failing; retrying with backoff", zap.Int("attempt", failures), zap.Error(err))
		default:
			w.lg.Debug("watch failing", zap.Int("attempt", failures), zap.Error(err))
		}
		if !w.deliverFor(ctx, retryDelay(failures), &q) {
			return nil
		}
	}
}

// retryDelay is how long to wait before listing again after the n-th
// consecutive failure (n >= 1): nothing the first time, since a compacted
// watch is routine, then 250 ms doubling up to 5 s.
func retryDelay(n int) time.Duration {
	const base, most = 250 * time.Millisecond, 5 * time.Second
	if n <= 1 {
		return 0
	}
	d := base
	for i := 2; i < n && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// deliverFor delivers queued requests for d, and reports false if ctx
// ended meanwhile.
func (w *Watcher) deliverFor(ctx context.Context, d time.Duration, q *queue) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		out, head := w.offer(q)
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case out <- head:
			q.pop()
		}
	}
}

// offer returns the channel and request to send the queue's head on, or a
// nil channel (never ready) when the queue is empty.
func (w *Watcher) offer(q *queue) (chan<- Request, Request) {
	r, ok := q.head()
	if !ok {
		return nil, Request{}
	}
	return w.out, r
}

// cycle lists, then follows both watches until one fails or ctx ends.
// progressed reports whether a watch delivered anything before failing.
func (w *Watcher) cycle(ctx context.Context, q *queue) (progressed bool, err error) {
	rev, err := w.list(ctx, q)
	if err != nil {
		return false, err
	}
	if w.afterList != nil {
		w.afterList(rev)
	}
	wctx, cancel := context.WithCancel(rctx(ctx))
	defer cancel()
	k := w.s.k
	pausedCh := w.s.cli.Watch(wctx, k.pausedPrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	triggerCh := w.s.cli.Watch(wctx, k.triggerPrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for {
		out, head := w.offer(q)
		select {
		case <-ctx.Done():
			return progressed, ctx.Err()
		case out <- head:
			q.pop()
		case wr, ok := <-pausedCh:
			if err := watchErr(wr, ok, k.pausedPrefix()); err != nil {
				return progressed, err
			}
			progressed = true
			w.applyPaused(wr.Events)
		case wr, ok := <-triggerCh:
			if err := watchErr(wr, ok, k.triggerPrefix()); err != nil {
				return progressed, err
			}
			progressed = true
			w.applyRequests(wr.Events, q)
		}
	}
}

// watchErr returns why a watch response ends the watch, or nil.
func watchErr(wr clientv3.WatchResponse, ok bool, prefix string) error {
	switch {
	case !ok:
		return fmt.Errorf("watch %s: closed", prefix)
	case wr.CompactRevision != 0:
		return fmt.Errorf("watch %s: revision compacted up to %d: %w", prefix, wr.CompactRevision, rpctypes.ErrCompacted)
	case wr.Err() != nil:
		return fmt.Errorf("watch %s: %w", prefix, wr.Err())
	}
	return nil
}

// list reads the paused jobs and the pending requests at one revision,
// replaces the in-memory state with them and returns the revision.
func (w *Watcher) list(ctx context.Context, q *queue) (int64, error) {
	k := w.s.k
	resp, err := w.s.cli.Txn(rctx(ctx)).Then(
		clientv3.OpGet(k.pausedPrefix(), clientv3.WithPrefix()),
		clientv3.OpGet(k.triggerPrefix(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return 0, fmt.Errorf("list paused jobs and requests of %s: %w", k.prefix, err)
	}
	reported := w.ignored
	w.ignored = map[string]bool{}
	paused := map[string]struct{}{}
	for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
		if job, ok := w.pausedJob(kv.Key, reported); ok {
			paused[job] = struct{}{}
		}
	}
	quiet := w.ignored // pauses of jobs the table lacks, warned of instead
	var rs []Request
	for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
		if r, ok := w.decodeRequest(kv, reported); ok {
			rs = append(rs, r)
		}
	}
	sortRequests(rs)
	w.mu.Lock()
	for job := range paused {
		if _, was := w.paused[job]; !was && !quiet[w.s.k.paused(job)] {
			w.lg.Info("job paused", zap.String("job", job))
		}
	}
	for job := range w.paused {
		if _, is := paused[job]; !is && !reported[w.s.k.paused(job)] {
			w.lg.Info("job resumed", zap.String("job", job))
		}
	}
	w.paused = paused
	w.mu.Unlock()
	q.reset(rs)
	w.readyOnce.Do(func() { close(w.ready) })
	w.lg.Debug("listed", zap.Int64("revision", resp.Header.Revision), zap.Int("paused", len(paused)), zap.Int("requests", len(rs)))
	return resp.Header.Revision, nil
}

// applyPaused applies pause and resume events.
func (w *Watcher) applyPaused(evs []*clientv3.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range evs {
		job := strings.TrimPrefix(string(ev.Kv.Key), w.s.k.pausedPrefix())
		_, was := w.paused[job]
		switch ev.Type {
		case mvccpb.PUT:
			if _, ok := w.pausedJob(ev.Kv.Key, w.ignored); !ok {
				continue
			}
			w.paused[job] = struct{}{}
			if !was && !w.ignored[string(ev.Kv.Key)] {
				w.lg.Info("job paused", zap.String("job", job))
			}
		case mvccpb.DELETE:
			quiet := w.ignored[string(ev.Kv.Key)]
			delete(w.ignored, string(ev.Kv.Key))
			delete(w.paused, job)
			if was && !quiet {
				w.lg.Info("job resumed", zap.String("job", job))
			}
		}
	}
}

// applyRequests queues new requests and drops deleted ones.
func (w *Watcher) applyRequests(evs []*clientv3.Event, q *queue) {
	for _, ev := range evs {
		switch ev.Type {
		case mvccpb.PUT:
			if r, ok := w.decodeRequest(ev.Kv, w.ignored); ok {
				q.put(r)
			}
		case mvccpb.DELETE:
			delete(w.ignored, string(ev.Kv.Key))
			q.remove(string(ev.Kv.Key))
		}
	}
}

// decodeRequest parses a request; a key that does not parse is ignored, and logged unless
// reported holds it (it was logged before).
func (w *Watcher) decodeRequest(kv *mvccpb.KeyValue, reported map[string]bool) (Request, bool) {
	r, err := w.s.decodeRequest(kv)
	if err != nil {
		w.ignore("ignoring request key", string(kv.Key), err, reported)
		return Request{}, false
	}
	return r, true
}

// pausedJob returns the job a pause key names; a key that names no job (written by hand: no
// table has such a job) pauses nothing, and is logged unless reported holds it. A key naming a
// job the table lacks pauses it, and is logged (unless reported holds it) instead of the pause.
func (w *Watcher) pausedJob(key []byte, reported map[string]bool) (string, bool) {
	job := strings.TrimPrefix(string(key), w.s.k.pausedPrefix())
	if err := checkJob(job); err != nil {
		w.ignore("ignoring pause key", string(key), fmt.Errorf("pause key %q: %w", shownKey(string(key)), err), reported)
		return "", false
	}
	if w.known != nil && !w.known(job) {
		err := fmt.Errorf("pause key %q names no job of the table: it pauses nothing unless the table gains %q", shownKey(string(key)), shownKey(job))
		w.ignore("pause key of an unknown job", string(key), err, reported)
	}
	return job, true
}

// ignore records key as ignored, and logs it at warn with the command that removes it, unless
// reported holds it.
func (w *Watcher) ignore(msg, key string, err error, reported map[string]bool) {
	if !reported[key] {
		w.lg.Warn(msg, zap.String("key", shownKey(key)), zap.Error(err), zap.String("remove", removeCommand(key)))
	}
	w.ignored[key] = true
}
