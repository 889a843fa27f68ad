package control

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestStore_ListFails(t *testing.T) {
	t.Parallel()
	_, s := etcdStore(t, "/list/election")
	for _, tc := range []struct {
		name   string
		list   func(context.Context) error
		prefix string
	}{
		{"Paused", func(ctx context.Context) error { _, err := s.Paused(ctx); return err }, s.k.pausedPrefix()},
		{"Replicas", func(ctx context.Context) error { _, err := s.Replicas(ctx); return err }, s.k.replicaPrefix()},
		{"Requests", func(ctx context.Context) error { _, err := s.Requests(ctx); return err }, s.k.triggerPrefix()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testCtx(t))
			cancel()
			err := tc.list(ctx)
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "under "+tc.prefix) {
				t.Fatalf("%s with a cancelled context = %v, want context.Canceled naming %s", tc.name, err, tc.prefix)
			}
		})
	}
}
