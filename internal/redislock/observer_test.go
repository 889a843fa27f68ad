package redislock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler/internal/lease/leasetest"
	"scheduler/internal/testenv"
)

func TestObserver_Run(t *testing.T) {
	cli := mustClient(t, testenv.MustRedis(t).Addr())
	o, err := NewObserver(cli, "scheduler:leader", time.Second, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	if _, err := ReadLeader(ctx, cli, "scheduler:leader"); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("ReadLeader before any term = %v, want ErrNoLeader", err)
	}
	var seq atomic.Int64
	a := leasetest.Run(t, newCampaigner(t, cli, "a", 5*time.Second, nil), &seq, true)
	ta := leasetest.Next(t, a.Won, 10*time.Second, "a's term").Term
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, "observer shows a", func() bool {
		l, ok := o.Current()
		return ok && l.Node == "a" && l.Token == ta.Token
	})
	b := leasetest.Run(t, newCampaigner(t, cli, "b", 5*time.Second, nil), &seq, true)
	a.Stop()
	tb := leasetest.Next(t, b.Won, 5*time.Second, "b's term").Term
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, "observer shows b", func() bool {
		l, ok := o.Current()
		return ok && l.Node == "b" && l.Token == tb.Token
	})
	b.Stop()
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, "observer shows no leader", func() bool {
		_, ok := o.Current()
		return !ok
	})
	// A value no campaigner writes is reported, not taken for a leader.
	if err := cli.Set(ctx, "scheduler:leader", "by hand", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLeader(ctx, cli, "scheduler:leader"); err == nil || errors.Is(err, ErrNoLeader) {
		t.Fatalf("ReadLeader of a hand-written value = %v, want an error", err)
	}
}
