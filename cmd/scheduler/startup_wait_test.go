package main

import (
	"net/url"
	"strings"
	"testing"

	"scheduler/internal/testenv"
)

// A replica started while its Postgres is down waits for it, and leads once it is back: it
// does not exit for its service manager to restart until the manager gives up. One stopped
// (SIGTERM) while it waits exits cleanly.
func TestDaemon_WaitsForTheStoreAtStart(t *testing.T) {
	pg := testenv.MustPostgres(t, "fsync=off")
	c := newCluster(t, pg.CreateDatabase(t), "")
	pg.Stop(t)

	a, b := c.start("a"), c.start("b")
	const waiting = "the store is unreachable; waiting for it before starting"
	c.wait("both replicas to wait for the store", func() bool {
		return strings.Count(a.logs.String(), waiting) >= 2 && strings.Contains(b.logs.String(), waiting)
	})
	for _, r := range []*replica{a, b} {
		select {
		case err := <-r.done:
			t.Fatalf("replica %s exited while the store was down: %v\n%s", r.node, err, r.logs)
		default:
		}
	}
	if err := b.stop(t); err != nil {
		t.Fatalf("replica b stopped while waiting: %v, want a clean exit\n%s", err, b.logs)
	}
	if !strings.Contains(b.logs.String(), "stopped before the store answered") {
		t.Errorf("replica b's log does not say it stopped while waiting:\n%s", b.logs)
	}
	if !strings.Contains(a.logs.String(), `"key":"store.dsn"`) {
		t.Errorf("the waiting line does not name store.dsn:\n%s", a.logs)
	}

	pg.Start(t)
	c.wait("replica a to lead and run tick once the store is back", func() bool {
		st := c.status()
		return st.Leader != nil && st.Leader.Node == "a" && countStatus(c.history("tick"), "succeeded") > 0
	})
	if !strings.Contains(a.logs.String(), "the store answers; starting") {
		t.Errorf("replica a's log does not say the store answered:\n%s", a.logs)
	}
}

// What waiting would not mend is refused at once: a database that does not exist.
func TestDaemon_RefusesMissingDatabaseAtOnce(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_database"
	c := &cluster{t: t, etcd: testenv.MustEtcd(t), dsn: u.String(), replicas: map[string]*replica{}}
	c.path = t.TempDir() + "/scheduler.yaml"
	c.writeConfig(testJobs)
	code, _, errOut := runCLI(t, "run", "--config", c.path)
	if code != 1 || !strings.Contains(errOut, "no_such_database") {
		t.Fatalf("exit %d, want 1 naming the database:\n%s", code, errOut)
	}
	if strings.Contains(errOut, "waiting for it") {
		t.Errorf("a missing database was waited for:\n%s", errOut)
	}
}
