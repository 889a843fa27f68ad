package kinds

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestKillJobGroups: the process groups that children of this process lead, as exec jobs' do,
// are killed; a child in this process's own group is not, nor is this process.
func TestKillJobGroups(t *testing.T) {
	leader := exec.Command("sleep", "60")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	member := exec.Command("sleep", "60") // in the test's group: no job's
	for _, c := range []*exec.Cmd{leader, member} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _ = member.Process.Kill(); _ = member.Wait() }()
	if n := KillJobGroups(os.Getpid()); n < 1 {
		t.Fatalf("KillJobGroups signalled %d groups, want the job's", n)
	}
	waited := make(chan error, 1)
	go func() { waited <- leader.Wait() }()
	select {
	case err := <-waited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the job's leader ended with %v, want killed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job's group was not killed")
	}
	if err := member.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the child in this process's own group: %v, want it alive", err)
	}
}
