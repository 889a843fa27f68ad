package fence

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"scheduler"
)

var noticeT0 = time.Date(2026, 5, 4, 3, 0, 0, 0, time.UTC)

// notice is a notice of job's slot at with one e-mail and one webhook, keyed by the slot.
func notice(job string, at time.Time, after int) *scheduler.Notice {
	key := fmt.Sprintf("notify.%s.%d.failed", job, at.UnixMicro())
	return &scheduler.Notice{After: after, Messages: []scheduler.Message{
		{Key: key + ".e", Kind: scheduler.MessageEmail, Destination: "ops@example.test", Subject: "job " + job + " failed", Body: "output"},
		{Key: key + ".w", Kind: scheduler.MessageWebhook, Destination: "http://hooks.example.test/x", Body: `{"job":"` + job + `"}`},
	}}
}

// finishWith claims job's slot at with token and completes it with status and its notice n.
func finishWith(t *testing.T, ctx context.Context, s *Store, token int64, job string, at time.Time, status scheduler.Status, n *scheduler.Notice) (scheduler.Run, error) {
	t.Helper()
	run, err := s.Claim(ctx, token, "n1", scheduler.SlotKey{Job: job, At: at})
	if err != nil {
		t.Fatal(err)
	}
	return s.Complete(ctx, token, scheduler.Completion{RunID: run.RunID, Job: job, Status: status, Attempt: 1, Notice: n})
}

// slotMessages returns the keys of the messages of job's slot at.
func slotMessages(t *testing.T, ctx context.Context, s *Store, job string, at time.Time) []string {
	t.Helper()
	var keys []string
	for _, m := range mustOutbox(t, ctx, s, "") {
		if m.Job == job && m.ScheduledAt.Equal(at) {
			keys = append(keys, m.Key)
		}
	}
	return keys
}

// TestStore_CompleteNotice: a completion's notice is queued with it, in its transaction, on
// the run's slot and with the writing term's token; a completion refused by the fence, or of a
// run already finished (a redo by the next term), queues nothing.
func TestStore_CompleteNotice(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return noticeT0 }}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"backup"}, 5); err != nil {
			t.Fatal(err)
		}
		run, err := s.Claim(ctx, 5, "n1", scheduler.SlotKey{Job: "backup", At: noticeT0})
		if err != nil {
			t.Fatal(err)
		}
		failed := scheduler.Completion{RunID: run.RunID, Job: "backup", Status: scheduler.StatusFailed, Attempt: 1, Notice: notice("backup", noticeT0, 0)}
		if _, err := s.Complete(ctx, 5, failed); err != nil {
			t.Fatal(err)
		}
		msgs := mustOutbox(t, ctx, s, "")
		if len(msgs) != 2 {
			t.Fatalf("%d messages queued, want 2", len(msgs))
		}
		for _, m := range msgs {
			if m.Job != "backup" || !m.ScheduledAt.Equal(noticeT0) || m.Token != 5 || m.Status != scheduler.MessagePending {
				t.Fatalf("message %+v: want backup's slot, token 5, pending", m)
			}
		}
		t.Run("RedoByTheNextTermQueuesNothing", func(t *testing.T) {
			if err := s.RaiseAll(ctx, []string{"backup"}, 6); err != nil {
				t.Fatal(err)
			}
			again := failed
			again.Notice = notice("backup", noticeT0, 0)
			again.Notice.Messages[0].Key = "notify.backup.other.e" // even under another key
			if _, err := s.Complete(ctx, 6, again); !errors.Is(err, ErrNotRunning) {
				t.Fatalf("second completion: err %v, want ErrNotRunning", err)
			}
			if _, err := s.CompleteMany(ctx, 6, []scheduler.Completion{again, {RunID: 999, Job: "backup", Status: scheduler.StatusFailed, Notice: notice("backup", noticeT0, 0)}}); err != nil {
				t.Fatal(err)
			}
			if n := len(mustOutbox(t, ctx, s, "")); n != 2 {
				t.Fatalf("%d messages after the redo, want 2", n)
			}
		})
		t.Run("StaleTokenQueuesNothing", func(t *testing.T) {
			at := noticeT0.Add(time.Hour)
			run, err := s.Claim(ctx, 6, "n1", scheduler.SlotKey{Job: "backup", At: at})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.RaiseAll(ctx, []string{"backup"}, 7); err != nil {
				t.Fatal(err)
			}
			_, err = s.Complete(ctx, 6, scheduler.Completion{RunID: run.RunID, Job: "backup", Status: scheduler.StatusFailed, Notice: notice("backup", at, 0)})
			if !errors.Is(err, scheduler.ErrFenced) {
				t.Fatalf("stale completion: err %v, want ErrFenced", err)
			}
			if keys := slotMessages(t, ctx, s, "backup", at); len(keys) != 0 {
				t.Fatalf("stale completion queued %v", keys)
			}
		})
		t.Run("BadMessageRefusedBeforeTheWrite", func(t *testing.T) {
			at := noticeT0.Add(2 * time.Hour)
			n := notice("backup", at, 0)
			n.Messages[0].Body = "nul \x00"
			_, err := finishWith(t, ctx, s, 7, "backup", at, scheduler.StatusFailed, n)
			if !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("err %v, want ErrInvalidMessage", err)
			}
		})
	})
}

