package election

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"scheduler/internal/testenv"
)

// benchNode is a campaigner run by a benchmark; elected receives the time
// each of its terms started.
type benchNode struct {
	cancel  context.CancelFunc
	done    chan struct{}
	elected chan time.Time
}

func startBenchNode(b *testing.B, cli *clientv3.Client, prefix, name string) *benchNode {
	b.Helper()
	c, err := New(cli, Config{Prefix: prefix, Node: name, TTL: testTTL}, zap.NewNop())
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &benchNode{cancel: cancel, done: make(chan struct{}), elected: make(chan time.Time, 16)}
	go func() {
		defer close(n.done)
		_ = c.Run(ctx, func(ctx context.Context, _ Term) error {
			n.elected <- time.Now()
			<-ctx.Done()
			return nil
		})
	}()
	return n
}

func (n *benchNode) stop() {
	n.cancel()
	<-n.done
}

// waitElected returns when n's next term started, or fails b after
// testTimeout.
func (n *benchNode) waitElected(b *testing.B) time.Time {
	b.Helper()
	select {
	case t := <-n.elected:
		return t
	case <-time.After(testTimeout):
		b.Fatalf("not elected within %v", testTimeout)
		return time.Time{}
	}
}

// waitQueued polls until name has a candidate key under prefix.
func waitQueued(b *testing.B, cli *clientv3.Client, prefix, name string) {
	b.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		resp, err := cli.Get(context.Background(), prefix+"/", clientv3.WithPrefix())
		if err != nil {
			b.Fatalf("get: %v", err)
		}
		for _, kv := range resp.Kvs {
			if string(kv.Value) == name {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("%s never queued under %s", name, prefix)
}

// BenchmarkCampaigner reports, against a single embedded etcd member with a
// 2 s TTL: the time from Run to the first term when nobody else campaigns,
// the handover time from a leader's shutdown (resign) to the next term, and
// the takeover time after a leader is cut off from etcd for good (a crash,
// for etcd), as a multiple of the TTL.
func BenchmarkCampaigner(b *testing.B) {
	etcd := testenv.MustEtcd(b)
	cli := etcd.Client(b)

	b.Run("Uncontested", func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			n := startBenchNode(b, cli, fmt.Sprintf("/bench/uncontested/%d", i), "a")
			total += n.waitElected(b).Sub(start)
			n.stop()
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/campaign")
	})

	b.Run("HandoverAfterResign", func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			prefix := fmt.Sprintf("/bench/handover/%d", i)
			a := startBenchNode(b, cli, prefix, "a")
			a.waitElected(b)
			f := startBenchNode(b, cli, prefix, "b")
			waitQueued(b, cli, prefix, "b")
			// etcd syncs a watch that starts at a past revision, like the
			// one Campaign waits on, up to 100 ms after it was created;
			// a follower that has waited that long is the usual case.
			time.Sleep(200 * time.Millisecond)
			start := time.Now()
			a.cancel()
			total += f.waitElected(b).Sub(start)
			<-a.done
			f.stop()
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/handover")
		b.ReportMetric(total.Seconds()/float64(b.N)/testTTL.Seconds(), "handover/TTL")
	})

	b.Run("TakeoverAfterCrash", func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			prefix := fmt.Sprintf("/bench/takeover/%d", i)
			proxy := testenv.MustProxy(b, etcd.Endpoint(0))
			pcli, err := clientv3.New(testenv.ClientConfig(proxy.Addr()))
			if err != nil {
				b.Fatalf("client via proxy: %v", err)
			}
			a := startBenchNode(b, pcli, prefix, "a")
			a.waitElected(b)
			f := startBenchNode(b, cli, prefix, "b")
			waitQueued(b, cli, prefix, "b")
			start := time.Now()
			proxy.Cut()
			total += f.waitElected(b).Sub(start)
			a.stop()
			f.stop()
			_ = pcli.Close()
		}
		b.ReportMetric(total.Seconds()/float64(b.N)/testTTL.Seconds(), "takeover/TTL")
	})
}
