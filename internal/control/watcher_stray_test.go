package control

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"scheduler/internal/testenv"
)

// TestWatcher_HandWrittenKeys: trigger keys the store would refuse (the zero time, year 0, a
// job no table can have) and pause keys that name no job are never delivered nor taken for
// pauses; a pause of a job the table lacks is not logged as a paused job. Each is logged once at
// warn, bounded, with the command that removes it, however often the Watcher lists again.
func TestWatcher_HandWrittenKeys(t *testing.T) {
	t.Parallel()
	e := testenv.MustEtcd(t)
	ctx := testCtx(t)
	const prefix = "/stray/election"
	leader := mustStore(t, e.Client(t), prefix)
	operator := mustStore(t, e.Client(t), prefix)
	cli := operator.cli
	long := strings.Repeat("x", 100_000)
	badTriggers := []string{
		prefix + ":trigger/yearly/0001-01-01T00:00:00.000000Z",
		prefix + ":trigger/yearly/0000-06-01T00:00:00.000000Z",
		prefix + ":trigger/" + strings.ToUpper(long) + "/2026-01-01T00:00:00.000000Z",
	}
	// A name longer than any job's is no name at all.
	badPauses := []string{prefix + ":paused/", prefix + ":paused/UPPER", prefix + ":paused/a/b", prefix + ":paused/" + strings.ToUpper(long), prefix + ":paused/" + long}
	unknownPauses := []string{prefix + ":paused/nosuchjob", prefix + ":paused/" + strings.Repeat("x", MaxJobName)}
	for _, k := range append(append(append([]string{}, badTriggers...), badPauses...), unknownPauses...) {
		if _, err := cli.Put(ctx, k, `{"by":42}`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := operator.Pause(ctx, "tick", "op"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	first, err := operator.Trigger(ctx, "yearly", "op", t0)
	if err != nil {
		t.Fatal(err)
	}

	core, logs := observer.New(zap.InfoLevel)
	w := leader.NewWatcher(zap.New(core))
	w.KnownJobs(func(job string) bool { return job == "tick" || job == "yearly" || job == "daily" })
	var lists atomic.Int64
	w.afterList = func(rev int64) {
		if lists.Add(1) != 1 {
			return
		}
		// Compact past the watches' start, so that the Watcher lists everything again.
		var cur *clientv3.PutResponse
		var err error
		for range 2 { // two revisions, so that the compaction passes the watches' start
			if cur, err = cli.Put(ctx, prefix+":trigger/yearly/2026-02-03T04:05:07.000000Z", "{}"); err != nil {
				break
			}
		}
		if err != nil {
			t.Errorf("put: %v", err)
			return
		}
		if _, err := cli.Compact(ctx, cur.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
			t.Errorf("compact: %v", err)
		}
	}
	startWatcher(t, w)
	// until receives up to the request with key, each a valid one (a re-list delivers again the
	// requests not done yet).
	valid := map[string]bool{first.Key: true, prefix + ":trigger/yearly/2026-02-03T04:05:07.000000Z": true}
	until := func(key string) {
		t.Helper()
		for {
			r := recv(t, ctx, w)
			if !valid[r.Key] {
				t.Fatalf("delivered %.200s, want only the valid requests", r.Key)
			}
			if r.Key == key {
				return
			}
		}
	}
	until(prefix + ":trigger/yearly/2026-02-03T04:05:07.000000Z")
	// One more through the watch, after a key it must ignore.
	late := prefix + ":trigger/daily/0001-01-01T00:00:00.000000Z"
	if _, err := cli.Put(ctx, late, "{}"); err != nil {
		t.Fatal(err)
	}
	last, err := operator.Trigger(ctx, "daily", "op", t0)
	if err != nil {
		t.Fatal(err)
	}
	valid[last.Key] = true
	until(last.Key)
	if n := lists.Load(); n < 2 {
		t.Fatalf("listed %d times, want a second list after the compaction", n)
	}

	for msg, keys := range map[string][]string{"ignoring request key": append(badTriggers, late), "ignoring pause key": badPauses, "pause key of an unknown job": unknownPauses} {
		entries := logs.FilterMessage(msg).All()
		if len(entries) != len(keys) {
			for _, en := range entries {
				t.Logf("%s: %.120v", msg, en.ContextMap()["key"])
			}
			t.Errorf("%q logged %d times, want %d (once per key)", msg, len(entries), len(keys))
		}
		for _, en := range entries {
			if en.Level != zap.WarnLevel {
				t.Errorf("%q at %s, want warn", msg, en.Level)
			}
			f := en.ContextMap()
			key, remove := f["key"].(string), f["remove"].(string)
			long := strings.HasPrefix(remove, "etcdctl get --prefix --keys-only ") && strings.HasSuffix(remove, longKeyThen)
			if len(key) > maxShownKey+len("…") || !strings.HasPrefix(remove, "etcdctl del ") && !long ||
				len(remove) > maxShownKey+len("etcdctl get --prefix --keys-only ''")+len(longKeyThen) {
				t.Errorf("%q with key %.80q (%d bytes) and remove %.80q (%d bytes): want both bounded, remove an etcdctl del", msg, key, len(key), remove, len(remove))
			}
			if errText, _ := f["error"].(string); len(errText) > 4*maxShownKey {
				t.Errorf("%q: error of %d bytes, want it bounded", msg, len(errText))
			}
		}
	}
	paused := logs.FilterMessage("job paused").All()
	if len(paused) != 1 || paused[0].ContextMap()["job"] != "tick" {
		t.Errorf("job paused logged %v, want tick alone", paused)
	}
	if w.Paused("UPPER") || w.Paused("a/b") || w.Paused("") || !w.Paused("tick") {
		t.Errorf("paused UPPER %v, a/b %v, empty %v, tick %v; want tick alone", w.Paused("UPPER"), w.Paused("a/b"), w.Paused(""), w.Paused("tick"))
	}
}
