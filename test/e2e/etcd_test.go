package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"scheduler/internal/testenv"
)

// etcd timing of the members the suite starts: etcd's production defaults (100 ms heartbeat,
// 1 s election timeout), so that an etcd leader election after a member is killed takes as long
// as it would in production, and the server's minimum lease TTL is 2 s, the suite's TTL.
const (
	etcdTickMs     = 100
	etcdElectionMs = 1000
)

// etcdCluster is the etcd the replicas elect through: three member processes started by the
// suite, which scenarios may kill and restart, or an external cluster (E2E_ETCD_ENDPOINTS),
// which they may not.
type etcdCluster struct {
	t         *testing.T
	bin       string
	members   []*etcdMember // nil for an external cluster
	endpoints []string      // host:port of each member
	cli       *clientv3.Client
}

// etcdMember is one member process and the command line that starts it again.
type etcdMember struct {
	name string
	args []string
	log  string
	proc *process
}

// startEtcd starts a three-member cluster on free loopback ports, retrying on fresh ports when
// a picked port was taken meanwhile, or connects to the external cluster of env.
func startEtcd(t *testing.T, bin string, env externalEnv) *etcdCluster {
	t.Helper()
	if len(env.etcd) > 0 {
		c := &etcdCluster{t: t, endpoints: env.etcd}
		c.connect()
		return c
	}
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		c := &etcdCluster{t: t, bin: bin}
		if lastErr = c.start(filepath.Join(t.TempDir(), fmt.Sprintf("etcd%d", attempt))); lastErr == nil {
			c.connect()
			return c
		}
		for _, m := range c.members {
			if m.proc != nil {
				m.proc.kill()
			}
		}
	}
	t.Fatalf("start etcd cluster: %v", lastErr)
	return nil
}

// start starts the members and waits until each serves a cluster with a leader.
func (c *etcdCluster) start(dir string) error {
	ports, err := testenv.FreePorts(6)
	if err != nil {
		return err
	}
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("m%d=http://%s", i, ports[2*i+1]))
	}
	for i := range 3 {
		name := fmt.Sprintf("m%d", i)
		m := &etcdMember{name: name, log: filepath.Join(dir, name+".log"), args: []string{
			"-name", name, "-data-dir", filepath.Join(dir, name),
			"-listen-client", "http://" + ports[2*i], "-listen-peer", "http://" + ports[2*i+1],
			"-initial-cluster", strings.Join(peers, ","),
			"-tick-ms", fmt.Sprint(etcdTickMs), "-election-ms", fmt.Sprint(etcdElectionMs),
		}}
		c.endpoints = append(c.endpoints, ports[2*i])
		c.members = append(c.members, m)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, m := range c.members {
		m.proc = startProcess(c.t, "etcd "+m.name, m.log, c.bin, m.args...)
	}
	for i := range c.members {
		if err := c.waitReady(i, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// connect opens the suite's own client to every member, for looking up the etcd leader and
// the election keys; it is closed in t.Cleanup.
func (c *etcdCluster) connect() {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: c.endpoints, DialTimeout: 2 * time.Second,
		DialKeepAliveTime: 5 * time.Second, DialKeepAliveTimeout: 2 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		c.t.Fatalf("etcd client for %v: %v", c.endpoints, err)
	}
	c.cli = cli
	c.t.Cleanup(func() { _ = cli.Close() })
}

// waitReady waits until member i answers and sees a raft leader.
func (c *etcdCluster) waitReady(i int, within time.Duration) error {
	m := c.members[i]
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if m.proc.exited() {
			return fmt.Errorf("etcd member %s exited during start-up:\n%s", m.name, m.proc.tail(20))
		}
		if lead, _, err := c.status(i); err == nil && lead != 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("etcd member %s not ready after %v:\n%s", m.name, within, m.proc.tail(20))
}

// status asks member i for its raft leader and its own ID.
func (c *etcdCluster) status(i int) (leader, id uint64, err error) {
	cli := c.cli
	if cli == nil { // during start-up, before connect
		cli, err = clientv3.New(clientv3.Config{Endpoints: []string{c.endpoints[i]}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			return 0, 0, err
		}
		defer cli.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := cli.Status(ctx, c.endpoints[i])
	if err != nil {
		return 0, 0, err
	}
	return resp.Leader, resp.Header.MemberId, nil
}

// leaderIndex returns the member a majority of running members reports as raft leader,
// waiting up to 15 s for one.
func (c *etcdCluster) leaderIndex() int {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		votes := map[uint64]int{}
		ids := map[uint64]int{}
		for i, m := range c.members {
			if m.proc.exited() {
				continue
			}
			lead, id, err := c.status(i)
			if err != nil {
				continue
			}
			votes[lead]++
			ids[id] = i
		}
		for lead, n := range votes {
			if i, ok := ids[lead]; ok && lead != 0 && n >= 2 {
				return i
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatal("no etcd leader after 15s")
	return -1
}

// kill crashes member i (SIGKILL to its process group).
func (c *etcdCluster) kill(i int) {
	c.t.Helper()
	m := c.members[i]
	if err := m.proc.signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	if _, err := m.proc.wait(10 * time.Second); err != nil {
		c.t.Fatal(err)
	}
}

// restart starts killed member i again on its data directory and ports; wait with waitReady.
func (c *etcdCluster) restart(i int) {
	c.t.Helper()
	m := c.members[i]
	if !m.proc.exited() {
		c.t.Fatalf("etcd member %s is running", m.name)
	}
	m.proc = startProcess(c.t, "etcd "+m.name, m.log, c.bin, m.args...)
}
