package status

import (
	"context"
	"testing"

	"scheduler"
)

// TestCollect_StoreSplit: status warns when registered replicas write to different stores,
// naming each store and its replicas; one store reached by different addresses is one store,
// and a replica of a version that publishes no store is left out.
func TestCollect_StoreSplit(t *testing.T) {
	one := scheduler.StoreID{ID: "s1", Dialect: scheduler.Postgres, Database: "app", Schema: "scheduler", Name: "postgres db-1"}
	sameByProxy := one
	sameByProxy.Name = "postgres proxy"
	other := scheduler.StoreID{ID: "s2", Dialect: scheduler.Postgres, Database: "app", Schema: "elsewhere", Name: "postgres db-1"}
	cases := []struct {
		name     string
		replicas []scheduler.Replica
		want     string // "" for no warning
	}{
		{"OneStore", []scheduler.Replica{{Node: "a", Store: &one}, {Node: "b", Store: &sameByProxy}, {Node: "old"}}, ""},
		{"TwoStores", []scheduler.Replica{{Node: "a", Store: &one}, {Node: "b", Store: &other}, {Node: "c", Store: &sameByProxy}, {Node: "old"}},
			`replicas write to different stores (a,c: postgres store, database "app", schema "scheduler", id s1; b: postgres store, database "app", schema "elsewhere", id s2)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{replicas: func() ([]scheduler.Replica, error) { return tc.replicas, nil }}
			doc := Collect(context.Background(), src, Explain{}, nil, testNow)
			if got := hasWarning(doc, "different stores"); got != (tc.want != "") || tc.want != "" && !hasWarning(doc, tc.want) {
				t.Fatalf("warnings=%q, want %q", doc.Warnings, tc.want)
			}
		})
	}
}
