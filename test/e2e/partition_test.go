package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/internal/testenv"
)

// beatJobs fire every second, each at its own jitter within the second, so that the leader
// sends fenced writes (claims, starts, outcomes) to Postgres all through every second.
var beatJobs = func() string {
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, `  - name: beat-%d
    schedule: "* * * * * *"
    type: exec
    command: ["true"]
    jitter: 900ms
    misfire: skip
`, i)
	}
	return b.String()
}()

// leaderCutOff pauses the leader's links to all three etcd members in the middle of a run. The
// leader cannot renew its lease and ends its term before the lease expires on the etcd server
// (the lease is seen alive there after the step-down); a follower is elected only once it has
// expired, and finishes the interrupted slot. To have a write of the old leader in flight when it
// steps down, its link to Postgres is slowed to 3 TTLs from the first fenced batch it sends after
// the cut (a beat job's claim, start or outcome): that write reaches Postgres after the new leader
// raised the fence and is refused (JF001 seen on the wire). Slowing the link at the cut itself
// would not do: the next write may need a new connection, or a ping of one idle for more than a
// second, and neither completes over the slow link before the step-down, so no write would be
// sent. The old leader rejoins as a follower once its links heal.
func (s *suite) leaderCutOff(t *testing.T) {
	w := seedWorkload
	d := s.deploy(t, deployOptions{jobs: w.yaml() + beatJobs})
	d.startAll()
	d.waitLeader(0, 30*time.Second)
	run, old := d.runUnderLeader(time.Now())
	slot := run.slot
	r := d.replicas[old.node]
	tl := newTimeline(t, "LeaderCutOffFromEtcd")
	delay := 3 * ttl
	sleepUntil(run.at.Add(time.Second).Truncate(time.Second).Add(750 * time.Millisecond))
	r.pg.DelayFrom(delay, fencedBatch)
	for _, p := range r.etcd {
		p.Pause()
	}
	cutAt := time.Now()
	tl.start(cutAt, fmt.Sprintf("%s (leader, token %d, lease %s) cut off from etcd, %d ms into the run of slot %s",
		old.node, old.token, old.lease, ms(cutAt.Sub(run.at)), stamp(slot)))
	tl.mark(run.at, "%s starts the run of slot %s", old.node, stamp(slot))

	// Ask the server about the old leader's lease until it is gone. An answer "alive" to a
	// request sent at t proves the lease was alive at t or later.
	lease, err := strconv.ParseInt(old.lease, 16, 64)
	if err != nil {
		t.Fatalf("lease %q of %s's term: %v", old.lease, old.node, err)
	}
	lastAlive, gone := watchLease(t, d.etcd.cli, clientv3.LeaseID(lease), 4*ttl)
	next := d.waitLeader(old.token, 10*time.Second)
	stepDown, _ := d.termOf(old.token)
	stopped := stepDown.stop()
	tl.mark(stopped, "%s stops leading (%s)", old.node, stepDown.reason)
	tl.mark(lastAlive, "the old lease last seen alive on the server (request sent)")
	tl.mark(gone, "the old lease seen expired (request sent)")
	tl.mark(next.won, "%s wins, token %d", next.node, next.token)
	tl.figure("stepdown_ms", ms(stopped.Sub(cutAt)))
	tl.figure("lease_alive_after_stepdown_ms", ms(lastAlive.Sub(stopped)))
	tl.figure("takeover_ms", ms(next.won.Sub(cutAt)))
	tl.figure("tokens", fmt.Sprintf("%d->%d", old.token, next.token))
	switch {
	case stopped.IsZero():
		t.Errorf("%s never stopped leading", old.node)
	case !stopped.Before(next.won):
		t.Errorf("%s stopped leading at %s, after %s won at %s", old.node, stamp(stopped), next.node, stamp(next.won))
	case !lastAlive.After(stopped):
		t.Errorf("%s stopped leading at %s; its lease was last seen alive at %s: want the step-down before the lease expired",
			old.node, stamp(stopped), stamp(lastAlive))
	}

	// The old leader's writes sent before the step-down land after the raise and are refused.
	slowed := r.pg.DelayedSince()
	if slowed.IsZero() || !slowed.Before(stopped) {
		t.Fatalf("%s sent no fenced batch between the cut at %s and its step-down at %s (link slowed at %s)",
			old.node, stamp(cutAt), stamp(stopped), stamp(slowed))
	}
	tl.mark(slowed, "%s's link to Postgres slowed to %d ms, from its first fenced batch after the cut", old.node, ms(delay))
	landed := stopped.Add(delay + time.Second)
	sleepUntil(landed)
	fenced := r.pg.StaleErrors()
	snap := d.snapshot()
	tl.mark(raiseTime(snap.fencesOf(invoicesJob), next.token), "fence raised to %d by %s", next.token, next.node)
	tl.mark(landed, "%s's delayed writes have landed: %d refused by the fence (JF001, or the gate's division by zero)", old.node, fenced)
	tl.figure("writes_fenced_wire", fenced)
	if fenced < 1 {
		t.Errorf("no write of %s was refused by the fence: want its in-flight writes refused", old.node)
	}

	r.pg.Delay(0)
	for _, p := range r.etcd {
		p.Resume()
	}
	healAt := time.Now()
	tl.mark(healAt, "%s's links heal", old.node)
	testenv.Eventually(d.t, 20*time.Second, poll, old.node+" to rejoin as a follower", func() bool {
		st := d.status()
		return st.Leader != nil && st.Leader.Token == next.token && st.hasReplica(old.node)
	})
	fin := d.waitFinished(invoicesJob, slot, 40*time.Second)
	if fin.Finished != nil {
		tl.mark(*fin.Finished, "slot %s %s under token %d", stamp(slot), fin.Status, fin.Token)
	}
	if fin.Status != "succeeded" || fin.Token != next.token || fin.Attempt < 2 {
		t.Errorf("slot %s: %s under token %d, attempt %d; want succeeded under %d, taken over", stamp(slot), fin.Status, fin.Token, fin.Attempt, next.token)
	}
	tl.print()
	d.check(invoicesJob, w.clients)
}

