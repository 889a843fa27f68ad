package main

import (
	"strings"
	"testing"
	"time"

	"scheduler/internal/control"
	"scheduler/internal/election"
)

func TestForeignLeader(t *testing.T) {
	rs := []control.Replica{{Node: "a"}, {Node: "b"}}
	key := election.Leader{Node: "x", Token: 7, Key: "/p/election/x", Lease: 0x2a}
	for _, tc := range []struct {
		name   string
		leader election.Leader
		want   string // a part of the problem, "" for none
	}{
		{"RegisteredReplica", election.Leader{Node: "a", Token: 7, Key: "/p/election/2a", Lease: 0x2a}, ""},
		{"ReplicaNotRegisteredYetPublishedItsTerm", election.Leader{Node: "c", Token: 7, Key: "/p/election/2a", Lease: 0x2a, Since: time.Unix(1, 0)}, ""},
		{"NoReplicaNoTerm", key, "etcdctl lease revoke 2a"},
		{"LongValueCut", election.Leader{Node: strings.Repeat("v", 1000), Token: 7, Key: "/p/election/x", Lease: 1}, strings.Repeat("v", maxShownValue) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := foreignLeader(tc.leader, rs)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("foreignLeader = %q, want %q", got, tc.want)
			}
		})
	}
}
