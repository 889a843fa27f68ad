// Package failover measures leadership changes of real `scheduler run` processes against a real
// etcd and Postgres: the time from `kill -9` of the leader to the new leader's first run of a
// slot due after the kill; the same after SIGTERM (graceful handover); and whether a leader cut
// off from etcd steps down before etcd expires its lease.
//
//	go test -run '^$' -bench Failover -benchtime 20x -timeout 30m ./bench/failover/
//
// etcd is one embedded member with 10 ms ticks (testenv.MustEtcd), Postgres a dedicated cluster
// with default settings, the lease TTL 2 s. Three replicas run one job due every second
// ("* * * * * *", /bin/true, misfire once). Times come from the replicas' own log lines
// ("campaign won", "run started", "leadership ended"), on the same clock as the benchmark's.
// b.N is the number of trials.
package failover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const ttl = 2 * time.Second

func BenchmarkFailover(b *testing.B) {
	bin := testenv.MustBuild(b, "scheduler/cmd/scheduler")
	etcd := testenv.MustEtcd(b)
	pg := testenv.MustPostgres(b)
	b.Run("kill-9", func(b *testing.B) { handover(b, bin, etcd, pg.CreateDatabase(b), syscall.SIGKILL) })
	b.Run("sigterm", func(b *testing.B) { handover(b, bin, etcd, pg.CreateDatabase(b), syscall.SIGTERM) })
	b.Run("cut-off", func(b *testing.B) { cutOff(b, bin, etcd, pg.CreateDatabase(b)) })
}

// handover kills or stops the leader of three replicas b.N times and reports how long the next
// leader took to win, and to start a run of a slot due after the signal.
func handover(b *testing.B, bin string, etcd *testenv.Etcd, dsn string, sig syscall.Signal) {
	c := newCluster(b, bin)
	names := []string{"n1", "n2", "n3"}
	prefix := "/bench/" + strings.ToLower(sig.String())
	prefix = strings.ReplaceAll(prefix, " ", "-")
	configs := map[string]string{}
	for _, n := range names {
		configs[n] = c.config(n, etcd.Endpoint(0), dsn, prefix, "beat", ttl)
	}
	trials(b, c, names, configs, sig)
}

// trials runs the replicas of configs, migrating with the first, and kills or stops the leader
// b.N times, reporting how long the next leader took to win, and to start a run of a slot due
// after the signal.
func trials(b *testing.B, c *cluster, names []string, configs map[string]string, sig syscall.Signal) {
	c.migrate(configs[names[0]])
	for _, n := range names {
		c.start(n, configs[n])
	}
	var won, ready, ran, late []time.Duration
	for range b.N {
		// The leader, once it runs slots.
		since := time.Now()
		start := c.await("a run", 30*time.Second, func() (logLine, bool) {
			return c.first(names, "run started", since, func(logLine) bool { return true })
		})
		leader, token := start.Node, start.Token
		// At a random point of the second: the slots, the lease renewals and etcd's expiry scan
		// each have a phase of their own, and a signal locked to one of them would bias the rest.
		time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
		at := c.signal(leader, sig)
		w := c.await("a new leader", 30*time.Second, func() (logLine, bool) {
			return c.first(names, "campaign won", at, func(l logLine) bool { return l.Token > token })
		})
		r := c.await("a run of the new leader", 30*time.Second, func() (logLine, bool) {
			return c.first(names, "run started", at, func(l logLine) bool { return l.Token > token && l.Slot.After(at) })
		})
		ld := c.await("the new leader leading", 30*time.Second, func() (logLine, bool) {
			return c.first(names, "leading", at, func(l logLine) bool { return l.Name == "runner" && l.Token > token })
		})
		won = append(won, w.TS.Sub(at))
		ready = append(ready, ld.TS.Sub(at))
		ran = append(ran, r.TS.Sub(at))
		late = append(late, r.TS.Sub(r.Slot))
		c.wait(leader)
		restarted := time.Now()
		c.start(leader, configs[leader])
		c.await("the restarted replica campaigning", 30*time.Second, func() (logLine, bool) {
			return c.first([]string{leader}, "campaigning", restarted, func(logLine) bool { return true })
		})
	}
	b.StopTimer()
	reportDurations(b, "won", won)
	reportDurations(b, "ready", ready)
	reportDurations(b, "ran", ran)
	reportDurations(b, "slot-late", late)
	b.Logf("signal %s, %d trials: new leader won after %s; took over (fences, catch-up) after %s; "+
		"started its first slot due after the signal %s after the signal, %s after that slot",
		sig, len(ran), summary(won), summary(ready), summary(ran), summary(late))
}

