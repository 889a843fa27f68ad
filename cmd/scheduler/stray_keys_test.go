package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// TestDaemon_StrayControlKeys: registry entries written by hand (no lease, or not a replica's)
// are not listed as replicas but warned of by status and /status, bounded and with the command
// that removes them, without failing /readyz; pause keys that name no job of the table are
// warned of once each, not logged as paused jobs.
func TestDaemon_StrayControlKeys(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	addr, _ := c.leading()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli := c.etcd.Client(t)
	const p = "/test/election"
	long := strings.Repeat("x", 100_000)
	registry := map[string]string{
		p + ":replica/evil":    "not json",
		p + ":replica/":        `{"node":"zz"}`,
		p + ":replica/typed":   `{"node":5,"version":[1],"table_hash":{},"http_addr":true,"started_at":"x"}`,
		p + ":replica/" + long: `{"http_addr":"127.0.0.1:1"}`,
	}
	pauses := []string{p + ":paused/", p + ":paused/UPPER", p + ":paused/a/b", p + ":paused/" + long, p + ":paused/nosuchjob"}
	for k, v := range registry {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range pauses {
		if _, err := cli.Put(ctx, k, "x"); err != nil {
			t.Fatal(err)
		}
	}

	warned := func(warnings []string, key string) bool {
		for _, w := range warnings {
			if strings.Contains(w, "replica registry key \""+shown(key)+"\"") && strings.Contains(w, "etcdctl del ") {
				return true
			}
		}
		return false
	}
	doc := c.status()
	for k := range registry {
		if !warned(doc.Warnings, k) {
			t.Errorf("status does not warn of %.60q with its etcdctl del: %.3000q", k, doc.Warnings)
		}
	}
	for _, w := range doc.Warnings {
		if len(w) > 2000 || strings.Contains(w, "different job tables") {
			t.Errorf("warning of %d bytes %.300q: want none over 2000 bytes, no table split", len(w), w)
		}
	}
	if len(doc.Replicas) != 1 || doc.Replicas[0].Node != "a" {
		t.Errorf("status replicas %.500v, want a alone", doc.Replicas)
	}
	if _, body := httpGet(t, "http://"+addr+"/status"); !strings.Contains(body, "replica registry key") || strings.Contains(body, long) {
		t.Errorf("/status does not warn of the registry keys, bounded:\n%.1000s", body)
	}
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != 200 {
		t.Errorf("readyz = %d %.1000s, want 200: a stray registry key keeps nothing from working", code, body)
	}

	c.wait("the pause keys warned of", func() bool {
		logs := r.logs.String()
		return strings.Count(logs, "ignoring pause key")+strings.Count(logs, "pause key of an unknown job") >= len(pauses)
	})
	logs := r.logs.String()
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "job paused") {
			t.Errorf("logged %.300q, want no pause of a job the table lacks", line)
		}
	}
	if n := strings.Count(logs, "ignoring pause key") + strings.Count(logs, "pause key of an unknown job"); n != len(pauses) {
		t.Errorf("%d pause keys warned of, want %d (once each)", n, len(pauses))
	}
	if strings.Contains(logs, long) {
		t.Errorf("a log line holds the whole 100 KB name")
	}
}

// shown is a key as a warning shows it.
func shown(key string) string {
	if len(key) > 200 {
		return key[:200] + "…"
	}
	return key
}

// TestDaemon_ZeroTimeTrigger: a trigger key at the zero time, which the ledger refuses as a
// slot, is never handed to the runner: it is logged once at warn with the command that removes
// it, and the runner's retries stay clear, so that the next manual run is recorded at once.
func TestDaemon_ZeroTimeTrigger(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	c.leading()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key := "/test/election:trigger/yearly/0001-01-01T00:00:00.000000Z"
	if _, err := c.etcd.Client(t).Put(ctx, key, "{}"); err != nil {
		t.Fatal(err)
	}
	c.wait("the key read", func() bool {
		logs := r.logs.String()
		return strings.Contains(logs, "ignoring request key") || strings.Contains(logs, "zero slot time")
	})
	c.cli("trigger", "yearly")
	c.wait("the manual run of yearly", func() bool {
		runs := c.history("yearly")
		return len(runs) == 1 && runs[0].Status == scheduler.StatusSucceeded
	})
	logs := r.logs.String()
	if strings.Contains(logs, "zero slot time") || strings.Contains(logs, "slots; retrying") || strings.Contains(logs, "close runs; retrying") {
		t.Errorf("the runner retried a write:\n%.3000s", logs)
	}
	if n := strings.Count(logs, "ignoring request key"); n != 1 || !strings.Contains(logs, "etcdctl del "+key) {
		t.Errorf("the key logged %d times, want once with its etcdctl del", n)
	}
}

