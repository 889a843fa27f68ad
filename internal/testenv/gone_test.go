package testenv

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestProcessGone: a live process is not gone; once it exited, reaped or not, it is.
func TestProcessGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if ProcessGone(pid) || ProcessGone(os.Getpid()) {
		t.Fatal("a live process taken for gone")
	}
	_ = cmd.Process.Kill()
	Eventually(t, 10*time.Second, time.Millisecond, "the killed process a zombie", func() bool { return ProcessGone(pid) })
	_ = cmd.Wait()
	if !ProcessGone(pid) {
		t.Fatal("a reaped process not gone")
	}
}
