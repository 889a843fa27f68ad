package election

import (
	"context"
	"errors"
	"testing"

	"scheduler/internal/testenv"
)

func TestCampaigner_Confirm(t *testing.T) {
	etcd := testenv.MustEtcd(t)
	cli := etcd.Client(t)
	ctx := testContext(t)
	w := newWorld(t, "/test/confirm")
	terms := make(chan Term, 1)
	release := make(chan struct{})
	n := w.start(cli, "a", withHold(func(ctx context.Context, tm Term) error {
		terms <- tm
		select {
		case <-release:
		case <-ctx.Done():
		}
		<-ctx.Done()
		return nil
	}))
	var tm Term
	select {
	case tm = <-terms:
	case <-ctx.Done():
		t.Fatal("no term won")
	}

	if err := n.c.Confirm(ctx, tm.Token); err != nil {
		t.Fatalf("Confirm(%d) while leading = %v, want nil", tm.Token, err)
	}
	if err := n.c.Confirm(ctx, tm.Token+1); !errors.Is(err, errNotConfirmed) {
		t.Fatalf("Confirm(%d) with another token = %v, want errNotConfirmed", tm.Token+1, err)
	}
	// The key deleted (by an operator, or the lease expired on the server): not confirmed, even
	// before the campaigner's watch ends the term.
	if _, err := cli.Delete(ctx, tm.Key); err != nil {
		t.Fatalf("delete the leader key: %v", err)
	}
	if err := n.c.Confirm(ctx, tm.Token); !errors.Is(err, errNotConfirmed) {
		t.Fatalf("Confirm(%d) after the key was deleted = %v, want errNotConfirmed", tm.Token, err)
	}
	close(release)
	n.stop(t)
	if err := n.c.Confirm(ctx, tm.Token); !errors.Is(err, errNotConfirmed) {
		t.Fatalf("Confirm(%d) after the term = %v, want errNotConfirmed", tm.Token, err)
	}
}
