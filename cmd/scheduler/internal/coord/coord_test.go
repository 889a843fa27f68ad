package coord

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestNew_EtcdLongestTTL: the longest election.ttl validate allows on etcd is the longest lease
// a real etcd grants, and a term is won with it; one second more is refused by both, validate
// naming the key and the bound rather than run looping on the refused grant.
func TestNew_EtcdLongestTTL(t *testing.T) {
	e := testenv.MustEtcd(t)
	cli := e.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	over := config.MaxEtcdTTL + time.Second
	if _, err := cli.Grant(ctx, int64(over/time.Second)); err == nil || !strings.Contains(err.Error(), "too large lease TTL") {
		t.Fatalf("Grant(%v) = %v, want too large lease TTL", over, err)
	}
	env := []string{"SCHEDULER_ETCD_ENDPOINTS=" + strings.Join(e.Endpoints(), ","), "SCHEDULER_SINGLE_NODE=true"}
	path := configtest.Write(t, configtest.MinimalJob)
	_, err := config.Load(path, append(env, fmt.Sprintf("SCHEDULER_ELECTION_TTL=%ds", over/time.Second)))
	if err == nil || !strings.Contains(err.Error(), "election.ttl: set by SCHEDULER_ELECTION_TTL: must be at most 2500000h0m0s") {
		t.Fatalf("Load with election.ttl %v: %v, want it refused naming the key and the bound", over, err)
	}

	cfg, err := config.Load(path, append(env, fmt.Sprintf("SCHEDULER_ELECTION_TTL=%ds", config.MaxEtcdTTL/time.Second)))
	if err != nil {
		t.Fatalf("Load with election.ttl %v: %v", config.MaxEtcdTTL, err)
	}
	m, err := status.NewMetrics(status.MetricsConfig{PerJob: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := New(cfg, Deps{Etcd: cli, Logger: zaptest.NewLogger(t), Metrics: m})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	won := make(chan scheduler.Term, 1)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- c.Run(runCtx, func(_ context.Context, term scheduler.Term) error {
			won <- term
			stop()
			return nil
		})
	}()
	select {
	case term := <-won:
		if term.Token <= 0 {
			t.Fatalf("token=%d, want > 0", term.Token)
		}
	case <-ctx.Done():
		t.Fatal("no term won with the longest TTL")
	}
	if err := <-done; err != nil && ctx.Err() == nil && runCtx.Err() == nil {
		t.Fatalf("Run: %v", err)
	}
}
