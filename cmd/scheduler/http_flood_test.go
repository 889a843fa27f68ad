package main

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler/internal/testenv"
)

// TestHTTP_FloodLeavesThePoolToTheRunner: a client flooding the leader's HTTP port with
// concurrent /status, /api/console and /readyz requests, each reading the store, holds only a
// few of the store's pool connections, as counted by Postgres, and the leader's sql job keeps
// committing its slots meanwhile.
func TestHTTP_FloodLeavesThePoolToTheRunner(t *testing.T) {
	const (
		clients = 150
		// mostConns bounds the daemon's sessions: the runner's few and one reader per shared
		// document, well below the pool's default of 16 that a reader per request fills.
		mostConns = 10
	)
	dsn := testenv.MustDatabase(t)
	c := newCluster(t, dsn, "")
	c.start("a")
	var addr string
	c.wait("a to lead and run tick", func() bool {
		doc := c.status()
		if doc.Leader == nil || len(doc.Replicas) != 1 || doc.Jobs[0].Last == nil {
			return false
		}
		addr = doc.Replicas[0].HTTPAddr
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	probe, err := pgx.Connect(ctx, dsn+"&application_name=probe")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close(context.Background())
	count := func(q string) int64 {
		var n int64
		if err := probe.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ticks := func() int64 { return count(`SELECT count(*) FROM stock_scans WHERE sku = 'tick'`) }
	sessions := func() int64 {
		return count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'scheduler'`)
	}

	flood, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var answered atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	paths := []string{"/status", "/api/console", "/readyz"}
	for i := range clients {
		wg.Go(func() {
			for flood.Err() == nil {
				req, _ := http.NewRequestWithContext(flood, "GET", "http://"+addr+paths[i%len(paths)], nil)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered.Add(1)
			}
		})
	}
	before := ticks()
	most := int64(0)
	c.wait("tick to commit slots under the flood", func() bool {
		most = max(most, sessions())
		return ticks() >= before+3 && answered.Load() >= 10*clients
	})
	stop()
	wg.Wait()
	most = max(most, sessions())
	t.Logf("%d store sessions at most, %d requests answered", most, answered.Load())
	if most > mostConns {
		t.Fatalf("the daemon held %d store sessions under a flood of %d clients, want at most %d", most, clients, mostConns)
	}
}
