package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// backendNames are the election backends other than etcd, each a dimension of the core
// scenarios.
var backendNames = []string{"postgres", "zookeeper", "redis"}

// backends runs the core scenarios with every election backend other than etcd, with no etcd
// at all, checked from the data as with etcd: a frozen leader, a crashed leader, a rolling
// restart, the leader cut off from its coordinator, and for redis the lock's state lost in the
// middle of a term (FLUSHALL, a restart without persistence). The randomized scenarios run once
// per backend, to keep the suite's wall time within its budget.
func (s *suite) backends(t *testing.T) {
	for _, b := range backendNames {
		t.Run(b, func(t *testing.T) {
			bs := *s
			bs.backend, bs.reps = b, 1
			t.Run("FrozenLeader", bs.frozenLeader)
			t.Run("CrashedLeader", bs.crashedLeader)
			t.Run("RollingRestart", bs.rollingRestart)
			t.Run("LeaderCutOffFromCoordinator", bs.cutOffFromCoordinator)
			if b == "redis" {
				t.Run("FlushAll", func(t *testing.T) { bs.redisLost(t, "FlushAll") })
				t.Run("RestartWithoutPersistence", func(t *testing.T) { bs.redisLost(t, "RestartWithoutPersistence") })
			}
		})
	}
}

// coordinator is a deployment's election server when the backend is not etcd: ZooKeeper or
// Redis, started for the deployment; nothing for postgres, whose lease lives in the store.
type coordinator struct {
	backend string
	addr    string // zookeeper or redis; "" for postgres
	redis   *testenv.Redis
}

// startCoordinator starts the server of backend for one deployment.
func startCoordinator(t *testing.T, backend string) coordinator {
	t.Helper()
	c := coordinator{backend: backend}
	switch backend {
	case "zookeeper":
		c.addr = testenv.MustZooKeeper(t).Addr()
	case "redis":
		c.redis = testenv.MustRedis(t)
		c.addr = c.redis.Addr()
	case "postgres":
	default:
		t.Fatalf("unknown election backend %q", backend)
	}
	return c
}

// endpoints are the servers each replica reaches through a proxy of its own: the etcd members,
// or the backend's server.
func (d *deployment) endpoints() []string {
	if d.etcd != nil {
		return d.etcd.endpoints
	}
	if d.coord.addr != "" {
		return []string{d.coord.addr}
	}
	return nil
}

// coordProxy returns the proxy between r and its election backend's server, when that is not
// etcd: the one deploy made for the backend's server (which is then no etcd proxy), or the
// store's for postgres.
func (d *deployment) coordProxy(r *replica) *testenv.Proxy {
	switch {
	case d.etcd != nil:
		return nil
	case d.coord.addr == "":
		return r.pg
	}
	p := r.etcd[0]
	r.etcd = nil
	return p
}

// electionSection is the configuration of the election: etcd's endpoints and the prefix, or
// the backend's keys. endpoints are what the process reaches the servers at.
func (d *deployment) electionSection(endpoints []string) string {
	switch d.s.backend {
	case "":
		return fmt.Sprintf("etcd: {endpoints: [%s], dial_timeout: 2s}\nelection: {prefix: %s, ttl: %s}",
			strings.Join(endpoints, ", "), d.prefix, ttl)
	case "zookeeper":
		return fmt.Sprintf("election: {backend: zookeeper}\nzookeeper: {servers: [%s], session_timeout: %s, path: %s}",
			strings.Join(endpoints, ", "), ttl, d.prefix)
	case "redis":
		return fmt.Sprintf("election: {backend: redis, ttl: %s}\nredis: {addr: %q, key: %q}", ttl, endpoints[0], "e2e:leader")
	}
	return fmt.Sprintf("election: {backend: %s, ttl: %s}", d.s.backend, ttl)
}

