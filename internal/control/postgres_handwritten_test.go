package control

import (
	"strings"
	"testing"
	"time"
)

// TestPostgres_InfiniteTimesByHand: rows written into the control tables by hand with a time of
// infinity (a valid timestamptz, a script's "some day") stop nothing: the other requests are
// read and delivered, the other pause records applied, and the infinite ones are left out (a
// trigger, a replica entry that would never expire) or read at the Unix epoch (a pause). Before,
// one such row failed every read of the table: every trigger and every pause and resume of every
// job was held, while `scheduler trigger` reported success.
func TestPostgres_InfiniteTimesByHand(t *testing.T) {
	ctx, s, pool := pgStore(t)
	for _, q := range []string{
		`INSERT INTO ` + pgSchema + `.control_trigger (job, slot, requested_by) VALUES ('other', 'infinity', 'x'), ('other', '-infinity', 'x')`,
		`INSERT INTO ` + pgSchema + `.control_paused (job, paused_by, paused_at) VALUES ('other', 'x', 'infinity')`,
		`INSERT INTO ` + pgSchema + `.control_replica (node, entry, expires_at) VALUES ('forever', '{"version":"v"}', 'infinity')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	p := s.NewPoller(50*time.Millisecond, testLogger(t))
	defer startRun(ctx, t, p.Run)()
	select {
	case <-p.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the poller never read the tables: a row with an infinite time fails every read")
	}
	if _, err := s.Pause(ctx, "tick", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Trigger(ctx, "tick", "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-p.Requests():
		if r.Job != "tick" {
			t.Fatalf("delivered %+v, want tick's request", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tick's trigger not delivered: a row with an infinite slot holds up every request")
	}
	paused, err := s.Paused(ctx)
	if err != nil || !paused["tick"].At.After(time.Unix(0, 0)) || !paused["other"].At.Equal(time.Unix(0, 0).UTC()) {
		t.Fatalf("Paused = %+v, %v; want tick paused now and other at the epoch", paused, err)
	}
	if rs, err := s.Replicas(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("Replicas = %+v, %v; want none: an entry that never expires is no replica's", rs, err)
	}
}

// TestPostgres_ReplicaNodeByHand: a replica row whose node name no replica can have (control
// characters that would reach an operator's terminal through `scheduler status`) is not listed.
func TestPostgres_ReplicaNodeByHand(t *testing.T) {
	ctx, s, pool := pgStore(t)
	node := "\x1b]0;owned\x07\x1b[2J" + strings.Repeat("A", 2000)
	if _, err := pool.Exec(ctx, `INSERT INTO `+pgSchema+`.control_replica (node, entry, expires_at)
		VALUES ($1, '{"version":"v"}', clock_timestamp() + interval '1 hour')`, node); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.Replicas(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("Replicas = %d entries, %v; want none", len(rs), err)
	}
}
