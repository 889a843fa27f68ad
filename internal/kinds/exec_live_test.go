package kinds

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"scheduler"
)

// liveRecorder is a scheduler.LiveOutput that keeps what it is given.
type liveRecorder struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	opened []string
	closed int
	wrote  chan struct{}
}

func (l *liveRecorder) Open(job, runID string) (io.Writer, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened = append(l.opened, job+"/"+runID)
	return l, func() { l.mu.Lock(); l.closed++; l.mu.Unlock() }
}

func (l *liveRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *liveRecorder) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestExecJob_Live: an exec job's output reaches the attempt's live output while the program
// runs, in full, and the live output is closed once the attempt has printed everything.
func TestExecJob_Live(t *testing.T) {
	j := mustExec(t, ExecConfig{Command: []string{"/bin/sh", "-c", "echo first; sleep 30; echo second"}})
	live := &liveRecorder{wrote: make(chan struct{}, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		out, _ := j.Execute(ctx, scheduler.Attempt{Job: "talk", RunID: "5", Attempt: 1, Token: 1, Live: live})
		done <- out // stopped by the test
	}()
	select {
	case <-live.wrote:
	case <-ctx.Done():
		t.Fatal("nothing reached the live output while the program ran")
	}
	if got := live.text(); got != "first\n" {
		t.Fatalf("live output while the program waits = %q, want its first line", got)
	}
	cancel() // the program sleeps: stop it
	<-done
	live.mu.Lock()
	defer live.mu.Unlock()
	if strings.Join(live.opened, ",") != "talk/5" || live.closed != 1 {
		t.Fatalf("opened %v, closed %d times; want talk/5 once, closed once", live.opened, live.closed)
	}
}
