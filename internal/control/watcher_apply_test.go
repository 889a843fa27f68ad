package control

import (
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestWatcher_ApplyRequests(t *testing.T) {
	s := &Store{k: keys{prefix: "/p"}}
	w := s.NewWatcher(zap.NewNop())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := func(job string, sec int) string { return s.k.trigger(job, t0.Add(time.Duration(sec)*time.Second)) }
	put := func(k string) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(k), Value: []byte(`{"by":"x"}`)}}
	}
	del := func(k string) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(k)}}
	}
	var q queue
	w.applyRequests([]*clientv3.Event{
		put(key("b", 3)),
		put(key("a", 1)),
		put(key("z", 2)),
		put("/p:trigger/broken"), // ignored
		put(key("a", 1)),         // same key again: still once
		del(key("z", 2)),         // deleted before delivery: never delivered
		put(key("c", 2)),
	}, &q)
	var got []string
	for q.len() > 0 {
		r, _ := q.head()
		got = append(got, r.Key)
		q.pop()
	}
	want := []string{key("a", 1), key("c", 2), key("b", 3)}
	if !slices.Equal(got, want) {
		t.Fatalf("queued %q, want %q", got, want)
	}
	if _, ok := q.head(); ok {
		t.Fatalf("head of an empty queue is ok")
	}
}

func TestWatcher_ApplyPaused(t *testing.T) {
	s := &Store{k: keys{prefix: "/p"}}
	w := s.NewWatcher(zap.NewNop())
	ev := func(typ mvccpb.Event_EventType, job string) *clientv3.Event {
		return &clientv3.Event{Type: typ, Kv: &mvccpb.KeyValue{Key: []byte(s.k.paused(job))}}
	}
	w.applyPaused([]*clientv3.Event{ev(mvccpb.PUT, "a"), ev(mvccpb.PUT, "b"), ev(mvccpb.DELETE, "a"), ev(mvccpb.PUT, "b")})
	if w.Paused("a") || !w.Paused("b") || w.Paused("c") {
		t.Fatalf("paused a=%v b=%v c=%v, want false true false", w.Paused("a"), w.Paused("b"), w.Paused("c"))
	}
}
