package leaselog

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// seen is a backend's leader type as the tests of View read it.
type seen struct {
	node  string
	token int64
}

func newTestView() (*View[seen], *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return NewView(zap.New(core), func(l seen) (string, int64) { return l.node, l.token }), logs
}

// TestView_LogsChangesOfLeaderOnly: setting the same leader again logs
// nothing; a new token, or nobody, logs "leader changed".
func TestView_LogsChangesOfLeaderOnly(t *testing.T) {
	v, logs := newTestView()
	if _, ok := v.Current(); ok {
		t.Fatal("a new view knows a leader")
	}
	a := seen{node: "a", token: 3}
	v.Set(a, true)
	v.Set(a, true)
	if got, ok := v.Current(); !ok || got != a {
		t.Fatalf("Current = %+v, %v; want %+v, true", got, ok, a)
	}
	v.Set(seen{node: "b", token: 4}, true)
	v.Set(seen{}, false)
	v.Set(seen{}, false)
	changes := logs.FilterMessage("leader changed").All()
	if len(changes) != 3 {
		t.Fatalf("%d changes logged, want 3: %v", len(changes), logs.All())
	}
	if f := changes[1].ContextMap(); f["leader"] != "b" || f["token"] != int64(4) || f["known"] != true {
		t.Fatalf("second change logged %v, want b with token 4", f)
	}
	if _, ok := v.Current(); ok {
		t.Fatal("the view knows a leader after nobody was set")
	}
}

// TestPoll: a read that fails clears the view, and only the first of a row
// is a warning; nobody leading is no failure; a note wakes Poll before its
// poll.
func TestPoll(t *testing.T) {
	v, logs := newTestView()
	errNone, errDown := errors.New("no leader"), errors.New("down")
	a := seen{node: "a", token: 3}
	type answer struct {
		l   seen
		err error
	}
	answers := []answer{{a, nil}, {err: errDown}, {err: errDown}, {err: errNone}, {a, nil}, {err: errDown}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	notes := make(chan struct{}, 1)
	var views []bool
	n := 0
	Poll(ctx, v, func(context.Context) (seen, time.Duration, error) {
		if n > 0 {
			_, ok := v.Current()
			views = append(views, ok)
		}
		if n == len(answers) {
			cancel()
			return seen{}, 0, errNone
		}
		ans := answers[n]
		n++
		notes <- struct{}{} // without it each read would wait an hour
		return ans.l, 0, ans.err
	}, errNone, time.Hour, notes)
	if want := []bool{true, false, false, false, true, false}; len(views) != len(want) {
		t.Fatalf("views %v, want %v", views, want)
	} else {
		for i := range want {
			if views[i] != want[i] {
				t.Fatalf("views %v, want %v", views, want)
			}
		}
	}
	if got := logs.FilterMessage("observe leader").All(); len(got) != 2 || got[0].Level != zapcore.WarnLevel {
		t.Fatalf("observe leader logged %v, want two warnings, one per row of failures", got)
	}
}

// TestPoll_ReadsAgainWhenTheLeaseWouldExpire: a lease read with little time
// left is read again after that time, not after the poll.
func TestPoll_ReadsAgainWhenTheLeaseWouldExpire(t *testing.T) {
	v, _ := newTestView()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reads := 0
	Poll(ctx, v, func(context.Context) (seen, time.Duration, error) {
		reads++
		if reads == 3 {
			cancel()
		}
		return seen{node: "a", token: 1}, time.Millisecond, nil
	}, errors.New("no leader"), time.Hour, make(chan struct{}))
	if reads != 3 {
		t.Fatalf("%d reads before the test's deadline, want 3", reads)
	}
}
