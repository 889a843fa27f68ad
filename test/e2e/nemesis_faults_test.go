package e2e

import (
	"fmt"
	"syscall"
	"time"

	"scheduler/internal/testenv"
)

// faultKind is one kind of fault the nemesis injects, drawn by weight; plan returns the fault
// for a draw, or nil when it does not apply now (no leader to aim at).
type faultKind struct {
	name   string
	weight int
	plan   func(n *nemesis, dr draw) *fault
}

// fault is one planned fault: what it holds (a replica, a link, a server: no other fault may
// touch them meanwhile), what it does at once and its later steps, relative to the injection.
type fault struct {
	what   string
	holds  []string
	inject func()
	steps  []faultStep
}

type faultStep struct {
	after time.Duration
	what  string
	do    func() time.Duration
}

// faultKinds are the kinds that apply to the deployment: the faults of every backend, those of
// the etcd cluster when the suite runs it, those of the backend's own server, and the Postgres
// restart when the suite runs Postgres. Calm draws inject nothing, so the system also gets
// stretches with fewer faults in force.
func (n *nemesis) faultKinds() []faultKind {
	ks := []faultKind{
		{"calm", 3, nil},
		{"freeze", 4, (*nemesis).planFreeze},
		{"kill", 3, (*nemesis).planKill},
		{"term", 2, (*nemesis).planTerm},
		{"cut-coordinator", 3, (*nemesis).planCutCoordinator},
		{"cut-store", 3, (*nemesis).planCutStore},
		{"slow-link", 2, (*nemesis).planSlowLink},
		{"outcome-write-lost", 2, (*nemesis).planOutcomeLost},
		{"receiver-refuses", 2, (*nemesis).planReceiverRefuses},
		{"job-role", 2, (*nemesis).planJobRole},
	}
	if n.d.s.pg.own != nil {
		w := 1
		if n.backend == "postgres" {
			w = 2 // the store is the coordinator too
		}
		ks = append(ks, faultKind{"postgres-restart", w, (*nemesis).planPostgresRestart})
	} else {
		n.mark("external Postgres: no Postgres restarts")
	}
	switch {
	case n.d.etcd != nil && len(n.d.etcd.members) > 0:
		ks = append(ks, faultKind{"etcd-member", 3, (*nemesis).planEtcdMember}, faultKind{"quorum-lost", 1, (*nemesis).planQuorumLost})
	case n.d.etcd != nil:
		n.mark("external etcd: no member faults")
	case n.backend == "redis" || n.backend == "zookeeper":
		ks = append(ks, faultKind{"coordinator-lost", 2, (*nemesis).planCoordinatorLost})
	}
	for i := range ks {
		if ks[i].plan == nil {
			ks[i].plan = func(*nemesis, draw) *fault { return nil }
		}
	}
	return ks
}

// aim returns the replica a fault aims at and how the timeline names it.
func (n *nemesis) aim(dr draw) (string, string) {
	node := n.target(dr)
	if l, ok := n.leader(); ok && l.node == node {
		return node, fmt.Sprintf("%s (leader, token %d)", node, l.token)
	}
	return node, node
}

func (n *nemesis) proc(node string) *process { return n.d.replicas[node].proc }

func (n *nemesis) planFreeze(dr draw) *fault {
	node, name := n.aim(dr)
	hold := dr.span(ttl/2, 3*ttl)
	return &fault{
		what:  fmt.Sprintf("SIGSTOP %s for %d ms", name, ms(hold)),
		holds: []string{"replica:" + node},
		inject: func() {
			if err := n.proc(node).signal(syscall.SIGSTOP); err != nil {
				n.mark("%v", err)
				return
			}
			n.replicaDown(node, false)
		},
		steps: []faultStep{{after: hold, do: func() time.Duration {
			if err := n.proc(node).signal(syscall.SIGCONT); err != nil {
				n.mark("%v", err)
			}
			n.replicaUp(node)
			n.mark("SIGCONT %s", node)
			return 0
		}}},
	}
}

