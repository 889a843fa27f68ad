package control

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"scheduler"
)

// TestStore_ClaimStore records the deployment's store on a real etcd: the first claim writes
// it, a later claim of another store leaves it and returns it, of claims made at once exactly
// one is recorded and all return it, a value written by hand is refused naming the command
// that removes it, and after that removal (a deliberate move) the next claim records its own.
func TestStore_ClaimStore(t *testing.T) {
	ctx, s := etcdStore(t, "/claim/election")
	a := scheduler.StoreID{ID: "a", Dialect: scheduler.Postgres, Database: "app", Schema: "scheduler"}
	b := scheduler.StoreID{ID: "b", Dialect: scheduler.Postgres, Database: "app", Schema: "elsewhere"}
	if _, ok, err := s.RecordedStore(ctx); ok || err != nil {
		t.Fatalf("record before any claim: ok %t, err %v; want none", ok, err)
	}
	rec, err := s.ClaimStore(ctx, a, "n1")
	if err != nil || !rec.Store.Same(a) || rec.By != "n1" {
		t.Fatalf("first claim: %+v, %v; want a's by n1", rec, err)
	}
	rec, err = s.ClaimStore(ctx, b, "n2")
	if err != nil || !rec.Store.Same(a) || rec.By != "n1" {
		t.Fatalf("claim of another store: %+v, %v; want a's record kept", rec, err)
	}
	if rec, ok, err := s.RecordedStore(ctx); !ok || err != nil || !rec.Store.Same(a) {
		t.Fatalf("record: %+v, ok %t, err %v; want a's", rec, ok, err)
	}

	ctx2, s2 := etcdStore(t, "/race/election")
	var wg sync.WaitGroup
	got := make([]StoreRecord, 8)
	for i := range got {
		id := a
		if i%2 == 1 {
			id = b
		}
		wg.Go(func() {
			var err error
			if got[i], err = s2.ClaimStore(ctx2, id, "n"); err != nil {
				t.Errorf("claim %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i, r := range got {
		if !r.Store.Same(got[0].Store) {
			t.Fatalf("claim %d returned %v, claim 0 %v: want one record for all", i, r.Store, got[0].Store)
		}
	}

	if _, err := s.cli.Put(ctx, s.StoreKey(), "not json"); err != nil {
		t.Fatal(err)
	}
	_, err = s.ClaimStore(ctx, a, "n1")
	if !errors.Is(err, ErrStoreRecordUnreadable) || !strings.Contains(err.Error(), "etcdctl del /claim/election:store") {
		t.Fatalf("claim over a value written by hand: %v; want ErrStoreRecordUnreadable naming etcdctl del /claim/election:store", err)
	}
	if _, _, err := s.RecordedStore(ctx); !errors.Is(err, ErrStoreRecordUnreadable) {
		t.Fatalf("read of a value written by hand: %v; want ErrStoreRecordUnreadable", err)
	}
	if _, err := s.cli.Delete(ctx, s.StoreKey()); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.ClaimStore(ctx, b, "n2"); err != nil || !rec.Store.Same(b) {
		t.Fatalf("claim after the record was removed: %+v, %v; want b's", rec, err)
	}
}
