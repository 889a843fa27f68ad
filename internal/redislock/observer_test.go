package redislock

import (
	"context"
	"errors"
	"strings"
	"testing"

	"scheduler/internal/lease/leasetest"
)

func TestObserver_Run(t *testing.T) { leasetest.Observe(t, contract) }

// TestReadLeader_HandWrittenValue: a value no campaigner writes is
// reported as a problem with its remedy, not taken for a leader.
func TestReadLeader_HandWrittenValue(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	if err := s.cli.Set(ctx, testKey, "by hand", 0).Err(); err != nil {
		t.Fatal(err)
	}
	l, err := ReadLeader(ctx, s.cli, testKey)
	if !errors.Is(err, ErrNoLeader) || len(l.Problems) != 1 || !strings.Contains(l.Problems[0], "redis-cli DEL "+testKey) {
		t.Fatalf("ReadLeader of a hand-written value = %+v, %v; want no leader and the problem with its remedy", l, err)
	}
}