// TestStore_NoticeAfter: a notice with After N is queued for the N-th consecutive failure of its
// job in slot order, not for the ones before or after it, and again after a success reset the
// count; skipped slots neither count nor reset; missed slots recorded count and notify.
func TestStore_NoticeAfter(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return noticeT0 }}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"etl"}, 3); err != nil {
			t.Fatal(err)
		}
		const F, S, K, M = scheduler.StatusFailed, scheduler.StatusSucceeded, scheduler.StatusSkipped, scheduler.StatusMissed
		steps := []struct {
			status scheduler.Status
			want   bool // notified
		}{{F, false}, {K, false}, {F, true}, {F, false}, {F, false}, {S, false}, {M, false}, {F, true}, {F, false}}
		for i, st := range steps {
			at := noticeT0.Add(time.Duration(i) * time.Minute)
			var n *scheduler.Notice
			if st.status != S && st.status != K {
				n = notice("etl", at, 2)
			}
			switch st.status {
			case M, K:
				if _, err := s.RecordMany(ctx, 3, "n1", []scheduler.Outcome{{Slot: scheduler.SlotKey{Job: "etl", At: at}, Status: st.status, Reason: "test", Notice: n}}); err != nil {
					t.Fatal(err)
				}
			default:
				if _, err := finishWith(t, ctx, s, 3, "etl", at, st.status, n); err != nil {
					t.Fatal(err)
				}
			}
			if got := len(slotMessages(t, ctx, s, "etl", at)) > 0; got != st.want {
				t.Fatalf("step %d (%s): notified=%v, want %v", i, st.status, got, st.want)
			}
		}
	})
}

// TestStore_RecordNotice: a missed slot's notice is queued with its record, once: recording the
// slot again (a redo by the next term) queues nothing, and a stale record queues nothing.
func TestStore_RecordNotice(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return noticeT0 }}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"sync"}, 4); err != nil {
			t.Fatal(err)
		}
		out := scheduler.Outcome{Slot: scheduler.SlotKey{Job: "sync", At: noticeT0}, Status: scheduler.StatusMissed, Reason: "no leader", Notice: notice("sync", noticeT0, 0)}
		if _, err := s.RecordMany(ctx, 4, "n1", []scheduler.Outcome{out}); err != nil {
			t.Fatal(err)
		}
		if n := len(slotMessages(t, ctx, s, "sync", noticeT0)); n != 2 {
			t.Fatalf("%d messages, want 2", n)
		}
		if err := s.RaiseAll(ctx, []string{"sync"}, 5); err != nil {
			t.Fatal(err)
		}
		again := out
		again.Notice = notice("sync", noticeT0, 0)
		again.Notice.Messages[0].Key = "notify.sync.again.e"
		res, err := s.RecordMany(ctx, 5, "n2", []scheduler.Outcome{again})
		if err != nil || res[0].Written {
			t.Fatalf("second record: %+v, %v; want found, not written", res, err)
		}
		if n := len(mustOutbox(t, ctx, s, "")); n != 2 {
			t.Fatalf("%d messages after the redo, want 2", n)
		}
		stale := scheduler.Outcome{Slot: scheduler.SlotKey{Job: "sync", At: noticeT0.Add(time.Hour)}, Status: scheduler.StatusMissed, Notice: notice("sync", noticeT0.Add(time.Hour), 0)}
		if _, err := s.RecordMany(ctx, 4, "n1", []scheduler.Outcome{stale}); !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("stale record: err %v, want ErrFenced", err)
		}
		if n := len(mustOutbox(t, ctx, s, "")); n != 2 {
			t.Fatalf("%d messages after the stale record, want 2", n)
		}
	})
}
