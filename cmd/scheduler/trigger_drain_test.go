package main

import (
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// A trigger that reaches a leader while it drains for a shutdown (a rolling restart) is left
// for the next leader, which runs it: it was dropped as if its job were unknown.
func TestDaemon_TriggerDuringDrainIsKept(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), `
  - name: slow
    schedule: "* * * * * *"
    type: exec
    command: [sleep, "30"]
    overlap: skip
`)
	a := c.start("a")
	c.wait("a leading with slow running", func() bool {
		st := c.status()
		return st.Leader != nil && st.Leader.Node == "a" && strings.Contains(a.logs.String(), `"job":"slow"`)
	})
	a.cancel() // SIGTERM: a drains, slow holds it for shutdown_grace
	a.cancel = nil
	c.wait("a draining", func() bool { return strings.Contains(a.logs.String(), `"msg":"draining"`) })
	c.cli("trigger", "yearly")
	time.Sleep(500 * time.Millisecond) // a's watcher hands it the request, if it still watches
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("a did not stop:\n%s", a.logs)
	}
	c.start("b")
	c.wait("b to run the trigger sent while a drained", func() bool {
		return countStatus(c.history("yearly"), scheduler.StatusSucceeded) == 1
	})
}
