package main

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestDaemon_ReloadWaitsForTheFile: a SIGHUP that comes while the configuration is written in
// place, in parts, does not load a part of it (valid YAML cut after a job, or inside a value):
// the reload waits for the file to stop changing and loads it whole.
func TestDaemon_ReloadWaitsForTheFile(t *testing.T) {
	c := newCluster(t, "", "")
	d := buildDaemon(t, c)
	before, _ := d.table()
	small, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	large := append(append([]byte{}, small...), addedJob...)
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	const parts = 8
	written := make(chan struct{})
	go func() {
		defer close(written)
		defer f.Close()
		for i := range parts {
			lo, hi := len(large)*i/parts, len(large)*(i+1)/parts
			_, _ = f.Write(large[lo:hi])
			time.Sleep(60 * time.Millisecond) // within the reload's quiet period
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	time.Sleep(10 * time.Millisecond) // the first part is written
	d.reload(ctx)
	<-written
	jobs, _ := d.table()
	if len(jobs) != len(before)+1 || jobs[len(jobs)-1].Name != "added" {
		names := make([]string, len(jobs))
		for i, j := range jobs {
			names[i] = j.Name
		}
		t.Fatalf("after a reload during the write the table is %v, want the %d jobs before and added", names, len(before))
	}
}

// TestDaemon_ReloadNamesRemovedJobs: a reload that drops jobs from the table names them at warn
// level, so that a file cut short is seen in the log.
func TestDaemon_ReloadNamesRemovedJobs(t *testing.T) {
	c := newCluster(t, "", "")
	d := buildDaemon(t, c)
	core, logs := observer.New(zap.InfoLevel)
	d.lg = zap.New(core)
	d.quiet = time.Nanosecond
	small, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := os.WriteFile(c.path, append(append([]byte{}, small...), addedJob...), 0o600); err != nil {
		t.Fatal(err)
	}
	d.reload(ctx)
	if err := os.WriteFile(c.path, small, 0o600); err != nil {
		t.Fatal(err)
	}
	d.reload(ctx)
	got := logs.FilterMessage("reload removed jobs from the table").All()
	if len(got) != 1 || got[0].Level != zap.WarnLevel {
		t.Fatalf("removed jobs logged %d times: %+v", len(got), got)
	}
	if jobs, ok := got[0].ContextMap()["jobs"].([]any); !ok || len(jobs) != 1 || jobs[0] != "added" {
		t.Fatalf("removed jobs logged as %v, want [added]", got[0].ContextMap()["jobs"])
	}
}
