package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// TestDaemon_SecondSignalKillsJobs: a job that ignores SIGTERM runs when the daemon gets SIGTERM
// (its graceful stop waits for the job) and then a second SIGTERM (exit at once). The daemon's
// exit takes the job's process group with it. Before, the job ran on after the daemon, beside
// the run of the same slot the next leader started.
func TestDaemon_SecondSignalKillsJobs(t *testing.T) {
	bin := testenv.MustBuild(t, "scheduler/cmd/scheduler")
	pidFile := filepath.Join(t.TempDir(), "job.pid")
	c := newCluster(t, "", `
  - name: stubborn
    schedule: "@every 1h"
    type: exec
    command: [sh, -c, 'trap "" TERM; echo $$ > `+pidFile+`; while :; do sleep 0.2; done']
`)
	cmd := exec.Command(bin, "run", "--config", c.path, "--node", "a")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	var pid int
	testenv.Eventually(t, 60*time.Second, 50*time.Millisecond, "the job running", func() bool {
		if code, _, _ := runCLI(t, "trigger", "stubborn", "--config", c.path); code != 0 {
			return false
		}
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	_ = cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond) // the graceful stop has begun, and waits for the job
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not exit at the second SIGTERM")
	}
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, "the job gone with the daemon", func() bool {
		return testenv.ProcessGone(pid)
	})
}
