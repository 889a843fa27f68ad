package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler/internal/testenv"
)

// ttl is the lease TTL of every scenario: the server's minimum with production etcd timing.
const ttl = 2 * time.Second

// poll is how often a scenario looks at the system while it waits for a state.
const poll = 50 * time.Millisecond

// nodes are the replicas of every deployment.
var nodes = []string{"a", "b", "c"}

// deployment is one scenario's system: an etcd cluster, a fresh Postgres database with the
// audit triggers, and three scheduler replicas, each reaching every etcd member and Postgres
// through proxies of its own.
type deployment struct {
	t        *testing.T
	s        *suite
	dir      string
	etcd     *etcdCluster
	dsn      string // direct, for the command-line tools and the suite's checks
	db       *pgxpool.Pool
	prefix   string
	jobs     string // the jobs section of the configuration
	grace    time.Duration
	cliCfg   string
	replicas map[string]*replica
	coord    coordinator // the election backend's server when it is not etcd (see backends_test.go)
}

// replica is one `scheduler run` process and its proxies.
type replica struct {
	node   string
	config string
	log    string
	etcd   []*testenv.Proxy // one per member, in member order
	pg     *testenv.Proxy
	coord  *testenv.Proxy // to the election backend's server when it is not etcd; pg for postgres
	proc   *process
}

// deployOptions are what scenarios vary.
type deployOptions struct {
	jobs  string        // YAML list under jobs:
	grace time.Duration // shutdown_grace; default 5s
	// jobRoles, when set, creates the database roles of the sql jobs once the schema exists and
	// returns the store.job_dsn of the replicas (direct: each replica reaches it through its
	// own Postgres proxy).
	jobRoles func(d *deployment) string
}

// deploy sets up a scenario's system; the replicas are not started yet.
func (s *suite) deploy(t *testing.T, o deployOptions) *deployment {
	t.Helper()
	d := &deployment{t: t, s: s, dir: t.TempDir(), jobs: o.jobs, grace: o.grace, replicas: map[string]*replica{}}
	if d.grace == 0 {
		d.grace = 5 * time.Second
	}
	if s.backend == "" {
		d.etcd = startEtcd(t, s.bins.etcdMember, s.env)
	} else {
		d.coord = startCoordinator(t, s.backend)
	}
	d.dsn = s.pg.database(t)
	d.prefix = fmt.Sprintf("/e2e/%d/election", time.Now().UnixNano())
	d.cliCfg = filepath.Join(d.dir, "cli.yaml")
	d.writeConfig(d.cliCfg, "e2e-cli", d.endpoints(), d.dsn, "")
	d.cli("migrate")
	d.db = openDB(t, d.dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.db.Exec(ctx, auditSQL); err != nil {
		t.Fatalf("install the audit triggers: %v", err)
	}
	var jobDSN string
	if o.jobRoles != nil {
		jobDSN = o.jobRoles(d)
	}
	for _, n := range nodes {
		r := &replica{node: n, config: filepath.Join(d.dir, n+".yaml"), log: filepath.Join(d.dir, n+".log")}
		var eps []string
		for _, ep := range d.endpoints() {
			p := testenv.MustProxy(t, ep)
			r.etcd = append(r.etcd, p)
			eps = append(eps, p.Addr())
		}
		r.pg = testenv.MustProxy(t, mustHost(t, d.dsn))
		r.coord = d.coordProxy(r)
		storeDSN, storeJobDSN := viaProxy(t, d.dsn, r.pg.Addr(), "e2e-"+n), ""
		if jobDSN != "" {
			storeJobDSN = viaProxy(t, jobDSN, r.pg.Addr(), "e2e-"+n)
		}
		d.writeConfig(r.config, n, eps, storeDSN, storeJobDSN)
		d.replicas[n] = r
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes {
				if r := d.replicas[n]; r.proc != nil {
					t.Logf("log of replica %s: its warnings, errors and terms (at most %d lines):\n%s", n, digestLines, digest(r.proc.log))
				}
			}
			if s.pg.own != nil {
				db := strings.TrimPrefix(mustURLPath(t, d.dsn), "/")
				t.Logf("postgres log of database %s (last 60 lines):\n%s", db, s.pg.own.LogLines("@"+db+" ", 60))
			}
		}
	})
	return d
}

// writeConfig writes a configuration file for node; jobDSN is store.job_dsn, empty for none.
func (d *deployment) writeConfig(path, node string, endpoints []string, dsn, jobDSN string) {
	d.t.Helper()
	store := fmt.Sprintf("{dsn: %q}", dsn)
	if jobDSN != "" {
		store = fmt.Sprintf("{dsn: %q, job_dsn: %q}", dsn, jobDSN)
	}
	body := fmt.Sprintf(`node: %s
data_dir: %s
%s
store: %s
http: {addr: ""}
log: {level: info, format: json}
shutdown_grace: %s
jobs:
%s`, node, filepath.Join(d.dir, "data-"+node), d.electionSection(endpoints), store, d.grace, d.jobs)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		d.t.Fatal(err)
	}
}

