package main

import (
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// ttyJob tries the terminal of the session it runs in: with it, a job could read the operator's
// input or type into the shell that started the daemon (TIOCSTI), as whatever user it runs as.
const ttyJob = `
  - name: tty
    schedule: "* * * * * *"
    type: exec
    command: [sh, -c, '( : >/dev/tty ) 2>/dev/null && echo "reached the terminal" || echo "no terminal"']
    misfire: skip
`

// TestDaemon_JobsHaveNoTerminal starts the daemon binary on a terminal, as an operator does who
// runs it by hand: its exec jobs must not reach that terminal.
func TestDaemon_JobsHaveNoTerminal(t *testing.T) {
	bin := testenv.MustBuild(t, "scheduler/cmd/scheduler")
	c := newCluster(t, "", ttyJob)
	ptmx, tty := mustPty(t)
	cmd := exec.Command(bin, "run", "--config", c.path, "--node", "a")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// The terminal becomes the daemon's controlling terminal, as a login shell's is.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close()
	drained := make(chan struct{})
	go func() { // the daemon's log goes to the terminal: read it, or it blocks
		defer close(drained)
		_, _ = io.Copy(io.Discard, ptmx)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = ptmx.Close()
		<-drained
	})

	var run scheduler.Run
	c.wait("a succeeded run of tty", func() bool {
		for _, r := range c.history("tty") {
			if r.Status == scheduler.StatusSucceeded {
				run = r
				return true
			}
		}
		return false
	})
	if run.Output != "no terminal\n" {
		t.Fatalf("output %q: the job reached the daemon's terminal", run.Output)
	}
}
