package kinds

import (
	"context"
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

// TestKillJobGroups: the process groups of the exec jobs running are killed, a job's whose
// leader has exited but left a member that ignores SIGTERM (waiting out the kill grace) too;
// another child of this process that leads a group of its own (a server a test started) is not.
func TestKillJobGroups(t *testing.T) {
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	for name, script := range map[string]string{
		"running":     `trap "" TERM; echo $$ > "$DIR/pid"; sleep 60`,
		"leader gone": `sh -c 'trap "" TERM; echo $$ > "$DIR/pid"; sleep 60' & sleep 0.2; exit 0`,
	} {
		t.Run(name, func(t *testing.T) {
			j, dir := mustScript(t, script, time.Minute)
			done := make(chan error, 1)
			go func() { _, err := j.Execute(context.Background(), testRun()); done <- err }()
			var pid int
			deadline := time.Now().Add(10 * time.Second)
			for pid == 0 && time.Now().Before(deadline) {
				b, _ := os.ReadFile(filepath.Join(dir, "pid"))
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond) // the leader has exited, if it does
			if n := KillJobGroups(); n != 1 {
				t.Fatalf("KillJobGroups signalled %d groups, want the job's", n)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the job's run did not end when its group was killed")
			}
			if !testenv.ProcessGone(pid) {
				t.Fatalf("the job's process %d is alive", pid)
			}
		})
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the other child's group: %v, want it alive", err)
	}
}