// cutOff runs two replicas, A reaching etcd through a proxy; b.N times it makes A the leader,
// pauses the proxy, and compares when A ends its term with when etcd deletes A's election key
// (seen by a watch on a direct connection) and when B wins.
func cutOff(b *testing.B, bin string, etcd *testenv.Etcd, dsn string) {
	c := newCluster(b, bin)
	proxy := testenv.MustProxy(b, etcd.Endpoint(0))
	prefix := "/bench/cutoff"
	cfgA := c.config("a", proxy.Addr(), dsn, prefix, "cut", ttl)
	cfgB := c.config("b", etcd.Endpoint(0), dsn, prefix, "cut", ttl)
	c.migrate(cfgA)
	cli := etcd.Client(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deletes := make(chan time.Time, 64)
	go func() {
		for wr := range cli.Watch(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithFilterPut()) {
			now := time.Now()
			for range wr.Events {
				select {
				case deletes <- now:
				default:
				}
			}
		}
	}()

	since := time.Now()
	c.start("a", cfgA)
	c.await("a leading", 30*time.Second, func() (logLine, bool) {
		return c.first([]string{"a"}, "campaign won", since, func(logLine) bool { return true })
	})
	c.start("b", cfgB)
	var (
		before          int
		margin, elected []time.Duration
	)
	for range b.N {
		since := time.Now()
		waitCandidates(b, cli, prefix, 2)
		c.await("a running a slot", 30*time.Second, func() (logLine, bool) {
			return c.first([]string{"a"}, "run started", since, func(logLine) bool { return true })
		})
		for len(deletes) > 0 {
			<-deletes
		}
		paused := time.Now()
		proxy.Pause()
		ended := c.await("a stepping down", 30*time.Second, func() (logLine, bool) {
			return c.first([]string{"a"}, "leadership ended", paused, func(logLine) bool { return true })
		})
		var deleted time.Time
		select {
		case deleted = <-deletes:
		case <-time.After(30 * time.Second):
			b.Fatal("etcd never deleted a's key")
		}
		won := c.await("b leading", 30*time.Second, func() (logLine, bool) {
			return c.first([]string{"b"}, "campaign won", paused, func(logLine) bool { return true })
		})
		if ended.TS.Before(deleted) {
			before++
		}
		margin = append(margin, deleted.Sub(ended.TS))
		elected = append(elected, won.TS.Sub(ended.TS))
		proxy.Resume()
		// Hand the leadership back to a: stop b gracefully, then start it again.
		waitCandidates(b, cli, prefix, 2)
		stopped := c.signal("b", syscall.SIGTERM)
		c.await("a leading again", 30*time.Second, func() (logLine, bool) {
			return c.first([]string{"a"}, "campaign won", stopped, func(logLine) bool { return true })
		})
		c.wait("b")
		c.start("b", cfgB)
	}
	b.StopTimer()
	b.ReportMetric(float64(before), "stepped-down-first")
	b.ReportMetric(float64(b.N), "trials")
	reportDurations(b, "margin", margin)
	b.Logf("cut off %d times: stepped down before etcd deleted its key in %d; margin (expiry - step-down) %s; B won after the step-down by %s",
		b.N, before, summary(margin), summary(elected))
}

// waitCandidates waits until n replicas campaign under prefix.
func waitCandidates(b *testing.B, cli *clientv3.Client, prefix string, n int) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err == nil && resp.Count >= int64(n) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("fewer than %d candidates under %s", n, prefix)
}

func reportDurations(b *testing.B, name string, ds []time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	b.ReportMetric(ms(pct(s, 0.5)), name+"-p50-ms")
	b.ReportMetric(ms(pct(s, 0.99)), name+"-p99-ms")
	b.ReportMetric(0, "ns/op")
}

func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return "none"
	}
	return fmt.Sprintf("min %.0f ms, p50 %.0f ms, p99 %.0f ms, max %.0f ms", ms(s[0]), ms(pct(s, 0.5)), ms(pct(s, 0.99)), ms(s[len(s)-1]))
}

func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
