package pglease

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"scheduler/internal/lease/leasetest"
	"scheduler/internal/testenv"
)

// TestCampaigner_HandWrittenRows: the lease row as the scheduler's own role can write it by hand.
// A row that names no holder or no node is free whatever its expiry (every term names both); a token set
// back still yields a token above the row's and every fence; a token at the bigint maximum stops
// the campaign at error level, naming the row and the statement that sets it back.
func TestCampaigner_HandWrittenRows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(t *testing.T, s *server) (*leasetest.Campaign, *observer.ObservedLogs) {
		core, logs := observer.New(zapcore.DebugLevel)
		c, err := New(s.pool, Config{Schema: testSchema, Name: "scheduler", Node: "a", TTL: 2 * time.Second}, zap.New(core))
		if err != nil {
			t.Fatal(err)
		}
		var seq atomic.Int64
		return leasetest.Run(t, c, &seq, false), logs
	}
	exec := func(t *testing.T, s *server, q string) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	for name, q := range map[string]string{
		"NoHolderFarExpiry": `INSERT INTO sched.leader_lease (name, node, holder, token, since, expires_at)
VALUES ('scheduler', NULL, NULL, 40, now(), 'infinity')`,
		"NodeButNoHolder": `INSERT INTO sched.leader_lease (name, node, holder, token, since, expires_at)
VALUES ('scheduler', 'intruder', NULL, 40, now(), now() + interval '1 day')`,
		"HolderButNoNode": `INSERT INTO sched.leader_lease (name, node, holder, token, since, expires_at)
VALUES ('scheduler', NULL, 'outsider', 40, now(), 'infinity')`,
		"HolderButEmptyNode": `INSERT INTO sched.leader_lease (name, node, holder, token, since, expires_at)
VALUES ('scheduler', '', 'outsider', 40, now(), 'infinity')`,
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t)
			exec(t, s, `INSERT INTO sched.job_fence (job, token) VALUES ('x', 7)`)
			exec(t, s, q)
			r, _ := start(t, s)
			if e := leasetest.Next(t, r.Won, 15*time.Second, "a term despite the row written by hand"); e.Term.Token != 41 {
				t.Fatalf("token=%d, want 41: above the row's token", e.Term.Token)
			}
		})
	}

	// Not a campaigner's, but not to be told from one: it is read as the leader, whatever its expiry.
	t.Run("AnotherHolderForEver", func(t *testing.T) {
		s := newServer(t)
		exec(t, s, `INSERT INTO sched.leader_lease (name, node, holder, token, since, expires_at)
VALUES ('scheduler', 'intruder', 'outsider', 40, now(), 'infinity')`)
		l, err := ReadLeader(ctx, s.pool, testSchema, "scheduler")
		if err != nil || l.Node != "intruder" || l.Token != 40 || l.Remaining < 100*365*24*time.Hour {
			t.Fatalf("ReadLeader = %+v, %v; want intruder with token 40 for centuries", l, err)
		}
	})

	t.Run("TokenSetBack", func(t *testing.T) {
		s := newServer(t)
		exec(t, s, `INSERT INTO sched.job_fence (job, token) VALUES ('x', 70)`)
		exec(t, s, `INSERT INTO sched.leader_lease (name, node, holder, token, since, expires_at)
VALUES ('scheduler', NULL, NULL, 1, now(), '-infinity')`)
		r, _ := start(t, s)
		if e := leasetest.Next(t, r.Won, 15*time.Second, "a term"); e.Term.Token != 71 {
			t.Fatalf("token=%d, want 71: above the fence", e.Term.Token)
		}
	})

	t.Run("TokenAtTheMaximum", func(t *testing.T) {
		s := newServer(t)
		exec(t, s, `INSERT INTO sched.job_fence (job, token) VALUES ('x', 7)`)
		exec(t, s, `INSERT INTO sched.leader_lease (name, node, holder, token, since, expires_at)
VALUES ('scheduler', NULL, NULL, 9223372036854775807, now(), '-infinity')`)
		r, logs := start(t, s)
		testenv.Eventually(t, 15*time.Second, 50*time.Millisecond, "an error naming the row and its remedy", func() bool {
			for _, e := range logs.FilterLevelExact(zapcore.ErrorLevel).All() {
				if err, _ := e.ContextMap()["error"].(string); strings.Contains(err, `UPDATE "sched".leader_lease SET token = 7 WHERE name = 'scheduler'`) {
					return true
				}
			}
			return false
		})
		select {
		case e := <-r.Won:
			t.Fatalf("won term %d past the largest token", e.Term.Token)
		default:
		}
	})
}

// TestReadLeader_InfiniteSince: a lease row whose grant time was written by hand as infinity (a
// valid timestamptz) is read, its time as the Unix epoch, so that status still names the holder.
// Before, every read failed: status could show neither the leader nor a foreign hold's remedy.
func TestReadLeader_InfiniteSince(t *testing.T) {
	s := newServer(t)
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+testSchema+`.leader_lease (name, node, holder, token, since, expires_at)
		VALUES ('scheduler', 'intruder', 'h', 7, 'infinity', clock_timestamp() + interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	l, err := ReadLeader(ctx, s.pool, testSchema, "scheduler")
	if err != nil || l.Node != "intruder" || l.Token != 7 || !l.Since.Equal(time.Unix(0, 0)) {
		t.Fatalf("ReadLeader = %+v, %v; want intruder, token 7, since the epoch", l, err)
	}
}
