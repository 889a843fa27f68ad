package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/testenv"
)

// TestDaemon_ReloadSwapsWholeTable: a reload gives the runner, the job list /status shows and
// the table hash the replica publishes the new table together. A reader holding the daemon's
// lock, as /status and the replica registration do, never sees the runner on one table and the
// daemon on another, or a hash of another table, however often the table changes.
func TestDaemon_ReloadSwapsWholeTable(t *testing.T) {
	for _, store := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"Postgres", func(t *testing.T) string { return testenv.MustDatabase(t) }},
		{"SQLite", func(*testing.T) string { return "" }},
	} {
		t.Run(store.name, func(t *testing.T) {
			c := newCluster(t, store.dsn(t), "")
			d := buildDaemon(t, c)
			d.quiet = time.Nanosecond // each file is written whole before its reload
			small, err := os.ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			large := append(append([]byte{}, small...), addedJob...)

			stop := make(chan struct{})
			seen := make(chan error, 1)
			go func() {
				defer close(seen)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := d.consistent(); err != nil {
						seen <- err
						return
					}
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i := range 200 {
				body := small
				if i%2 == 0 {
					body = large
				}
				if err := os.WriteFile(c.path, body, 0o600); err != nil {
					t.Fatal(err)
				}
				d.reload(ctx)
			}
			close(stop)
			if err := <-seen; err != nil {
				t.Fatalf("during the reloads: %v", err)
			}
			if err := d.consistent(); err != nil {
				t.Fatal(err)
			}
			if _, hash := d.table(); hash != c.tableHash() {
				t.Fatalf("hash=%s, want %s, the last table's", hash, c.tableHash())
			}
		})
	}
}

// consistent reports how the runner's table, the daemon's and its hash differ, read under the
// daemon's lock.
func (d *daemon) consistent() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var running []string
	for _, s := range d.runner.Table() {
		running = append(running, s.Name)
	}
	shown := jobNames(d.jobs)
	if !slices.Equal(running, shown) {
		return fmt.Errorf("the runner has jobs %q while the daemon shows %q", running, shown)
	}
	if want := config.TableHash(&config.Config{Jobs: d.jobs}); d.hash != want {
		return fmt.Errorf("hash=%s for jobs %q, want %s", d.hash, shown, want)
	}
	return nil
}
