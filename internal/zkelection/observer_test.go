package zkelection

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
	srv := testenv.MustZooKeeper(t)
	o, err := NewObserver([]string{srv.Addr()}, testTimeout, testPath, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	if _, err := ReadLeader(mustConn(t, srv.Addr()), testPath); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("ReadLeader before any election = %v, want ErrNoLeader", err)
	}
	var seq atomic.Int64
	a := leasetest.Run(t, newCampaigner(t, srv.Addr(), "a"), &seq, true)
	ta := leasetest.Next(t, a.Won, 15*time.Second, "a's term").Term
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, "observer shows a", func() bool {
		l, ok := o.Current()
		return ok && l.Node == "a" && l.Token == ta.Token
	})
	b := leasetest.Run(t, newCampaigner(t, srv.Addr(), "b"), &seq, true)
	time.Sleep(300 * time.Millisecond)
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
}
