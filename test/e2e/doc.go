// Package e2e is the end-to-end fault suite: it builds the scheduler binary and runs three
// replicas of it, each in its own process group, against a three-member etcd cluster of separate
// processes (the helper in etcdmember) and a throwaway Postgres, with a TCP proxy between each
// replica and every server, then freezes, kills, partitions and slows them and checks from the
// data in Postgres that every slot had one effect and no stale write got through. The scenarios
// and their figures are described in RELIABILITY.md at the root of the repository.
//
// The package holds tests only; run it with
//
//	go test -race ./test/e2e/ [-v] [-e2e.seed=N] [-e2e.repeat=N] [-e2e.soak]
//
// E2E_ETCD_ENDPOINTS and E2E_POSTGRES_DSN point the suite at servers it did not start.
//
// TestNemesis (nemesis_*_test.go) mixes the faults instead: random faults, one or several at a
// time, against a running workload on every election backend, checked from the data as it goes
// and at the end; `make soak` runs it for an hour per backend:
//
//	go test ./test/e2e/ -run '^TestNemesis$' -v -args [-nemesis.seed=N] [-nemesis.duration=D] [-nemesis.backend=B]
package e2e
