package control

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Request asks the leader to run a job once, as the manual slot At.
type Request struct {
	// Job is the job to run.
	Job string
	// At is the manual slot: the request time in UTC, truncated to
	// microseconds.
	At time.Time
	// By is who asked, as the requester gave it; empty when unknown.
	By string
	// Key is the request's etcd key, which Done deletes.
	Key string
}

// requestRecord is the value of a request key.
type requestRecord struct {
	By string `json:"by"`
}

// Trigger records a request to run job once as the manual slot at (made UTC
// and truncated to microseconds). It returns at once; the leader runs the
// request when its Watcher delivers it, or, with no leader, once one is
// elected. Two requests for the same job in the same microsecond are one.
func (s *Store) Trigger(ctx context.Context, job, by string, at time.Time) (Request, error) {
	if err := checkJob(job); err != nil {
		return Request{}, fmt.Errorf("trigger: %w", err)
	}
	at = at.UTC().Truncate(time.Microsecond)
	if err := checkRequestTime(at); err != nil {
		return Request{}, fmt.Errorf("trigger %q: %w", job, err)
	}
	b, err := json.Marshal(requestRecord{By: by})
	if err != nil {
		return Request{}, fmt.Errorf("trigger %q: encode: %w", job, err)
	}
	r := Request{Job: job, At: at, By: by, Key: s.k.trigger(job, at)}
	if _, err := s.cli.Put(rctx(ctx), r.Key, string(b)); err != nil {
		return Request{}, fmt.Errorf("trigger %q at %s: %w", job, at.Format(triggerLayout), err)
	}
	return r, nil
}

// Requests returns the pending requests, oldest first. Keys that do not
// parse as requests (written by hand) are left out; a Watcher logs them.
func (s *Store) Requests(ctx context.Context) ([]Request, error) {
	kvs, err := s.list(ctx, "requests", s.k.triggerPrefix())
	if err != nil {
		return nil, err
	}
	rs := make([]Request, 0, len(kvs))
	for _, kv := range kvs {
		if r, err := s.decodeRequest(kv); err == nil {
			rs = append(rs, r)
		}
	}
	sortRequests(rs)
	return rs, nil
}

// Done deletes a handled request. Deleting a request that is gone already
// is not an error.
func (s *Store) Done(ctx context.Context, r Request) error {
	if !strings.HasPrefix(r.Key, s.k.triggerPrefix()) {
		return fmt.Errorf("done: key %q of job %q is not a request under %s", r.Key, r.Job, s.k.triggerPrefix())
	}
	if _, err := s.cli.Delete(rctx(ctx), r.Key); err != nil {
		return fmt.Errorf("done with request %s: %w", r.Key, err)
	}
	return nil
}

// decodeRequest parses a request key and value. A value that does not
// parse leaves By empty: the key alone makes the request. By is clipped as
// a pause record's is: the leader logs it with the run.
func (s *Store) decodeRequest(kv *mvccpb.KeyValue) (Request, error) {
	job, at, err := s.k.parseTrigger(string(kv.Key))
	if err != nil {
		return Request{}, err
	}
	var rec requestRecord
	if json.Unmarshal(kv.Value, &rec) != nil {
		rec = requestRecord{}
	}
	return Request{Job: job, At: at, By: clipField(rec.By), Key: string(kv.Key)}, nil
}

// sortRequests sorts rs oldest first.
func sortRequests(rs []Request) { slices.SortFunc(rs, compareRequests) }

// compareRequests orders requests oldest first, then by key.
func compareRequests(a, b Request) int {
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}
