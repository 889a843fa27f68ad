package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// process is a server the suite started: a scheduler replica or an etcd member, in its own
// process group so that signals reach it and its children and nothing else. It is killed by
// its PID (the group's ID) in t.Cleanup, pass or fail, and its output goes to a file.
type process struct {
	name string
	log  string // stdout and stderr
	cmd  *exec.Cmd
	done chan struct{} // closed once Wait returned

	mu      sync.Mutex
	stopped bool // SIGSTOP sent and no SIGCONT since
}

// startProcess starts bin with args, writing its output to logPath (appended, so a restart
// keeps the earlier lines).
func startProcess(t *testing.T, name, logPath, bin string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv()
	// Own group: SIGSTOP/SIGKILL go to -pgid. The parent-death signal is a safety net for a
	// test binary that dies before its cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return launch(t, name, logPath, cmd)
}

// launch starts cmd, which must start a process group of its own, with its output appended to
// logPath, and kills the group in t.Cleanup.
func launch(t *testing.T, name, logPath string, cmd *exec.Cmd) *process {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("open log of %s: %v", name, err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

// childEnv is this process's environment without the SCHEDULER_* variables, which would
// override the configuration files the suite writes.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SCHEDULER_") {
			env = append(env, kv)
		}
	}
	return env
}

// runCLIWith runs a command of bin with environ and returns its standard output.
func runCLIWith(t *testing.T, bin string, environ []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = environ
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("scheduler %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// signal sends sig to the process group.
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited() {
		return fmt.Errorf("signal %v to %s: already exited", sig, p.name)
	}
	if err := syscall.Kill(-p.pid(), sig); err != nil {
		return fmt.Errorf("signal %v to %s (pgid %d): %w", sig, p.name, p.pid(), err)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.stopped = true
	case syscall.SIGCONT:
		p.stopped = false
	}
	return nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the process to exit and returns its exit code.
func (p *process) wait(d time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), nil
	case <-time.After(d):
		return 0, fmt.Errorf("%s (pid %d) still running after %v", p.name, p.pid(), d)
	}
}

// kill continues a stopped group, kills it and waits for the leader to be reaped.
func (p *process) kill() {
	if p.exited() {
		return
	}
	p.mu.Lock()
	if p.stopped {
		_ = syscall.Kill(-p.pid(), syscall.SIGCONT)
		p.stopped = false
	}
	err := syscall.Kill(-p.pid(), syscall.SIGKILL)
	p.mu.Unlock()
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(log of %s unreadable: %v)", p.name, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