// cutOffFromCoordinator pauses every link between the leader and its election backend's server
// in the middle of a run (for postgres, the store is that server). The leader steps down on its
// own deadline, before the backend can grant the term to anyone else; a follower takes over
// with a higher token and finishes the slot, once; the old leader's writes held by the pause
// land after the takeover and are refused, and it rejoins as a follower when the link heals.
func (s *suite) cutOffFromCoordinator(t *testing.T) {
	w := seedWorkload
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.startAll()
	d.waitLeader(0, 30*time.Second)
	run, old := d.runUnderLeader(time.Now())
	r := d.replicas[old.node]
	tl := newTimeline(t, "LeaderCutOffFromCoordinator "+s.backend)
	sleepUntil(run.at.Add(time.Second))
	r.coord.Pause()
	cutAt := time.Now()
	tl.start(cutAt, fmt.Sprintf("%s (leader, token %d) cut off from its %s server, %d ms into the run of slot %s",
		old.node, old.token, s.backend, ms(cutAt.Sub(run.at)), stamp(run.slot)))
	next := d.waitLeader(old.token, 4*ttl+10*time.Second)
	stepDown, _ := d.termOf(old.token)
	tl.mark(stepDown.ended, "%s ends its term (%s)", old.node, stepDown.reason)
	tl.mark(next.won, "%s wins, token %d", next.node, next.token)
	tl.figure("stepdown_ms", ms(stepDown.ended.Sub(cutAt)))
	tl.figure("takeover_ms", ms(next.won.Sub(cutAt)))
	tl.figure("tokens", fmt.Sprintf("%d->%d", old.token, next.token))
	switch {
	case stepDown.ended.IsZero():
		t.Errorf("%s never ended its term", old.node)
	case !stepDown.ended.Before(next.won):
		t.Errorf("%s ended its term at %s, after %s won at %s", old.node, stamp(stepDown.ended), next.node, stamp(next.won))
	}
	fin := d.waitFinished(invoicesJob, run.slot, 40*time.Second)
	r.coord.Resume()
	healAt := time.Now()
	tl.mark(healAt, "%s's link heals", old.node)
	testenv.Eventually(t, 30*time.Second, poll, old.node+" to rejoin as a follower", func() bool {
		st := d.status()
		return st.Leader != nil && st.Leader.Token >= next.token && st.hasReplica(old.node)
	})
	if fin.Status != "succeeded" || fin.Token != next.token || fin.Attempt < 2 {
		t.Errorf("slot %s: %s under token %d, attempt %d; want succeeded under the new token %d, taken over",
			stamp(run.slot), fin.Status, fin.Token, fin.Attempt, next.token)
	}
	tl.figure("writes_fenced_wire", r.pg.StaleErrors())
	tl.print()
	d.check(invoicesJob, w.clients)
}

// redisLost empties the Redis server in the middle of a run: FLUSHALL, or a restart of a server
// without persistence. The lock and the token counter are gone; the leader's next renewal finds
// the lock gone and it steps down, and the next term's token is taken above the store's highest
// fence, so it is not refused. Every slot still runs once and no stale write commits.
func (s *suite) redisLost(t *testing.T, how string) {
	w := seedWorkload
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.startAll()
	d.waitLeader(0, 30*time.Second)
	run, old := d.runUnderLeader(time.Now())
	tl := newTimeline(t, how+" redis")
	sleepUntil(run.at.Add(time.Second))
	lostAt := time.Now()
	if how == "FlushAll" {
		flushAll(t, d.coord.addr)
	} else {
		d.coord.redis.Restart(t)
	}
	tl.start(lostAt, fmt.Sprintf("%s while %s leads (token %d), %d ms into the run of slot %s", how, old.node, old.token, ms(lostAt.Sub(run.at)), stamp(run.slot)))
	next := d.waitLeader(old.token, 4*ttl+10*time.Second)
	ended, _ := d.termOf(old.token)
	tl.mark(ended.ended, "%s ends its term (%s)", old.node, ended.reason)
	tl.mark(next.won, "%s wins, token %d", next.node, next.token)
	tl.figure("takeover_ms", ms(next.won.Sub(lostAt)))
	tl.figure("tokens", fmt.Sprintf("%d->%d", old.token, next.token))
	d.waitFinished(invoicesJob, run.slot, 40*time.Second)
	// The slot after runs under the new term: the backend did not wedge below the fence.
	after := d.waitRunStarted(invoicesJob, run.slot, 40*time.Second)
	fin := d.waitFinished(invoicesJob, after.slot, 40*time.Second)
	if fin.Status != "succeeded" || fin.Token < next.token {
		t.Errorf("slot %s after the loss: %s under token %d; want succeeded under token %d or later", stamp(after.slot), fin.Status, fin.Token, next.token)
	}
	tl.print()
	d.check(invoicesJob, w.clients)
}

// flushAll sends FLUSHALL to the Redis server at addr.
func flushAll(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial redis: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("FLUSHALL\r\n")); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "+OK") {
		t.Fatalf("FLUSHALL answered %q, %v", buf[:n], err)
	}
}

// queuedCandidates reports whether the backend queues candidates in the order they arrived, so
// that a replica restarted after a rolling step waits behind the others: etcd (create revisions)
// and ZooKeeper (sequence numbers) do; the postgres lease and the redis lock go to whichever
// follower asks first, so the restarted replica may lead again and another never be stopped.
func (s *suite) queuedCandidates() bool { return s.backend == "" || s.backend == "zookeeper" }
