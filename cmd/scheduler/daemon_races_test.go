package main

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/control"
	"scheduler/internal/election"
	"scheduler/internal/testenv"
)

// buildDaemon builds the daemon of c's configuration as runDaemon does, without starting it.
func buildDaemon(t *testing.T, c *cluster) *daemon {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := config.LoadTable(c.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := l.Config
	lg := zaptest.NewLogger(t)
	m, err := newMetrics(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{cfg: cfg, path: c.path, lg: lg, base: lg, m: m, specs: l.Table, jobs: cfg.Jobs, hash: l.Hash,
		started: time.Now()}
	if d.cli, err = election.NewClient(clientConfig(cfg, cfg.Etcd.Endpoints), lg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cli.Close() })
	if d.store, err = openStore(ctx, cfg, lg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.store.Close() })
	if err := d.build(); err != nil {
		t.Fatal(err)
	}
	return d
}

// runWatcher runs d's control watcher until the returned stop is called, which waits for it.
func runWatcher(t *testing.T, d *daemon) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.watcher.Run(ctx) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watcher: %v", err)
		}
	}
	t.Cleanup(func() { cancel() })
	select {
	case <-d.watcher.Ready():
	case <-time.After(10 * time.Second):
		stop()
		t.Fatal("the control watcher did not list")
	}
	return stop
}

// TestDaemon_ConsumeTriggersEndsWithWatcher: once the watcher's channel is closed, the
// daemon's consumer of trigger requests returns instead of taking zero requests from it.
func TestDaemon_ConsumeTriggersEndsWithWatcher(t *testing.T) {
	d := buildDaemon(t, newCluster(t, testenv.MustDatabase(t), ""))
	runWatcher(t, d)() // closes the channel
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.triggers.Consume(ctx, d.watcher.Requests()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Consume = %v, want nil", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Consume goes on reading the closed channel of a stopped watcher")
	}
}

// TestDaemon_LeadJoinsPendingTriggers: a term that ends while its pending trigger requests are
// still being read (etcd does not answer) ends only once that read has stopped.
func TestDaemon_LeadJoinsPendingTriggers(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	d := buildDaemon(t, c)
	stopWatcher := runWatcher(t, d)
	defer stopWatcher()
	// The requests are read through a proxy, which holds them; the rest talks to etcd directly.
	proxy := testenv.MustProxy(t, c.etcd.Endpoints()[0])
	pcli, err := clientv3.New(clientv3.Config{Endpoints: []string{proxy.Addr()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pcli.Close()
	if d.control, err = control.New(pcli, d.cfg.Election.Prefix); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.control.Requests(ctx); err != nil {
		t.Fatal(err)
	}
	// A fence above the term's token ends the term at its takeover, while ctx lives on.
	const token = 5
	if err := d.store.RaiseAll(ctx, []string{"tick", "yearly"}, token+1000); err != nil {
		t.Fatal(err)
	}
	proxy.Pause()
	defer proxy.Resume()

	wantLeadFenced(ctx, t, d, token, "the store", "triggers.(*Handler).Pending", "its pending triggers goroutine")
}

// wantLeadFenced leads with token and fails the test unless lead returns ErrFenced, refused by
// refuser, and has ended the goroutine whose stack shows frame (what it is) by then.
func wantLeadFenced(ctx context.Context, t *testing.T, d *daemon, token int64, refuser, frame, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.lead(ctx, scheduler.Term{Token: token, Node: "a", Since: time.Now()}) }()
	select {
	case err := <-done:
		if !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("lead = %v, want %s's refusal of token %d", err, refuser, token)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("lead goes on although %s refused its token", refuser)
	}
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, frame) {
		t.Fatalf("lead returned while %s still runs", what)
	}
}