func (n *nemesis) planKill(dr draw) *fault {
	node, name := n.aim(dr)
	hold := dr.span(300*time.Millisecond, 4*time.Second)
	return &fault{
		what:  fmt.Sprintf("SIGKILL %s, restarted after %d ms", name, ms(hold)),
		holds: []string{"replica:" + node},
		inject: func() {
			n.proc(node).kill()
			n.replicaDown(node, true)
		},
		steps: []faultStep{{after: hold, do: func() time.Duration {
			n.start(node)
			n.mark("%s restarted", node)
			return 0
		}}},
	}
}

// planTerm stops a replica with SIGTERM and restarts it once it has exited; a replica still
// running past its shutdown grace and a margin is a violation (and is killed).
func (n *nemesis) planTerm(dr draw) *fault {
	node, name := n.aim(dr)
	wait := dr.span(0, 2*time.Second)
	var sent time.Time
	exited := false
	return &fault{
		what:  fmt.Sprintf("SIGTERM %s, restarted %d ms after it exits", name, ms(wait)),
		holds: []string{"replica:" + node},
		inject: func() {
			sent = time.Now()
			if err := n.proc(node).signal(syscall.SIGTERM); err != nil {
				n.mark("%v", err)
			}
		},
		steps: []faultStep{{after: 100 * time.Millisecond, do: func() time.Duration {
			p := n.proc(node)
			switch {
			case !exited && !p.exited():
				if time.Since(sent) > n.d.grace+10*time.Second {
					n.violation(fmt.Sprintf("%s still running %v after SIGTERM (shutdown_grace %v)", node, time.Since(sent).Round(time.Millisecond), n.d.grace))
					p.kill()
				}
				return 100 * time.Millisecond
			case !exited:
				exited = true
				n.replicaDown(node, true)
				n.mark("%s exits, code %d, %d ms after SIGTERM", node, p.cmd.ProcessState.ExitCode(), ms(time.Since(sent)))
				return max(wait, time.Millisecond)
			}
			n.start(node)
			n.mark("%s restarted", node)
			return 0
		}}},
	}
}

// coordinatorLink returns the proxies between node and its election backend's server, and the
// name of the link they make (for postgres, the store's link: the same proxy).
func (n *nemesis) coordinatorLink(node string) ([]*testenv.Proxy, string) {
	r := n.d.replicas[node]
	switch {
	case r.etcd != nil:
		return r.etcd, "coordinator:" + node
	case n.backend == "postgres":
		return []*testenv.Proxy{r.pg}, "store:" + node
	}
	return []*testenv.Proxy{r.coord}, "coordinator:" + node
}

// cutLink pauses (variant even: the bytes are held and delivered later) or cuts (odd: every
// connection closed, new ones refused) the proxies for hold.
func (n *nemesis) cutLink(proxies []*testenv.Proxy, link, name string, variant int, hold time.Duration) *fault {
	how, do := "paused", (*testenv.Proxy).Pause
	if variant%2 == 1 {
		how, do = "cut", (*testenv.Proxy).Cut
	}
	return &fault{
		what:  fmt.Sprintf("%s %s for %d ms", name, how, ms(hold)),
		holds: []string{link},
		inject: func() {
			for _, p := range proxies {
				do(p)
			}
		},
		steps: []faultStep{{after: hold, do: func() time.Duration {
			for _, p := range proxies {
				p.Resume()
			}
			n.mark("%s heals", name)
			return 0
		}}},
	}
}

func (n *nemesis) planCutCoordinator(dr draw) *fault {
	node, name := n.aim(dr)
	proxies, link := n.coordinatorLink(node)
	return n.cutLink(proxies, link, fmt.Sprintf("link of %s to its %s", name, n.backend), dr.variant, dr.span(ttl/2, 3*ttl))
}