// fencedBatch reports whether a chunk a client sends to Postgres holds a batch: two or more
// Bind messages. Every batch the store sends begins a transaction and checks the fence in it (a
// claim, a start, an outcome, a job's first fenced statement), so one that reaches Postgres after
// the raise is refused. A single statement may run in a transaction whose check passed before the
// raise (which then waits for it), a ping is a simple query, a new connection begins with its
// startup message and a statement's first use with its Parse: none of them is refused.
func fencedBatch(chunk []byte) bool {
	binds := 0
	for len(chunk) >= 5 {
		n := int(binary.BigEndian.Uint32(chunk[1:5]))
		if n < 4 || n+1 > len(chunk) {
			break
		}
		if chunk[0] == 'B' {
			binds++
		}
		chunk = chunk[1+n:]
	}
	return binds >= 2
}

// watchLease asks the server for lease's TTL every 20 ms until it is gone, at most within, and
// returns when the last request answered "alive" and the first answered "gone" were sent.
func watchLease(t *testing.T, cli *clientv3.Client, lease clientv3.LeaseID, within time.Duration) (lastAlive, gone time.Time) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := cli.TimeToLive(ctx, lease)
		cancel()
		switch {
		case err != nil:
		case resp.TTL >= 0:
			lastAlive = sent
		default:
			return lastAlive, sent
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("lease %x still alive after %v", int64(lease), within)
	return lastAlive, gone
}

