package config

import (
	"math"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

// TestLoad_Bounds: retries, election.ttl and zookeeper.session_timeout are refused past what
// the ledger and the backends hold, naming the key and the bound.
func TestLoad_Bounds(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  []string
		want []string
	}{
		{"RetriesMaxInt", configtest.MinimalJob + "    retries: 9223372036854775807\n", nil, []string{"jobs[0].retries: must be from 0 to 1000, got 9223372036854775807"}},
		{"RetriesAboveBound", "defaults: {retries: 1001}\n" + configtest.MinimalJob, nil, []string{"defaults.retries: must be from 0 to 1000, got 1001"}},
		{"EtcdTTLAboveLease", configtest.MinimalJob, []string{"SCHEDULER_ELECTION_TTL=2562047h"}, []string{"election.ttl: set by SCHEDULER_ELECTION_TTL: must be at most 2500000h0m0s, the longest lease etcd grants"}},
		{"ZooKeeperSessionAboveProtocol", "election: {backend: zookeeper}\nstore: {dsn: 'postgres://u@h/db'}\nzookeeper: {servers: ['h:1'], session_timeout: 597h}\n" + configtest.MinimalJob, nil,
			[]string{"zookeeper.session_timeout: must be at most 596h31m23.647s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { mustLoadError(t, configtest.Write(t, tc.yaml), tc.env, tc.want...) })
	}
}

// TestLoad_BoundsAccepted: the bounds themselves load.
func TestLoad_BoundsAccepted(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  []string
	}{
		{"RetriesAtBound", configtest.MinimalJob + "    retries: 1000\n", nil},
		{"EtcdTTLAtLease", configtest.MinimalJob, []string{"SCHEDULER_ELECTION_TTL=2500000h"}},
		{"PostgresTTLLongest", "election: {backend: postgres, ttl: 2562047h}\nstore: {dsn: 'postgres://u@h/db'}\n" + configtest.MinimalJob, nil},
		{"ZooKeeperSessionAtProtocol", "election: {backend: zookeeper}\nstore: {dsn: 'postgres://u@h/db'}\nzookeeper: {servers: ['h:1'], session_timeout: 596h31m23.647s}\n" + configtest.MinimalJob, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { loadWant(t, configtest.Write(t, tc.yaml), tc.env) })
	}
}

// TestJob_LongestRun: timeout × attempts saturates instead of wrapping below a run's length.
func TestJob_LongestRun(t *testing.T) {
	j := Job{JobSpec: JobSpec{Timeout: 3000 * time.Hour, Retries: MaxRetries}}
	if got := j.LongestRun(); got != math.MaxInt64 {
		t.Fatalf("LongestRun=%v, want the longest duration", got)
	}
	j.Timeout, j.Retries = time.Hour, 2
	if got := j.LongestRun(); got != 3*time.Hour {
		t.Fatalf("LongestRun=%v, want 3h", got)
	}
}