// cli runs a command-line command against the deployment and returns its output.
func (d *deployment) cli(args ...string) string {
	d.t.Helper()
	return runCLIWith(d.t, d.s.bins.scheduler, childEnv(), append(args, "--config", d.cliCfg)...)
}

// statusDoc is the part of `status --json` the suite reads.
type statusDoc struct {
	Leader *struct {
		Node  string `json:"node"`
		Token int64  `json:"token"`
	} `json:"leader"`
	Replicas []struct {
		Node string `json:"node"`
	} `json:"replicas"`
	// Leaseless are the keys under the election prefix without a lease.
	Leaseless []struct {
		Key    string `json:"key"`
		Remove string `json:"remove"`
	} `json:"leaseless_keys"`
}

// hasReplica reports whether node is registered.
func (s statusDoc) hasReplica(node string) bool {
	for _, r := range s.Replicas {
		if r.Node == node {
			return true
		}
	}
	return false
}

func (d *deployment) status() statusDoc {
	d.t.Helper()
	var doc statusDoc
	if err := json.Unmarshal([]byte(d.cli("status", "--json")), &doc); err != nil {
		d.t.Fatalf("status --json: %v", err)
	}
	return doc
}

// start starts (or restarts) replica node.
func (d *deployment) start(node string) *replica {
	d.t.Helper()
	r := d.replicas[node]
	if r.proc != nil && !r.proc.exited() {
		d.t.Fatalf("replica %s is running", node)
	}
	r.proc = startProcess(d.t, "replica "+node, r.log, d.s.bins.scheduler, "run", "--config", r.config, "--node", node)
	return r
}

func (d *deployment) startAll() {
	for _, n := range nodes {
		d.start(n)
	}
}

// signal sends sig to replica node's process group.
func (d *deployment) signal(node string, sig syscall.Signal) {
	d.t.Helper()
	if err := d.replicas[node].proc.signal(sig); err != nil {
		d.t.Fatal(err)
	}
}

// terms returns every replica's terms, by token.
func (d *deployment) terms() []term {
	var all []term
	for _, n := range nodes {
		all = append(all, terms(n, readLog(d.replicas[n].log))...)
	}
	sortTerms(all)
	return all
}

// leader returns the term of the replica that believes it leads now: the newest term that has
// not ended.
func (d *deployment) leader() (term, bool) {
	ts := d.terms()
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].ended.IsZero() && !d.replicas[ts[i].node].proc.exited() {
			return ts[i], true
		}
	}
	return term{}, false
}

// waitLeader waits for a replica to lead with a token above after.
func (d *deployment) waitLeader(after int64, within time.Duration) term {
	d.t.Helper()
	var l term
	testenv.Eventually(d.t, within, poll, fmt.Sprintf("a leader with a token above %d", after), func() bool {
		var ok bool
		l, ok = d.leader()
		return ok && l.token > after
	})
	return l
}

// snapshot reads the scenario's data.
func (d *deployment) snapshot() snapshot {
	d.t.Helper()
	s, err := d.trySnapshot()
	if err != nil {
		d.t.Fatal(err)
	}
	return s
}

// trySnapshot reads the scenario's data, or says why it could not (Postgres restarting).
func (d *deployment) trySnapshot() (snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return readSnapshot(ctx, d.db)
}

// runStart is a run's "run started" log line.
type runStart struct {
	node    string
	slot    time.Time
	at      time.Time
	token   int64
	attempt int
}

// runStarts returns the runs of job started (attempts included), from every replica's log.
func (d *deployment) runStarts(job string) []runStart {
	var out []runStart
	for _, n := range nodes {
		for _, e := range readLog(d.replicas[n].log) {
			if e.Msg == "run started" && e.Job == job {
				out = append(out, runStart{node: n, slot: e.Slot.UTC(), at: e.TS, token: e.Token, attempt: e.Attempt})
			}
		}
	}
	return out
}

// waitRunStarted waits for a run of job for a slot after after to start, and returns it.
func (d *deployment) waitRunStarted(job string, after time.Time, within time.Duration) runStart {
	d.t.Helper()
	var got runStart
	testenv.Eventually(d.t, within, poll, "a run of "+job+" for a slot after "+stamp(after), func() bool {
		for _, r := range d.runStarts(job) {
			if r.slot.After(after) {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

// waitFinished waits until job's slot has a finished run and returns it.
func (d *deployment) waitFinished(job string, slot time.Time, within time.Duration) ledgerRow {
	d.t.Helper()
	var got ledgerRow
	testenv.Eventually(d.t, within, poll, fmt.Sprintf("slot %s of %s to finish", stamp(slot), job), func() bool {
		s, err := d.trySnapshot()
		if err != nil {
			return false
		}
		r, ok := s.slotRuns(job)[slot.UTC()]
		got = r
		return ok && r.Status != "running"
	})
	return got
}

// check stops every replica (SIGKILL: the checks need no graceful end) and asserts the data
// invariants; it returns the final snapshot.
func (d *deployment) check(job string, clients int) snapshot {
	d.t.Helper()
	for _, n := range nodes {
		if r := d.replicas[n]; r.proc != nil {
			r.proc.kill()
		}
	}
	s := d.snapshot()
	for _, v := range invariants(s, job, clients) {
		d.t.Error(v)
	}
	return s
}