// TestDaemon_TriggerOlderThanTheHistory: a trigger key for a slot older than the job's
// history.max_age (written by hand, or restored with an etcd snapshot) is dropped with a warning
// and no run: the retention would prune that run, and the key written again would then run the
// slot a second time.
func TestDaemon_TriggerOlderThanTheHistory(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	c.leading()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key, cli := "/test/election:trigger/yearly/2020-01-01T00:00:00.000000Z", c.etcd.Client(t)
	if _, err := cli.Put(ctx, key, "{}"); err != nil {
		t.Fatal(err)
	}
	c.wait("the request dropped", func() bool { return strings.Contains(r.logs.String(), "older than the job's history.max_age") })
	c.wait("the key removed", func() bool {
		resp, err := cli.Get(ctx, key)
		return err == nil && len(resp.Kvs) == 0
	})
	if runs := c.history("yearly"); len(runs) != 0 {
		t.Fatalf("the job ran for a slot older than its history: %+v", runs)
	}
}

// TestDaemon_TriggerKeyAgainAfterMaxRuns: a handled trigger key written again (by hand, or with
// an etcd snapshot restored) after newer runs of the job outnumber its history.max_runs does not
// run its slot a second time: the count limit prunes scheduled runs only, so the manual run is
// still there. Before, a newer manual run made the first one prunable, the pruner deleted it,
// and the key written again ran the slot again (3 effects for 2 manual slots).
func TestDaemon_TriggerKeyAgainAfterMaxRuns(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	c := newCluster(t, dsn, "")
	c.writeConfig(`
history: {prune_interval: 100ms, prune_pause: 1ms}
jobs:
  - name: yearly
    schedule: "@yearly"
    type: sql
    sql: "INSERT INTO stock_scans (sku, quantity) VALUES ('yearly', 1)"
    catchup: 1m
    history: {max_runs: 1}
`)
	c.start("a")
	c.leading()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	db := testenv.Connect(ctx, t, dsn)
	effects := func() (n int64) {
		if err := db.QueryRow(ctx, `SELECT count(*) FROM stock_scans WHERE sku = 'yearly'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	slot := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	key, cli := "/test/election:trigger/yearly/"+slot.Format("2006-01-02T15:04:05.000000Z"), c.etcd.Client(t)
	ranSlot := func() bool {
		return slices.ContainsFunc(c.history("yearly"), func(run scheduler.Run) bool { return run.ScheduledAt.Equal(slot) })
	}
	put := func(what string) {
		t.Helper()
		if _, err := cli.Put(ctx, key, `{"by":"op"}`); err != nil {
			t.Fatal(err)
		}
		c.wait(what, func() bool { resp, err := cli.Get(ctx, key); return err == nil && len(resp.Kvs) == 0 })
	}
	put("the trigger handled")
	if !ranSlot() {
		t.Fatal("the trigger's slot did not run")
	}
	c.cli("trigger", "yearly") // a newer manual run: the first is no longer the job's last
	c.wait("the newer manual run", func() bool { return countStatus(c.history("yearly"), scheduler.StatusSucceeded) >= 2 })
	time.Sleep(2 * time.Second) // a pass every 100 ms: a run max_runs would prune is gone by now
	if !ranSlot() {
		t.Fatal("the first manual run was pruned by max_runs")
	}
	put("the same key handled again")
	if n := effects(); n != 2 {
		t.Fatalf("%d effects for 2 manual slots: the key written again ran its slot again", n)
	}
}