// leaderKeyDeleted deletes the leader's election key, as an operator might with etcdctl, while
// what etcd sends the leader is slow (300 ms on the way back): the next candidate wins at once,
// but the old leader learns of the deletion only when the watch event reaches it. For that while
// two replicas believe they lead; the old one's next write (one every 50 ms) reads the new fence
// and is refused. The new leader finishes the slot once.
//
// The lag comes after the leader was elected, so its renewals meet it unannounced: at TTL 2 s
// a renewal is sent a second after the last and must be answered within half a second more
// (TTL − margin), so a round trip slower than that would end the term by the renewal deadline
// before the key is deleted, which is another scenario (LeaderCutOffFromEtcd). The lag is all on
// the way back: a round trip takes 300 ms, as at 150 ms each way, while the watch event, which
// the old leader's belief outlives, takes 300 ms rather than 150; on two loaded cores the new
// leader's takeover has taken over 140 ms to raise the fence, leaving the old one no write
// between the raise and the event.
func (s *suite) leaderKeyDeleted(t *testing.T) {
	w := workload{schedule: "@every 10s", every: 10 * time.Second, clients: 20, delay: 50 * time.Millisecond}
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.startAll()
	first := d.waitLeader(0, 30*time.Second)
	lag := 300 * time.Millisecond
	for _, p := range d.replicas[first.node].etcd {
		p.DelayEach(0, lag)
	}
	run := d.waitRunStarted(invoicesJob, time.Now().Add(ttl), 40*time.Second)
	old, ok := d.termOf(run.token)
	if !ok || old.node != first.node || !old.ended.IsZero() {
		t.Fatalf("the run of %s started under token %d, not by the slowed leader %s", stamp(run.slot), run.token, first.node)
	}
	tl := newTimeline(t, "LeaderKeyDeleted")
	sleepUntil(run.at.Add(200 * time.Millisecond))
	stale := d.replicas[old.node].pg.StaleErrors()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := d.etcd.cli.Get(ctx, d.prefix+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("read the leader key: %v (%d keys)", err, len(resp.Kvs))
	}
	kv := resp.Kvs[0]
	if string(kv.Value) != old.node || kv.CreateRevision != old.token {
		t.Fatalf("leader key %s = %s at revision %d, want %s at %d", kv.Key, kv.Value, kv.CreateRevision, old.node, old.token)
	}
	if _, err := d.etcd.cli.Delete(ctx, string(kv.Key)); err != nil {
		t.Fatalf("delete the leader key: %v", err)
	}
	delAt := time.Now()
	tl.start(delAt, fmt.Sprintf("leader key of %s (token %d) deleted, %d ms into the run of slot %s; what etcd sends %s lags %d ms",
		old.node, old.token, ms(delAt.Sub(run.at)), stamp(run.slot), old.node, ms(lag)))
	next := d.waitLeader(old.token, 10*time.Second)
	var ended term
	testenv.Eventually(d.t, 10*time.Second, poll, old.node+"'s term to end", func() bool {
		ended, _ = d.termOf(old.token)
		return !ended.ended.IsZero()
	})
	fin := d.waitFinished(invoicesJob, run.slot, 30*time.Second)
	snap := d.snapshot()
	raised := raiseTime(snap.fencesOf(invoicesJob), next.token)
	tl.mark(next.won, "%s wins, token %d", next.node, next.token)
	tl.mark(raised, "fence raised to %d by %s", next.token, next.node)
	tl.mark(ended.ended, "%s ends its term (%s)", old.node, ended.reason)
	if fin.Finished != nil {
		tl.mark(*fin.Finished, "slot %s %s under token %d, attempt %d", stamp(run.slot), fin.Status, fin.Token, fin.Attempt)
	}
	fencedLog := fencedWrites(readLog(d.replicas[old.node].log), delAt)
	byToken := map[int64]int{}
	for _, i := range snap.invoicesOf(run.slot) {
		byToken[i.Token]++
	}
	tl.figure("overlap_ms", ms(ended.ended.Sub(next.won)))
	tl.figure("tokens", fmt.Sprintf("%d->%d", old.token, next.token))
	tl.figure("writes_fenced_log", fencedLog)
	tl.figure("writes_fenced_wire", d.replicas[old.node].pg.StaleErrors()-stale)
	tl.figure("rows_old_token", byToken[old.token])
	tl.figure("rows_new_token", byToken[next.token])
	if !ended.ended.After(next.won) {
		t.Errorf("%s ended its term at %s, before %s won at %s: the scenario did not make two leaders overlap",
			old.node, stamp(ended.ended), next.node, stamp(next.won))
	}
	if fencedLog < 1 {
		t.Errorf("%s logged no fenced write after its key was deleted: want its next write refused", old.node)
	}
	if fin.Status != "succeeded" || fin.Token != next.token {
		t.Errorf("slot %s: %s under token %d, want succeeded under %d", stamp(run.slot), fin.Status, fin.Token, next.token)
	}
	tl.print()
	d.check(invoicesJob, w.clients)
}