func (n *nemesis) planCutStore(dr draw) *fault {
	node, name := n.aim(dr)
	return n.cutLink([]*testenv.Proxy{n.d.replicas[node].pg}, "store:"+node, "link of "+name+" to Postgres", dr.variant, dr.span(500*time.Millisecond, 5*time.Second))
}

// planSlowLink adds a latency each way to a replica's link to Postgres (variant even) or to its
// coordinator (odd) for a few seconds.
func (n *nemesis) planSlowLink(dr draw) *fault {
	node, name := n.aim(dr)
	proxies, link, to := []*testenv.Proxy{n.d.replicas[node].pg}, "store:"+node, "Postgres"
	if dr.variant%2 == 1 {
		proxies, link = n.coordinatorLink(node)
		to = n.backend
	}
	latency := 20*time.Millisecond + time.Duration(dr.length*float64(380*time.Millisecond))
	hold := dr.span(3*time.Second, 10*time.Second)
	return &fault{
		what:  fmt.Sprintf("link of %s to %s slowed by %d ms each way for %d ms", name, to, ms(latency), ms(hold)),
		holds: []string{link},
		inject: func() {
			for _, p := range proxies {
				p.Delay(latency)
			}
		},
		steps: []faultStep{{after: hold, do: func() time.Duration {
			for _, p := range proxies {
				p.Delay(0)
			}
			n.mark("link of %s to %s fast again", node, to)
			return 0
		}}},
	}
}

// planOutcomeLost cuts the leader off from Postgres just before the exec job's next run ends,
// so that the write of its outcome meets the cut.
func (n *nemesis) planOutcomeLost(dr draw) *fault {
	l, ok := n.leader()
	if !ok {
		return nil
	}
	now := time.Now()
	slot := now.UTC().Truncate(nemesisEvery).Add(nemesisEvery)
	cutAt := slot.Add(850 * time.Millisecond) // the job sleeps a second, then writes its mark
	hold := dr.span(2*time.Second, 5*time.Second)
	pg := n.d.replicas[l.node].pg
	return &fault{
		what:  fmt.Sprintf("leader %s (token %d) to be cut off from Postgres at %s for %d ms, as the %s run of slot %s ends", l.node, l.token, stamp(cutAt), ms(hold), markerJob, stamp(slot)),
		holds: []string{"store:" + l.node},
		steps: []faultStep{
			{after: cutAt.Sub(now), do: func() time.Duration {
				pg.Cut()
				n.mark("%s cut off from Postgres", l.node)
				return 0
			}},
			{after: cutAt.Sub(now) + hold, do: func() time.Duration {
				pg.Resume()
				n.mark("%s reaches Postgres again", l.node)
				return 0
			}},
		},
	}
}

// planPostgresRestart restarts Postgres (fast shutdown; variant even) or stops it for a few
// seconds (odd).
func (n *nemesis) planPostgresRestart(dr draw) *fault {
	pg := n.d.s.pg.own
	if dr.variant%2 == 0 {
		return &fault{
			what:   "restart Postgres (fast shutdown)",
			holds:  []string{"postgres"},
			inject: func() { pg.Restart(n.t) },
			steps: []faultStep{{after: time.Second, do: func() time.Duration {
				n.mark("Postgres restarted")
				return 0
			}}},
		}
	}
	down := dr.span(time.Second, 4*time.Second)
	return &fault{
		what:   fmt.Sprintf("stop Postgres for %d ms", ms(down)),
		holds:  []string{"postgres"},
		inject: func() { pg.Stop(n.t) },
		steps: []faultStep{{after: down, do: func() time.Duration {
			pg.Start(n.t)
			n.mark("Postgres started")
			return 0
		}}},
	}
}

// etcdLeader returns the member the running, unfrozen members name as raft leader, or -1.
func (n *nemesis) etcdLeader() int {
	c := n.d.etcd
	ids := map[uint64]int{}
	var lead uint64
	for i, m := range c.members {
		if n.member[i] != "" || m.proc.exited() {
			continue
		}
		l, id, err := c.status(i)
		if err != nil {
			continue
		}
		ids[id] = i
		if l != 0 {
			lead = l
		}
	}
	if i, ok := ids[lead]; ok {
		return i
	}
	return -1
}

