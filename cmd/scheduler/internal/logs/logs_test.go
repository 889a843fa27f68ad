package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"scheduler"
)

var errNotFound = errors.New("store: no such run")

// fakeStore answers RunByID from runs, in turn: each call takes the next, the last repeats.
type fakeStore struct {
	mu   sync.Mutex
	runs []scheduler.Run
}

func (f *fakeStore) RunByID(_ context.Context, _ string, id int64) (scheduler.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.runs) == 0 {
		return scheduler.Run{}, errNotFound
	}
	r := f.runs[0]
	if len(f.runs) > 1 {
		f.runs = f.runs[1:]
	}
	return r, nil
}

func (f *fakeStore) SlotRun(context.Context, string, time.Time) (scheduler.Run, error) {
	return scheduler.Run{}, errNotFound
}

func (f *fakeStore) Last(context.Context, ...string) (map[string]scheduler.Run, error) {
	return map[string]scheduler.Run{}, nil
}

func command(st Store, leader func(context.Context) (string, error), out, msgs *bytes.Buffer) Command {
	return Command{Job: "slow", Store: st, Jobs: []string{"slow", "fast"}, NoRun: func(err error) bool { return errors.Is(err, errNotFound) },
		Usage: func(err error) error { return fmt.Errorf("usage: %w", err) }, Leader: leader, Poll: time.Millisecond, Stdout: out, Stderr: msgs}
}

// TestCommand_Find: the errors of a job unknown, a job without runs, a slot and a run id
// without a run.
func TestCommand_Find(t *testing.T) {
	var out, msgs bytes.Buffer
	c := command(&fakeStore{}, nil, &out, &msgs)
	for _, tc := range []struct {
		job   string
		at    time.Time
		id    int64
		want  string
		usage bool
	}{
		{"nope", time.Time{}, 0, `no job named "nope"; the jobs are: slow, fast`, true},
		{"slwo", time.Time{}, 0, `no job named "slwo"; did you mean "slow"?; the jobs are: slow, fast`, true},
		{"slow", time.Time{}, 0, `job "slow" has no runs in the ledger yet`, false},
		{"slow", time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC), 0, `job "slow" has no run at slot 2026-03-01T02:00:00Z`, false},
		{"slow", time.Time{}, 9, `job "slow" has no run 9`, false},
	} {
		c.Job = tc.job
		_, err := c.Find(context.Background(), tc.at, tc.id)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.HasPrefix(err.Error(), "usage:") != tc.usage {
			t.Errorf("Find(%s, %v, %d) = %v, want %q (usage %v)", tc.job, tc.at, tc.id, err, tc.want, tc.usage)
		}
	}
}

// TestCommand_Follow: a follower reconnects from where it stopped while the run runs, starts
// over when the leader's output is behind it (the run began again elsewhere), waits out a
// leader that cannot be reached, and prints the kept output of a run that ended before it saw
// any.
func TestCommand_Follow(t *testing.T) {
	running := scheduler.Run{RunID: 3, Job: "slow", Status: scheduler.StatusRunning}
	done := scheduler.Run{RunID: 3, Job: "slow", Status: scheduler.StatusFailed, Attempt: 2, Error: "exit status 1", Output: "kept\n"}
	t.Run("ReconnectsAndRestarts", func(t *testing.T) {
		var mu sync.Mutex
		var froms []string
		leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			froms = append(froms, r.URL.Query().Get("from"))
			n := len(froms)
			mu.Unlock()
			switch n {
			case 1: // the first attempt
				w.Header().Set("Output-Offset", "0")
				_, _ = w.Write([]byte("one\n"))
			case 2: // after a failover: the next leader's output starts again
				w.Header().Set("Output-Offset", "0")
			default:
				w.Header().Set("Output-Offset", "0")
				_, _ = w.Write([]byte("again\n"))
			}
		}))
		defer leader.Close()
		var out, msgs bytes.Buffer
		st := &fakeStore{runs: []scheduler.Run{running, done}}
		c := command(st, func(context.Context) (string, error) { return strings.TrimPrefix(leader.URL, "http://"), nil }, &out, &msgs)
		if err := c.Follow(context.Background(), running); err != nil {
			t.Fatal(err)
		}
		if out.String() != "one\nagain\n" || fmt.Sprint(froms) != "[0 4 0]" || !strings.Contains(msgs.String(), "starts again") ||
			!strings.Contains(msgs.String(), "run 3 ended failed, attempt 2: exit status 1") {
			t.Fatalf("printed %q, asked from %v, said %q", out.String(), froms, msgs.String())
		}
	})
	t.Run("EndedBeforeSeen", func(t *testing.T) {
		var out, msgs bytes.Buffer
		st := &fakeStore{runs: []scheduler.Run{running, done}}
		c := command(st, func(context.Context) (string, error) { return "", errors.New("no replica leads") }, &out, &msgs)
		if err := c.Follow(context.Background(), running); err != nil {
			t.Fatal(err)
		}
		if out.String() != "kept\n" || !strings.Contains(msgs.String(), "waiting for the leader: no replica leads") {
			t.Fatalf("printed %q, said %q", out.String(), msgs.String())
		}
	})
}
