package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/internal/testenv"
)

// leaselessKey writes a key without a lease under the election prefix, as `etcdctl put` does,
// while a replica leads, then deletes every candidate key, the leader's included, so that every
// replica campaigns again behind it. No replica writes such a key, and no expiry ever removes
// it: before the fix every campaign waited for it forever and status named its value as the
// leader. Now status reports the key (with the command that removes it) while it exists, the
// first replica it blocks removes it and says so at error level, a replica leads again, and the
// slots keep running.
func (s *suite) leaselessKey(t *testing.T) {
	w := workload{schedule: "@every 2s", every: 2 * time.Second, clients: 3, delay: 100 * time.Millisecond}
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.startAll()
	first := d.waitLeader(0, 30*time.Second)
	testenv.Eventually(d.t, 30*time.Second, poll, "every replica to queue as a candidate", func() bool { return len(d.candidateKeys()) == len(nodes) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fake := d.prefix + "/0fake"
	put, err := d.etcd.cli.Put(ctx, fake, "x")
	if err != nil {
		t.Fatalf("put %s: %v", fake, err)
	}
	tl := newTimeline(t, "LeaselessKey")
	tl.start(time.Now(), fmt.Sprintf("lease-less key %s put at revision %d; %s leads, token %d", fake, put.Header.Revision, first.node, first.token))

	// Behind every candidate, it blocks nobody yet: status reports it and the leader stays.
	var st statusDoc
	testenv.Eventually(d.t, 10*time.Second, poll, "status to report the lease-less key", func() bool {
		st = d.status()
		return len(st.Leaseless) == 1 && st.Leaseless[0].Key == fake
	})
	if want := "etcdctl del " + fake; st.Leaseless[0].Remove != want {
		t.Errorf("status gives %q to remove the key, want %q", st.Leaseless[0].Remove, want)
	}
	if st.Leader == nil || st.Leader.Token != first.token {
		t.Errorf("status leader %+v while the lease-less key is last in line, want %s (token %d)", st.Leader, first.node, first.token)
	}
	tl.mark(time.Now(), "status reports the key")

	keys := d.candidateKeys()
	txn := make([]clientv3.Op, 0, len(keys))
	for _, k := range keys {
		txn = append(txn, clientv3.OpDelete(k))
	}
	if _, err := d.etcd.cli.Txn(ctx).Then(txn...).Commit(); err != nil {
		t.Fatalf("delete the candidate keys: %v", err)
	}
	delAt := time.Now()
	tl.mark(delAt, "the %d candidate keys deleted, the leader's included", len(keys))

	next := d.waitLeader(put.Header.Revision, 10*ttl)
	tl.mark(next.won, "%s wins, token %d", next.node, next.token)
	testenv.Eventually(d.t, 10*time.Second, poll, "the lease-less key to be gone", func() bool {
		resp, err := d.etcd.cli.Get(ctx, fake, clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	})
	var removedBy string
	for _, n := range nodes {
		b, _ := os.ReadFile(d.replicas[n].log)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"level":"error"`) && strings.Contains(line, "removed a lease-less key") && strings.Contains(line, fake) {
				removedBy = n
			}
		}
	}
	if removedBy == "" {
		t.Errorf("no replica logged the removal of %s at error level", fake)
	}
	tl.figure("removed_by", removedBy)
	tl.figure("takeover_ms", ms(next.won.Sub(delAt)))

	// Slots keep running under the new term.
	run := d.waitRunStarted(invoicesJob, w.nextSlot(next.won), 30*time.Second)
	fin := d.waitFinished(invoicesJob, run.slot, 30*time.Second)
	if fin.Status != "succeeded" || fin.Token < next.token {
		t.Errorf("slot %s after the fault: %s under token %d, want succeeded under %d or later", stamp(run.slot), fin.Status, fin.Token, next.token)
	}
	if st := d.status(); len(st.Leaseless) != 0 || st.Leader == nil || st.Leader.Node == "x" {
		t.Errorf("status after the removal: leader %+v, lease-less keys %+v; want a replica and none", st.Leader, st.Leaseless)
	}
	snap := d.check(invoicesJob, w.clients)
	succeeded := 0
	for slot, r := range snap.slotRuns(invoicesJob) {
		if slot.After(delAt) && r.Status == "succeeded" {
			succeeded++
		}
	}
	tl.figure("slots_succeeded_after_fault", succeeded)
	tl.print()
	if succeeded == 0 {
		t.Errorf("no slot after the fault succeeded")
	}
}

// candidateKeys returns the keys under the election prefix that are bound to a lease.
func (d *deployment) candidateKeys() []string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := d.etcd.cli.Get(ctx, d.prefix+"/", clientv3.WithPrefix())
	if err != nil {
		d.t.Fatalf("read the candidate keys: %v", err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		if kv.Lease != 0 {
			out = append(out, string(kv.Key))
		}
	}
	return out
}