// memberFault stops (SIGSTOP, variant below 2), kills and restarts later (below 4) or kills and
// restarts at once (the rest) the etcd members.
func (n *nemesis) memberFault(members []int, variant int, hold time.Duration, what string) *fault {
	c := n.d.etcd
	var holds []string
	for _, i := range members {
		holds = append(holds, fmt.Sprintf("etcd:m%d", i))
	}
	how := "SIGSTOP"
	switch {
	case variant >= 4:
		how, hold = "SIGKILL and restart", 100*time.Millisecond
	case variant >= 2:
		how = "SIGKILL"
	}
	return &fault{
		what:  fmt.Sprintf("%s %s, for %d ms", how, what, hold.Milliseconds()),
		holds: holds,
		inject: func() {
			for _, i := range members {
				if variant < 2 {
					if err := c.members[i].proc.signal(syscall.SIGSTOP); err != nil {
						n.mark("%v", err)
					}
					n.member[i] = "stopped"
				} else {
					c.members[i].proc.kill()
					n.member[i] = "killed"
				}
			}
		},
		steps: []faultStep{{after: hold, do: func() time.Duration {
			for _, i := range members {
				if variant < 2 {
					if err := c.members[i].proc.signal(syscall.SIGCONT); err != nil {
						n.mark("%v", err)
					}
				} else {
					c.restart(i)
				}
				delete(n.member, i)
				n.mark("etcd member m%d back", i)
			}
			return 0
		}}},
	}
}

func (n *nemesis) planEtcdMember(dr draw) *fault {
	i := int(dr.target*3) % 3
	what := fmt.Sprintf("etcd member m%d", i)
	if dr.target < 0.5 {
		if l := n.etcdLeader(); l >= 0 {
			i, what = l, fmt.Sprintf("etcd member m%d (the etcd leader)", l)
		}
	}
	return n.memberFault([]int{i}, dr.variant, dr.span(time.Second, 5*time.Second), what)
}

// planQuorumLost takes two of the three members away: no quorum until they are back.
func (n *nemesis) planQuorumLost(dr draw) *fault {
	a := int(dr.target*3) % 3
	b := (a + 1 + dr.variant%2) % 3
	v := 2 // killed, restarted after the hold
	if dr.variant >= 3 {
		v = 0 // stopped
	}
	return n.memberFault([]int{a, b}, v, dr.span(ttl, 3*ttl), fmt.Sprintf("etcd members m%d and m%d (quorum lost)", a, b))
}

// planCoordinatorLost takes the election backend's server away from every replica: for redis
// FLUSHALL (variant below 2), a restart without persistence (below 4) or every replica's link
// paused; for zookeeper every replica's link paused (even) or cut (odd).
func (n *nemesis) planCoordinatorLost(dr draw) *fault {
	if n.backend == "redis" && dr.variant < 4 {
		how, do := "FLUSHALL redis", func() { flushAll(n.t, n.d.coord.addr) }
		if dr.variant >= 2 {
			how, do = "restart redis without persistence", func() { n.d.coord.redis.Restart(n.t) }
		}
		return &fault{what: how, holds: []string{"coordinator"}, inject: do,
			steps: []faultStep{{after: time.Second, do: func() time.Duration { return 0 }}}}
	}
	var proxies []*testenv.Proxy
	holds := []string{"coordinator"}
	for _, node := range nodes {
		ps, link := n.coordinatorLink(node)
		proxies = append(proxies, ps...)
		holds = append(holds, link)
	}
	f := n.cutLink(proxies, "", "every replica's link to "+n.backend, dr.variant, dr.span(ttl/2, 3*ttl))
	f.holds = holds
	return f
}
