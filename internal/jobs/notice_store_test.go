package jobs_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
)

// failingExec fails every attempt, printing its attempt number.
type failingExec struct{}

func (failingExec) Execute(_ context.Context, a scheduler.Attempt) (string, error) {
	return "attempt " + strconv.Itoa(a.Attempt) + " printed this", fmt.Errorf("attempt %d failed", a.Attempt)
}

// noticeRecorder is a Spec.Notify that keeps the runs it was asked about and makes one e-mail
// per outcome, keyed by its slot and status.
type noticeRecorder struct {
	mu   sync.Mutex
	runs []scheduler.Run
}

func (n *noticeRecorder) notify(r scheduler.Run) *scheduler.Notice {
	n.mu.Lock()
	n.runs = append(n.runs, r)
	n.mu.Unlock()
	return &scheduler.Notice{Messages: []scheduler.Message{{Key: fmt.Sprintf("notify.%s.%d.%s", r.Job, r.ScheduledAt.UnixMicro(), r.Status),
		Kind: scheduler.MessageEmail, Destination: "ops@example.test", Subject: "failed", Body: r.Output}}}
}

func (n *noticeRecorder) asked() []scheduler.Run {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]scheduler.Run(nil), n.runs...)
}

// outbox returns the store's messages by key.
func outbox(ctx context.Context, t *testing.T, store *fence.Store) map[string]scheduler.Message {
	t.Helper()
	msgs, err := store.Outbox(ctx, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]scheduler.Message{}
	for _, m := range msgs {
		by[m.Key] = m
	}
	return by
}

// TestRunner_NotifiesFinalOutcomeOnStore: a run that fails after its retry is notified once, for
// its final outcome only, with its last attempt, the term's token and node and its output; the
// notice is in the outbox as soon as the run is finished in the ledger.
func TestRunner_NotifiesFinalOutcomeOnStore(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		rec := &noticeRecorder{}
		spec := testSpec(t, failingExec{}, "@yearly")
		spec.Retries, spec.RetryBackoff, spec.Notify = 1, time.Millisecond, rec.notify
		r := newRunner(t, spec, "n1", store)
		leadFor(t, r, 10)
		at := time.Now().UTC().Truncate(time.Second)
		trigger(ctx, t, r, at)
		run := waitRun(ctx, t, store, at)
		if run.Status != scheduler.StatusFailed || run.Attempt != 2 {
			t.Fatalf("run=%+v, want failed at attempt 2", run)
		}
		asked := rec.asked()
		if len(asked) != 1 {
			t.Fatalf("notify asked %d times (%+v), want once, for the final outcome", len(asked), asked)
		}
		if a := asked[0]; a.Attempt != 2 || a.Token != 10 || a.Node != "n1" || a.Status != scheduler.StatusFailed ||
			!a.ScheduledAt.Equal(at) || !a.Manual || a.Output != "attempt 2 printed this" || a.Error != "attempt 2 failed" {
			t.Fatalf("notify asked about %+v", a)
		}
		msgs := outbox(ctx, t, store)
		m, ok := msgs[fmt.Sprintf("notify.job.%d.failed", at.UnixMicro())]
		if len(msgs) != 1 || !ok || m.Token != 10 || !m.Manual || !m.ScheduledAt.Equal(at) {
			t.Fatalf("outbox %+v, want the run's one notice", msgs)
		}
	})
}

// TestRunner_NotifiesMissedAtCatchupOnStore: the slots a new leader records missed at catch-up
// are notified with their records, under its token; a slot that succeeds is not notified.
func TestRunner_NotifiesMissedAtCatchupOnStore(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		// The slots are whole minutes of the real clock: keep the test off a minute's turn, where
		// the slots counted and the slots caught up could be a minute apart.
		if s := time.Now().Second(); s >= 55 {
			time.Sleep(time.Duration(61-s) * time.Second)
		}
		// An older leader ran the job 4 minutes ago: the slots since have no run.
		last := time.Now().UTC().Truncate(time.Minute).Add(-4 * time.Minute)
		if err := store.RaiseAll(ctx, []string{"job"}, 5); err != nil {
			t.Fatal(err)
		}
		if run, err := store.Claim(ctx, 5, "n1", scheduler.SlotKey{Job: "job", At: last}); err != nil {
			t.Fatal(err)
		} else if _, err := store.Complete(ctx, 5, scheduler.Completion{RunID: run.RunID, Job: "job", Status: scheduler.StatusSucceeded}); err != nil {
			t.Fatal(err)
		}
		rec := &noticeRecorder{}
		spec := testSpec(t, &countingExec{}, "@every 1m")
		spec.Catchup, spec.Notify = 3*time.Minute, rec.notify
		r := newRunner(t, spec, "n2", store)
		leadFor(t, r, 7)
		var missed []scheduler.Run
		for ctx.Err() == nil {
			runs, err := store.History(ctx, "job", 10)
			if err != nil {
				t.Fatal(err)
			}
			missed = missed[:0]
			for _, r := range runs {
				if r.Status == scheduler.StatusMissed {
					missed = append(missed, r)
				}
			}
			if len(missed) >= 3 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		at := time.Now().UTC().Truncate(time.Second)
		trigger(ctx, t, r, at)
		if run := waitRun(ctx, t, store, at); run.Status != scheduler.StatusSucceeded {
			t.Fatalf("manual run %+v, want succeeded", run)
		}
		msgs := outbox(ctx, t, store)
		if len(msgs) != len(missed) {
			t.Fatalf("%d messages for %d missed slots: %+v", len(msgs), len(missed), msgs)
		}
		for _, r := range missed {
			m, ok := msgs[fmt.Sprintf("notify.job.%d.missed", r.ScheduledAt.UnixMicro())]
			if r.Status != scheduler.StatusMissed || !ok || m.Token != 7 {
				t.Fatalf("slot %+v: message %+v (found %v), want its notice under token 7", r, m, ok)
			}
		}
		for _, a := range rec.asked() {
			if a.Status != scheduler.StatusMissed || a.Token != 7 || a.Node != "n2" {
				t.Fatalf("notify asked about %+v, want missed slots of token 7 on n2 only", a)
			}
		}
	})
}
