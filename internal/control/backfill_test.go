package control

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// backfills is what both stores offer for backfill requests.
type backfills interface {
	SubmitBackfill(ctx context.Context, b Backfill) (Backfill, error)
	Backfills(ctx context.Context) ([]Backfill, error)
	Backfill(ctx context.Context, job string, id int64) (Backfill, bool, error)
	UpdateBackfill(ctx context.Context, b Backfill) error
}

var (
	_ backfills = (*Store)(nil)
	_ backfills = (*Postgres)(nil)
)

// pgBackfillStore is pgStore with control_backfill created from migration 00011.
func pgBackfillStore(t *testing.T) (context.Context, *Postgres) {
	t.Helper()
	ctx, s, pool := pgStore(t)
	var sql []string
	for _, line := range strings.Split(migrationUp(t, "00011_backfill.sql"), "\n") {
		if !strings.HasPrefix(line, "--") {
			sql = append(sql, line)
		}
	}
	for _, stmt := range strings.Split(strings.Join(sql, "\n"), ";") {
		if strings.Contains(stmt, "control_backfill") {
			if _, err := pool.Exec(ctx, stmt); err != nil {
				t.Fatalf("migration 00011: %v", err)
			}
		}
	}
	return ctx, s
}

// TestBackfills: a request is submitted once, listed oldest first, read back, and updated with
// the leader's progress; bad names are refused.
func TestBackfills(t *testing.T) {
	cases := map[string]func(t *testing.T) (context.Context, backfills){
		"etcd": func(t *testing.T) (context.Context, backfills) { return etcdStore(t, "/scheduler/election") },
		"postgres": func(t *testing.T) (context.Context, backfills) {
			return pgBackfillStore(t)
		},
	}
	for name, open := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, s := open(t)
			from := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
			b := Backfill{Job: "invoices", ID: 2000, From: from, To: from.Add(23 * time.Hour), Rerun: true, Overlap: "queue", By: "ops@n1"}
			got, err := s.SubmitBackfill(ctx, b)
			if err != nil || got.State != BackfillPending {
				t.Fatalf("submit = %+v (err %v), want pending", got, err)
			}
			if _, err := s.SubmitBackfill(ctx, b); !errors.Is(err, ErrBackfillExists) {
				t.Fatalf("submit again: err %v, want ErrBackfillExists", err)
			}
			if _, err := s.SubmitBackfill(ctx, Backfill{Job: "stock", ID: 1000, From: from, To: from}); err != nil {
				t.Fatal(err)
			}
			all, err := s.Backfills(ctx)
			if err != nil || len(all) != 2 || all[0].Job != "stock" || all[1].Job != "invoices" {
				t.Fatalf("backfills = %+v (err %v), want stock then invoices", all, err)
			}
			if r := all[1]; !r.From.Equal(b.From) || !r.To.Equal(b.To) || !r.Rerun || r.Overlap != "queue" || r.By != "ops@n1" || r.Finished() {
				t.Fatalf("request read back = %+v, want it as submitted", r)
			}
			got.State, got.Total, got.Done, got.Succeeded, got.Node = BackfillDone, 24, 24, 24, "n2"
			if err := s.UpdateBackfill(ctx, got); err != nil {
				t.Fatal(err)
			}
			r, ok, err := s.Backfill(ctx, "invoices", 2000)
			if err != nil || !ok || !r.Finished() || r.Done != 24 || r.Node != "n2" {
				t.Fatalf("backfill after the update = %+v, %v (err %v), want done, 24 slots, by n2", r, ok, err)
			}
			if _, ok, err := s.Backfill(ctx, "invoices", 1); ok || err != nil {
				t.Fatalf("unknown request: ok %v, err %v", ok, err)
			}
			if err := s.UpdateBackfill(ctx, Backfill{Job: "gone", ID: 5}); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := s.Backfill(ctx, "gone", 5); ok {
				t.Fatal("an update of a request that does not exist created it")
			}
			for _, bad := range []Backfill{{Job: "", ID: 1}, {Job: "a/b", ID: 1}, {Job: "ok", ID: 0}} {
				if _, err := s.SubmitBackfill(ctx, bad); err == nil {
					t.Errorf("submit %+v: no error", bad)
				}
			}
		})
	}
}
