package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrBackfillExists is returned by SubmitBackfill for a request whose job
// and id are taken already.
var ErrBackfillExists = errors.New("control: backfill request exists")

// The states of a backfill request.
const (
	BackfillPending = "pending" // submitted; no leader has started it
	BackfillRunning = "running" // a leader works through it
	BackfillDone    = "done"    // every slot decided; Failed counts those that failed
	BackfillRefused = "refused" // the leader cannot carry it out (Error says why)
)

// Backfill is a request to run a job's scheduled slots in a past range,
// and how far the leader got. The requester sets the request's fields; the
// leader working through it updates State, the counts, Error, Node and
// Updated. It is a record of progress only: which slots are done is the run
// ledger's to say, so a leader that takes over a request carries on from
// the ledger whatever the record says.
type Backfill struct {
	Job string `json:"job"`
	// ID names the request; it is also the mark of its runs in the ledger.
	// The requester uses its request time in Unix microseconds.
	ID      int64     `json:"id"`
	From    time.Time `json:"from"` // the first slot's earliest time, included
	To      time.Time `json:"to"`   // the last slot's latest time, included
	Rerun   bool      `json:"rerun"`
	Overlap string    `json:"overlap,omitempty"` // skip, queue or allow; empty: the job's
	By      string    `json:"by"`

	State     string    `json:"state"`
	Total     int       `json:"total"`
	Done      int       `json:"done"`
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`
	Skipped   int       `json:"skipped"`
	Error     string    `json:"error,omitempty"`
	Node      string    `json:"node,omitempty"` // the leader that wrote the record last
	Updated   time.Time `json:"updated"`

	// Key is the etcd key the request was read from, which UpdateBackfill writes: a key
	// written by hand need not spell the id as SubmitBackfill does. Empty for a request not
	// read from etcd.
	Key string `json:"-"`
	// Unreadable says why the stored request does not parse (its key, or its value), for a
	// request written by hand; Backfills returns it with Key and whatever the key names, and
	// nothing can be done with it but to report it.
	Unreadable string `json:"-"`
}

// Finished reports whether the leader is done with b.
func (b Backfill) Finished() bool { return b.State == BackfillDone || b.State == BackfillRefused }

// checkBackfill validates what names a request.
func checkBackfill(job string, id int64) error {
	if err := checkJob(job); err != nil {
		return err
	}
	if id <= 0 {
		return fmt.Errorf("backfill of %q: id %d: want > 0", job, id)
	}
	return nil
}

// sortBackfills orders requests oldest first.
func sortBackfills(bs []Backfill) {
	slices.SortFunc(bs, func(a, b Backfill) int {
		if a.ID != b.ID {
			if a.ID < b.ID {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Job, b.Job)
	})
}

// backfillKey returns the key of the request of job with id; the id is
// zero-padded so that a job's keys sort by time.
func (k keys) backfillKey(job string, id int64) string {
	return fmt.Sprintf("%s%s/%020d", k.backfillPrefix(), job, id)
}

func (k keys) backfillPrefix() string { return k.prefix + ":backfill/" }

// SubmitBackfill records b as a pending request. A request with the same
// job and id fails with ErrBackfillExists.
func (s *Store) SubmitBackfill(ctx context.Context, b Backfill) (Backfill, error) {
	b.State = BackfillPending
	b, v, err := encodeBackfill("submit", b, s.now())
	if err != nil {
		return Backfill{}, err
	}
	key := s.k.backfillKey(b.Job, b.ID)
	resp, err := s.cli.Txn(rctx(ctx)).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(v))).Commit()
	if err != nil {
		return Backfill{}, fmt.Errorf("submit backfill %d of %q: %w", b.ID, b.Job, err)
	}
	if !resp.Succeeded {
		return Backfill{}, fmt.Errorf("submit backfill %d of %q: %w", b.ID, b.Job, ErrBackfillExists)
	}
	return b, nil
}

// Backfills returns the backfill requests, finished ones included, oldest
// first. A key that does not parse as a request (written by hand) is
// returned with Unreadable set, so that the leader can report it.
func (s *Store) Backfills(ctx context.Context) ([]Backfill, error) {
	kvs, err := s.list(ctx, "backfill requests", s.k.backfillPrefix())
	if err != nil {
		return nil, err
	}
	var bs []Backfill
	for _, kv := range kvs {
		b, err := s.decodeBackfill(string(kv.Key), kv.Value)
		if err != nil {
			b.Key, b.Unreadable = string(kv.Key), err.Error()
		}
		bs = append(bs, b)
	}
	sortBackfills(bs)
	return bs, nil
}

// Backfill returns the request of job with id; ok is false when there is
// none.
func (s *Store) Backfill(ctx context.Context, job string, id int64) (b Backfill, ok bool, err error) {
	if err := checkBackfill(job, id); err != nil {
		return Backfill{}, false, err
	}
	key := s.k.backfillKey(job, id)
	resp, err := s.cli.Get(rctx(ctx), key)
	if err != nil {
		return Backfill{}, false, fmt.Errorf("read backfill %d of %q: %w", id, job, err)
	}
	if len(resp.Kvs) == 0 {
		return Backfill{}, false, nil
	}
	b, err = s.decodeBackfill(key, resp.Kvs[0].Value)
	return b, err == nil, err
}

// UpdateBackfill stores the leader's progress of b, stamped now, under the
// key b was read from (see Backfill.Key). A request removed meanwhile is not
// written again.
func (s *Store) UpdateBackfill(ctx context.Context, b Backfill) error {
	_, v, err := encodeBackfill("update", b, s.now())
	if err != nil {
		return err
	}
	key := s.k.backfillKey(b.Job, b.ID)
	if b.Key != "" {
		if k, err := s.decodeBackfill(b.Key, []byte("{}")); err != nil || k.Job != b.Job || k.ID != b.ID {
			return fmt.Errorf("update backfill %d of %q: key %q names another request", b.ID, b.Job, b.Key)
		}
		key = b.Key
	}
	if _, err := s.cli.Txn(rctx(ctx)).If(clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).
		Then(clientv3.OpPut(key, string(v))).Commit(); err != nil {
		return fmt.Errorf("update backfill %d of %q: %w", b.ID, b.Job, err)
	}
	return nil
}

// encodeBackfill checks b and stamps it at now, for op (submit, update) of either store, and
// returns it with the value both keep.
func encodeBackfill(op string, b Backfill, now time.Time) (Backfill, []byte, error) {
	if err := checkBackfill(b.Job, b.ID); err != nil {
		return Backfill{}, nil, fmt.Errorf("%s backfill: %w", op, err)
	}
	b.Updated = now.UTC()
	v, err := json.Marshal(b)
	if err != nil {
		return Backfill{}, nil, fmt.Errorf("%s backfill %d of %q: encode: %w", op, b.ID, b.Job, err)
	}
	return b, v, nil
}

// decodeBackfill parses a request's key and value; the key names the job
// and id, whatever the value says.
func (s *Store) decodeBackfill(key string, value []byte) (Backfill, error) {
	rest, _ := strings.CutPrefix(key, s.k.backfillPrefix())
	job, id, ok := strings.Cut(rest, "/")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || checkBackfill(job, n) != nil {
		return Backfill{}, fmt.Errorf("backfill key %q: not PREFIX:backfill/JOB/ID; remove it with: %s", shownKey(key), removeCommand(key))
	}
	var b Backfill
	if err := json.Unmarshal(value, &b); err != nil {
		return Backfill{Job: job, ID: n}, fmt.Errorf("backfill key %q: value does not parse (%w); remove it with: %s", shownKey(key), err, removeCommand(key))
	}
	b.Job, b.ID, b.Key = job, n, key
	return b, nil
}
