package control

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

func TestStore_Trigger(t *testing.T) {
	t.Parallel()
	ctx, s := etcdStore(t, "/trigger/election")
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatalf("load zone: %v", err)
	}
	t0 := time.Date(2026, 10, 25, 2, 30, 0, 123456789, berlin)

	r, err := s.Trigger(ctx, "stock", "alice", t0)
	if err != nil {
		t.Fatalf("trigger: %v", err)
	}
	wantAt := t0.UTC().Truncate(time.Microsecond)
	if r.Job != "stock" || r.By != "alice" || !r.At.Equal(wantAt) || r.At.Location() != time.UTC {
		t.Fatalf("request = %+v, want job stock by alice at %v UTC", r, wantAt)
	}
	if want := "/trigger/election:trigger/stock/2026-10-25T01:30:00.123456Z"; r.Key != want {
		t.Fatalf("key = %q, want %q", r.Key, want)
	}

	// A later request of a job that sorts first, an earlier one of a job
	// that sorts last: Requests orders by time, not by key.
	later, err := s.Trigger(ctx, "alpha", "", t0.Add(time.Second))
	if err != nil {
		t.Fatalf("trigger: %v", err)
	}
	earlier, err := s.Trigger(ctx, "zulu", "bob", t0.Add(-time.Second))
	if err != nil {
		t.Fatalf("trigger: %v", err)
	}
	// The same job in the same microsecond is the same request.
	if again, err := s.Trigger(ctx, "stock", "carol", t0.Add(100)); err != nil || again.Key != r.Key {
		t.Fatalf("trigger in the same microsecond = %+v, %v; want key %s", again, err, r.Key)
	}
	// A key that does not parse is left out.
	if _, err := s.cli.Put(ctx, s.k.triggerPrefix()+"stock/soon", ""); err != nil {
		t.Fatalf("put: %v", err)
	}

	rs, err := s.Requests(ctx)
	if err != nil {
		t.Fatalf("requests: %v", err)
	}
	if got, want := keysOf(rs), []string{earlier.Key, r.Key, later.Key}; !slices.Equal(got, want) {
		t.Fatalf("requests = %q, want %q", got, want)
	}
	if rs[1].By != "carol" {
		t.Errorf("request by %q after the second trigger, want carol", rs[1].By)
	}

	if err := s.Done(ctx, r); err != nil {
		t.Fatalf("done: %v", err)
	}
	if err := s.Done(ctx, r); err != nil {
		t.Fatalf("done twice: %v", err)
	}
	rs, err = s.Requests(ctx)
	if err != nil {
		t.Fatalf("requests: %v", err)
	}
	if got, want := keysOf(rs), []string{earlier.Key, later.Key}; !slices.Equal(got, want) {
		t.Fatalf("requests after done = %q, want %q", got, want)
	}

	t.Run("RejectsBadInput", func(t *testing.T) {
		for _, job := range []string{"", "a/b", "a b"} {
			if _, err := s.Trigger(ctx, job, "x", t0); !errors.Is(err, ErrInvalidJob) {
				t.Errorf("trigger %q = %v, want ErrInvalidJob", job, err)
			}
		}
		for _, at := range []time.Time{{}, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
			if _, err := s.Trigger(ctx, "stock", "x", at); err == nil {
				t.Errorf("trigger at %v succeeded", at)
			}
		}
		if err := s.Done(ctx, Request{Job: "stock", Key: s.k.paused("stock")}); err == nil {
			t.Errorf("done with a key outside the requests succeeded")
		}
		if m, err := s.Paused(ctx); err != nil || len(m) != 0 {
			t.Errorf("paused = %v, %v; want none", m, err)
		}
	})
}

func keysOf(rs []Request) []string {
	ks := make([]string, len(rs))
	for i, r := range rs {
		ks[i] = r.Key
	}
	return ks
}

// TestDecodeRequest_ClipsBy: a trigger key written by hand with a huge or control-laden "by" is
// read with it clipped as a pause record's is; the key still makes the request.
func TestDecodeRequest_ClipsBy(t *testing.T) {
	t.Parallel()
	_, s := etcdStore(t, "/trigger/clip")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ name, by, want string }{
		{"Short", "alice", "alice"},
		{"Control", "al\x1b[31mice\x00", "al[31mice"},
		{"Huge", strings.Repeat("é", 1<<20), strings.Repeat("é", maxReplicaField/2) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, err := json.Marshal(requestRecord{By: tc.by})
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.decodeRequest(&mvccpb.KeyValue{Key: []byte(s.k.trigger("stock", at)), Value: value})
			if err != nil {
				t.Fatal(err)
			}
			if r.By != tc.want || r.Job != "stock" || !r.At.Equal(at) {
				t.Fatalf("request = %q at %v by %.40q (%d bytes), want stock at %v by %.40q", r.Job, r.At, r.By, len(r.By), at, tc.want)
			}
		})
	}
}
