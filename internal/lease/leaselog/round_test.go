package leaselog

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/lease"
)

// testLease is a Lease on no server: take answers with takes in turn,
// renewals succeed and release answers releaseErr.
func testLease(takes []Taken[string], takeErr, releaseErr error, released *[]string) *Lease[string] {
	n := 0
	return &Lease[string]{
		Node: "a", Poll: time.Hour, Holding: &lease.Holding[string]{},
		Renewal: lease.Renewal{TTL: 3 * time.Second, Margin: time.Second, Now: time.Now},
		Words:   Words{Renewal: "lease renewal", Gone: "lease gone", Release: "release lease"},
		Take: func(ctx context.Context, holder string) (Taken[string], error) {
			if n == len(takes) {
				return Taken[string]{}, takeErr
			}
			t := takes[n]
			n++
			if t.OK {
				t.Of, t.Sent = holder, time.Now()
			}
			return t, nil
		},
		Renew: func(string) func(context.Context) error { return func(context.Context) error { return nil } },
		Release: func(_ context.Context, of string) error {
			*released = append(*released, of)
			return releaseErr
		},
	}
}

func TestLease_Round(t *testing.T) {
	t.Run("WaitsForTheHolderLeadsAndReleases", func(t *testing.T) {
		core, logs := observer.New(zapcore.DebugLevel)
		var released []string
		errRelease := errors.New("connection reset")
		l := testLease([]Taken[string]{{Wait: time.Millisecond}, {OK: true, Token: 7}}, nil, errRelease, &released)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var led scheduler.Term
		if _, err := l.Round(ctx, func(_ context.Context, term scheduler.Term) error {
			led = term
			return nil
		}, make(chan struct{}), zap.New(core)); err != nil {
			t.Fatalf("Round = %v, want nil", err)
		}
		if led.Token != 7 || led.Node != "a" {
			t.Fatalf("led %+v, want token 7 of node a", led)
		}
		if len(released) != 1 || released[0] == "" {
			t.Fatalf("released %q, want the term's holder once", released)
		}
		if got := logs.FilterMessage("release lease").All(); len(got) != 1 || got[0].Level != zapcore.WarnLevel {
			t.Fatalf("release lease logged %v, want one warning", got)
		}
		if got := logs.FilterMessage("campaign won").All(); len(got) != 1 || got[0].ContextMap()["token"] != int64(7) {
			t.Fatalf("campaign won logged %v, want once with token 7", got)
		}
	})

	t.Run("AttemptErrorEndsTheRound", func(t *testing.T) {
		var released []string
		errDown := errors.New("down")
		l := testLease(nil, errDown, nil, &released)
		held, err := l.Round(context.Background(), func(context.Context, scheduler.Term) error {
			t.Error("led without a lease")
			return nil
		}, make(chan struct{}), zap.NewNop())
		if held != 0 || !errors.Is(err, errDown) || len(released) != 0 {
			t.Fatalf("Round = %v, %v, released %q; want 0, %v, nothing released", held, err, released, errDown)
		}
	})

	t.Run("CancelWhileWaitingEndsTheRound", func(t *testing.T) {
		var released []string
		l := testLease([]Taken[string]{{Wait: time.Hour}}, nil, nil, &released)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		held, err := l.Round(ctx, func(context.Context, scheduler.Term) error { return nil }, make(chan struct{}), zap.NewNop())
		if held != 0 || err != nil || len(released) != 0 {
			t.Fatalf("Round = %v, %v, released %q; want 0, nil, nothing released", held, err, released)
		}
	})

	t.Run("NoteEndsTheWait", func(t *testing.T) {
		var released []string
		l := testLease([]Taken[string]{{Wait: time.Hour}, {OK: true, Token: 8}}, nil, nil, &released)
		notes := make(chan struct{}, 1)
		notes <- struct{}{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := l.Round(ctx, func(context.Context, scheduler.Term) error { return nil }, notes, zap.NewNop()); err != nil || len(released) != 1 {
			t.Fatalf("Round = %v, released %q; want a term after the note", err, released)
		}
	})
}

// TestLease_Campaign: Campaign logs that it campaigns, repeats failed rounds
// and stops its listener before it returns.
func TestLease_Campaign(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	var released []string
	l := testLease(nil, errors.New("down"), nil, &released)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listening := make(chan struct{})
	stopped, failed := false, 0
	l.Campaign(ctx, func(context.Context, scheduler.Term) error { return nil }, func(lctx context.Context, _ chan<- struct{}) {
		close(listening)
		<-lctx.Done()
		stopped = true
	}, zap.New(core).WithOptions(zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == "campaign round failed" {
			if failed++; failed == 2 {
				cancel()
			}
		}
		return nil
	})))
	<-listening
	if !stopped {
		t.Fatal("Campaign returned before its listener did")
	}
	if logs.FilterMessage("campaigning").Len() != 1 || logs.FilterMessage("campaign round failed").Len() < 2 {
		t.Fatalf("logged %v, want campaigning once and failed rounds repeated", logs.All())
	}
}
