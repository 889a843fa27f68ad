package redislock

import (
	"context"
	"errors"
	"testing"

	"scheduler/internal/lease/leasetest"
)

func TestObserver_Run(t *testing.T) { leasetest.Observe(t, contract) }

// TestReadLeader_HandWrittenValue: a value no campaigner writes is
// reported, not taken for a leader.
func TestReadLeader_HandWrittenValue(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	if err := s.cli.Set(ctx, testKey, "by hand", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLeader(ctx, s.cli, testKey); err == nil || errors.Is(err, ErrNoLeader) {
		t.Fatalf("ReadLeader of a hand-written value = %v, want an error", err)
	}
}
