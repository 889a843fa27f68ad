package refusal

import (
	"fmt"
	"strings"
	"testing"

	"scheduler"
)

// TestJob: a refusal that names its job wins over the fallback, wrapped or not.
func TestJob(t *testing.T) {
	err := fmt.Errorf("claim: %w", &scheduler.FenceError{Job: "x", Token: 3, Fence: 5})
	if job, fence := Job(err, "y"); job != "x" || fence != 5 {
		t.Fatalf("Job = %q, %d; want x, 5", job, fence)
	}
	if job, fence := Job(scheduler.ErrFenced, "y"); job != "y" || fence != 0 {
		t.Fatalf("Job = %q, %d; want the fallback y, 0", job, fence)
	}
}

// TestBatchJob: a batch of one job names it, a mixed or empty one names none.
func TestBatchJob(t *testing.T) {
	id := func(s string) string { return s }
	for _, c := range []struct {
		items []string
		want  string
	}{{nil, ""}, {[]string{"a", "a"}, "a"}, {[]string{"a", "b"}, ""}} {
		if got := BatchJob(c.items, id); got != c.want {
			t.Errorf("BatchJob(%v) = %q, want %q", c.items, got, c.want)
		}
	}
}

// TestReasons name the job, the token and a remedy.
func TestReasons(t *testing.T) {
	for _, r := range []string{BlockReason("nightly", 7, 9), HeldReason("nightly", 7)} {
		if !strings.Contains(r, `"nightly"`) || !strings.Contains(r, "7") {
			t.Errorf("reason %q does not name the job and the token", r)
		}
	}
}
