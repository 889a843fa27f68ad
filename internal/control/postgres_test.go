package control

import (
	"bytes"
	"context"
	"io/fs"
	"strings"
	"testing"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler"
	"scheduler/internal/testenv"
	"scheduler/migrations"
)

const pgSchema = "sched"

// pgStore returns a Postgres on a fresh database whose schema holds the
// tables of the store's migration 00009, created from that file.
func pgStore(t *testing.T) (context.Context, *Postgres, *pgxpool.Pool) {
	t.Helper()
	ctx := testCtx(t)
	pool, err := pgxpool.New(ctx, testenv.MustDatabase(t))
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgSchema+"; "+migrationUp(t, "00009_control.sql")); err != nil {
		t.Fatalf("migration 00009: %v", err)
	}
	s, err := NewPostgres(pool, pgSchema)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, s, pool
}

// migrationUp returns the Up part of the store's Postgres migration file, for pgSchema.
func migrationUp(t *testing.T, file string) string {
	t.Helper()
	text, err := fs.ReadFile(migrations.Postgres(), file)
	if err != nil {
		t.Fatal(err)
	}
	up := strings.Split(string(text), "-- +goose Down")[0]
	var buf bytes.Buffer
	data := struct{ Schema, Name string }{Schema: pgx.Identifier{pgSchema}.Sanitize(), Name: pgSchema}
	if err := template.Must(template.New(file).Parse(up)).Execute(&buf, data); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestPostgres(t *testing.T) {
	ctx, s, _ := pgStore(t)

	t.Run("PauseAndResume", func(t *testing.T) {
		if ok, err := s.Pause(ctx, "tick", "alice"); err != nil || !ok {
			t.Fatalf("pause = %v, %v; want true", ok, err)
		}
		if ok, err := s.Pause(ctx, "tick", "bob"); err != nil || ok {
			t.Fatalf("second pause = %v, %v; want false", ok, err)
		}
		paused, err := s.Paused(ctx)
		if err != nil || paused["tick"].By != "alice" || len(paused) != 1 {
			t.Fatalf("paused = %+v, %v; want tick by alice, the first record", paused, err)
		}
		if ok, err := s.Resume(ctx, "tick"); err != nil || !ok {
			t.Fatalf("resume = %v, %v", ok, err)
		}
		if ok, err := s.Resume(ctx, "tick"); err != nil || ok {
			t.Fatalf("second resume = %v, %v; want false", ok, err)
		}
		if _, err := s.Pause(ctx, "Bad Name", "x"); err == nil {
			t.Fatal("pause of an invalid job name accepted")
		}
	})

	t.Run("TriggerAndDone", func(t *testing.T) {
		at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
		r1, err := s.Trigger(ctx, "yearly", "alice", at)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Trigger(ctx, "yearly", "bob", at.Add(100)); err != nil { // the same microsecond
			t.Fatal(err)
		}
		if _, err := s.Trigger(ctx, "tick", "carol", at.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Requests(ctx)
		if err != nil || len(rs) != 2 || rs[0].Job != "tick" || rs[1] != r1 || !r1.At.Equal(at.Truncate(time.Microsecond)) {
			t.Fatalf("requests = %+v, %v; want tick, then yearly once at %v", rs, err, at.Truncate(time.Microsecond))
		}
		if err := s.Done(ctx, r1); err != nil {
			t.Fatal(err)
		}
		if err := s.Done(ctx, r1); err != nil {
			t.Fatalf("done twice: %v", err)
		}
		if err := s.Done(ctx, Request{Job: "tick", At: at, Key: "/elsewhere"}); err == nil {
			t.Fatal("done with a key of another store accepted")
		}
		if rs, err := s.Requests(ctx); err != nil || len(rs) != 1 {
			t.Fatalf("requests after done = %+v, %v", rs, err)
		}
	})

	t.Run("Registry", func(t *testing.T) {
		r := scheduler.Replica{Node: "a", Version: "v1", TableHash: "h1", StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		if err := s.Register(ctx, r, time.Minute); err != nil {
			t.Fatal(err)
		}
		r.TableHash = "h2"
		if err := s.Register(ctx, r, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Register(ctx, scheduler.Replica{Node: "b"}, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := s.Register(ctx, scheduler.Replica{Node: "c"}, 0); err == nil {
			t.Fatal("a registration without a TTL accepted")
		}
		testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, "b's entry to expire by the database's clock", func() bool {
			rs, err := s.Replicas(ctx)
			return err == nil && len(rs) == 1 && rs[0] == r
		})
	})
}

// TestPostgres_ClipsHandWrittenBy: rows written into the control tables by hand (the store's
// owner, a restored dump) with a huge or control-laden requester are read with it clipped, as
// the etcd store's records are: the console, status and the leader's log show it.
func TestPostgres_ClipsHandWrittenBy(t *testing.T) {
	ctx, s, pool := pgStore(t)
	huge := strings.Repeat("é", 1<<20)
	if _, err := pool.Exec(ctx, `INSERT INTO `+pgSchema+`.control_paused (job, paused_by, paused_at) VALUES ('a', $1, now()), ('b', $2, now())`,
		huge, "al\x1b[31mice"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+pgSchema+`.control_trigger (job, slot, requested_by) VALUES ('a', now(), $1)`, huge); err != nil {
		t.Fatal(err)
	}
	clipped := func(by string) bool {
		return len(by) <= maxReplicaField+len("…") && utf8.ValidString(by) && strings.HasSuffix(by, "…")
	}
	paused, err := s.Paused(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if by := paused["a"].By; !clipped(by) {
		t.Errorf("paused by %.40q… (%d bytes), want it clipped", by, len(by))
	}
	if by := paused["b"].By; by != "al[31mice" {
		t.Errorf("paused by %q, want its control characters dropped", by)
	}
	rs, err := s.Requests(ctx)
	if err != nil || len(rs) != 1 {
		t.Fatalf("requests = %d, %v; want 1", len(rs), err)
	}
	if by := rs[0].By; !clipped(by) {
		t.Errorf("requested by %.40q… (%d bytes), want it clipped", by, len(by))
	}
	// The key still names the row: Done removes it.
	if err := s.Done(ctx, rs[0]); err != nil {
		t.Fatal(err)
	}
}

func TestPostgres_Unreachable(t *testing.T) {
	ctx, _, pool := pgStore(t)
	s, err := NewPostgres(pool, "no_such_schema")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pause(ctx, "tick", "a"); err == nil || !strings.Contains(err.Error(), `pause "tick"`) {
		t.Fatalf("pause = %v, want the store's error naming the job", err)
	}
	if _, err := s.Requests(ctx); err == nil {
		t.Fatal("requests read from a missing table")
	}
	if err := s.Register(ctx, scheduler.Replica{Node: "a"}, time.Second); err == nil {
		t.Fatal("register wrote to a missing table")
	}
	if _, err := s.Replicas(ctx); err == nil {
		t.Fatal("replicas read from a missing table")
	}
	// The poller keeps trying and never says it is ready: a leader fires nothing meanwhile.
	p := s.NewPoller(100*time.Millisecond, testLogger(t))
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := p.Run(pctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Ready():
		t.Fatal("ready without a successful read")
	default:
	}
	if _, err := NewPostgres(nil, pgSchema); err == nil {
		t.Fatal("nil pool accepted")
	}
}

func TestPoller(t *testing.T) {
	ctx, s, _ := pgStore(t)
	if _, err := s.Pause(ctx, "tick", "a"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := s.Trigger(ctx, "yearly", "a", at); err != nil {
		t.Fatal(err)
	}
	p := s.NewPoller(100*time.Millisecond, testLogger(t))
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("poller: %v", err)
		}
		for range p.Requests() { // closed by Run
		}
	}()
	select {
	case <-p.Ready():
	case <-ctx.Done():
		t.Fatal("poller never ready")
	}
	if !p.Paused("tick") || p.Paused("yearly") {
		t.Fatal("paused set not read before Ready")
	}
	recvFrom := func() Request {
		t.Helper()
		select {
		case r := <-p.Requests():
			return r
		case <-ctx.Done():
			t.Fatal("no request delivered")
		}
		return Request{}
	}
	r := recvFrom()
	if r.Job != "yearly" || !r.At.Equal(at) {
		t.Fatalf("request %+v", r)
	}

	t.Run("AnUnreadRequestHoldsUpNothing", func(t *testing.T) {
		// The request above is not done and nobody reads: the paused set still follows.
		if _, err := s.Resume(ctx, "tick"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Trigger(ctx, "tick", "a", at.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, "tick resumed", func() bool { return !p.Paused("tick") })
		if r := recvFrom(); r.Job != "tick" {
			t.Fatalf("request %+v, want tick's; yearly's was delivered already", r)
		}
	})

	t.Run("DoneThenRequestedAgain", func(t *testing.T) {
		if err := s.Done(ctx, r); err != nil {
			t.Fatal(err)
		}
		// Let a read see the request gone before it comes back.
		testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, "the done request forgotten", func() bool {
			rs, err := s.Requests(ctx)
			return err == nil && len(rs) == 1
		})
		time.Sleep(300 * time.Millisecond)
		if _, err := s.Trigger(ctx, "yearly", "a", at); err != nil {
			t.Fatal(err)
		}
		if again := recvFrom(); again != r {
			t.Fatalf("request %+v, want %+v again", again, r)
		}
	})
	if err := p.Run(ctx); err == nil {
		t.Fatal("second Run accepted")
	}
}
