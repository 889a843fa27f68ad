package kinds

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestExecJob_FirstForOOM: a job runs with oom_score_adj 1000, above the daemon's, so that the
// kernel kills a job that exhausts the memory they share before the daemon. Before, jobs had
// the daemon's score, and the daemon, the largest process, went first.
func TestExecJob_FirstForOOM(t *testing.T) {
	own, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatalf("this test needs /proc: %v", err)
	}
	j := mustExec(t, ExecConfig{Command: []string{"sh", "-c", "sleep 0.2; cat /proc/$$/oom_score_adj"}})
	out, err := j.Execute(context.Background(), testRun())
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "1000" {
		t.Fatalf("the job's oom_score_adj is %q (the daemon's %q), want 1000", strings.TrimSpace(out), strings.TrimSpace(string(own)))
	}
}
