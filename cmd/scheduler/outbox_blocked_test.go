package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// TestDaemon_OutboxFenceRaisedFromOutside: the outbox's fence raised above the leader's token
// while the election confirms the term (etcd restored without --bump-revision, another
// deployment's election on the same store) blocks the outbox alone: /readyz says so and the
// jobs run on in the same term, and once the fence is reset the outbox is unblocked in that term.
func TestDaemon_OutboxFenceRaisedFromOutside(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dsn := testenv.MustDatabase(t)
	c := newBareCluster(t, dsn, blockJobs)
	admin := pgAdmin(t, dsn)
	c.start("a")
	c.wait("x running", func() bool { return countStatus(c.history("x"), scheduler.StatusSucceeded) >= 2 })
	doc := c.status()
	term := doc.Leader.Token
	addr := c.leaderAddr(doc)

	if err := admin.raise(ctx, "@outbox", outsideFence); err != nil {
		t.Fatalf("raise the outbox's fence from outside: %v", err)
	}
	c.wait("the leader to report the outbox blocked", func() bool {
		code, body := httpGet(t, addr+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "the outbox is blocked") &&
			strings.Contains(body, "fence_admin_reset('@outbox')")
	})
	blockedAt := time.Now()
	c.wait("x running while the outbox is blocked", func() bool {
		n := 0
		for _, r := range c.history("x") {
			if r.Status == scheduler.StatusSucceeded && r.ScheduledAt.After(blockedAt) {
				n++
			}
		}
		return n >= 3
	})
	if doc := c.status(); doc.Leader == nil || doc.Leader.Token != term {
		t.Fatalf("leader %+v while the outbox is blocked, want the same term %d", doc.Leader, term)
	}
	if logs := c.replicas["a"].logs.String(); strings.Contains(logs, "outbox fenced out: the term ends") {
		t.Fatalf("the term ended on a refusal of the outbox's fence that the election confirms:\n%s", logs)
	}

	if err := admin.reset(ctx, "@outbox"); err != nil {
		t.Fatalf("fence_admin_reset('@outbox'): %v", err)
	}
	// The outbox claims again within its retry, which raises the fence back to the term's token.
	testenv.Eventually(t, 2*time.Minute, 200*time.Millisecond, "the outbox unblocked", func() bool {
		code, _ := httpGet(t, addr+"/readyz")
		return code == http.StatusOK
	})
	if doc := c.status(); doc.Leader == nil || doc.Leader.Token != term {
		t.Fatalf("leader %+v after the reset, want the same term %d", doc.Leader, term)
	}
}

// TestDaemon_TwoElectionsOnOneStore: two deployments that share a store but elect their leaders
// apart (here one etcd, two election prefixes; as with a replica each on its own embedded etcd)
// both lead. Each term's token fences the other out; before the fix the fenced one ended its term
// on the outbox's refusal, won again at once with a newer token, fenced the other out in turn,
// and so on: terms churned and slots ran twice. Now the one fenced out blocks instead, and says
// why, while the other runs every slot once.
func TestDaemon_TwoElectionsOnOneStore(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	out := filepath.Join(t.TempDir(), "effects")
	jobs := fmt.Sprintf(`
jobs:
  - name: x
    schedule: "* * * * * *"
    type: exec
    command: ["sh", "-c", "echo $SCHEDULER_SCHEDULED_AT >> %s"]
    misfire: skip
`, out)
	a := newBareCluster(t, dsn, jobs)
	b := &cluster{t: t, etcd: a.etcd, dsn: dsn, replicas: map[string]*replica{}, path: filepath.Join(t.TempDir(), "scheduler.yaml")}
	b.writeConfig(jobs)
	body, err := os.ReadFile(b.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.path, []byte(strings.Replace(string(body), "/test/election", "/other/election", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	a.start("a")
	a.wait("x running", func() bool { return countStatus(a.history("x"), scheduler.StatusSucceeded) >= 2 })
	b.start("b")
	both := time.Now()
	terms := func() int {
		return strings.Count(a.replicas["a"].logs.String(), `"campaign won"`) + strings.Count(b.replicas["b"].logs.String(), `"campaign won"`)
	}
	a.wait("10 slots of x since both lead", func() bool {
		n := 0
		for _, r := range a.history("x") {
			if r.Status == scheduler.StatusSucceeded && r.ScheduledAt.After(both) {
				n++
			}
		}
		return n >= 10 || terms() > 6
	})
	logs := a.replicas["a"].logs.String() + b.replicas["b"].logs.String()
	if n := terms(); n > 3 {
		t.Fatalf("%d terms won by the two replicas, want at most 3 (one each, and one more for a replica fenced out as it began); logs:\n%s", n, logs)
	}
	if !strings.Contains(logs, "another deployment with an election of its own") {
		t.Fatalf("no replica says that another election shares the store; logs:\n%s", logs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, slot := range strings.Fields(string(data)) {
		if seen[slot] {
			t.Fatalf("slot %s of x ran twice:\n%s", slot, data)
		}
		seen[slot] = true
	}
}
