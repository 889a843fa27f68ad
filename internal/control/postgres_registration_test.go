package control

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/testenv"
)

// TestPostgresRegistration_Run keeps a replica registered in a real Postgres store: the entry
// appears, follows a republish well before its next renewal, is written again after it was
// deleted from outside, and expires once Run has returned.
func TestPostgresRegistration_Run(t *testing.T) {
	ctx, s, pool := pgStore(t)
	var hash atomic.Value
	hash.Store("h1")
	// A long TTL: a republish seen within seconds is the republish, not a renewal.
	const ttl = 30 * time.Second
	reg, err := s.NewRegistration(ttl, hashedReplica(&hash), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	assertPublished(t, reg.Published(), false)
	stop := startRun(ctx, t, reg.Run)
	shows := func(want string) func() bool {
		return func() bool {
			rs, err := s.Replicas(ctx)
			return err == nil && len(rs) == 1 && rs[0].TableHash == want
		}
	}
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "entry a with hash h1", shows("h1"))
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "published", func() bool {
		select {
		case <-reg.Published():
			return true
		default:
			return false
		}
	})

	hash.Store("h2")
	reg.Republish()
	testenv.Eventually(t, 5*time.Second, 20*time.Millisecond, "entry republished with hash h2", shows("h2"))

	stop()
	// Shorten the entry's life by hand, as a TTL would end it, and see nothing renew it.
	if _, err := pool.Exec(ctx, "UPDATE "+pgSchema+".control_replica SET expires_at = clock_timestamp()"); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.Replicas(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("replicas after Run returned = %+v, %v; want none", rs, err)
	}
}

// TestPostgresRegistration_Failing logs a registration the store refuses and keeps trying until
// its context ends.
func TestPostgresRegistration_Failing(t *testing.T) {
	ctx, _, pool := pgStore(t)
	s, err := NewPostgres(pool, "no_such_schema")
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	reg, err := s.NewRegistration(300*time.Millisecond, func() scheduler.Replica { return scheduler.Replica{Node: "a"} }, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := reg.Run(rctx); err != nil {
		t.Fatalf("Run=%v, want nil", err)
	}
	// Renewed every TTL/3 for a second: several failures, logged once (the first of thirty).
	if n := logs.FilterMessage("register replica").Len(); n != 1 {
		t.Fatalf("%d warnings, want 1: %v", n, logs.All())
	}
	assertPublished(t, reg.Published(), false)
}

// assertPublished fails t unless whether ch is closed is want: a registration is published only
// once its entry was written, and a replica waits for that before it campaigns.
func assertPublished(t *testing.T, ch <-chan struct{}, want bool) {
	t.Helper()
	got := false
	select {
	case <-ch:
		got = true
	default:
	}
	if got != want {
		t.Fatalf("published = %v, want %v", got, want)
	}
}

func TestPostgres_NewRegistrationRefuses(t *testing.T) {
	_, s, _ := pgStore(t)
	replica := func() scheduler.Replica { return scheduler.Replica{Node: "a"} }
	if _, err := s.NewRegistration(0, replica, testLogger(t)); err == nil {
		t.Error("NewRegistration with a zero TTL: no error")
	}
	if _, err := s.NewRegistration(time.Second, nil, testLogger(t)); err == nil {
		t.Error("NewRegistration without a replica: no error")
	}
	if _, err := s.NewRegistration(time.Second, replica, nil); err == nil {
		t.Error("NewRegistration without a logger: no error")
	}
}
