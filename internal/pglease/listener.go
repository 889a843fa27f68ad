package pglease

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"scheduler/internal/lease"
)

// channel returns the NOTIFY channel of the leases in schema. Channel names
// are identifiers, cut at 63 bytes: two long schemas that share a prefix
// only wake each other's followers needlessly.
func channel(schema string) string {
	ch := "leader_lease_" + schema
	if len(ch) > 63 {
		ch = ch[:63]
	}
	return ch
}

// listen signals notes whenever a lease of the channel is granted or
// released, and once after every (re)subscription, since a change may have
// been missed while not subscribed; at most once per lease.MinNoteGap
// (lease.Pacer). It holds one connection of pool out of the pool while it
// runs, and returns when ctx is done.
func listen(ctx context.Context, pool *pgxpool.Pool, ch string, notes chan<- struct{}, lg *zap.Logger) {
	failures := 0
	pace := lease.NewPacer(notes)
	for {
		err := listenOnce(ctx, pool, ch, pace)
		if ctx.Err() != nil {
			return
		}
		failures++
		if failures == 1 {
			lg.Warn("listen for lease changes", zap.String("channel", ch), zap.Error(err))
		} else {
			lg.Debug("listen for lease changes", zap.String("channel", ch), zap.Int("attempt", failures), zap.Error(err))
		}
		t := time.NewTimer(min(time.Duration(failures)*200*time.Millisecond, 5*time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenOnce subscribes on one connection and marks pace until the
// connection fails or ctx is done.
func listenOnce(ctx context.Context, pool *pgxpool.Pool, ch string, pace *lease.Pacer) error {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire connection: %w", err)
	}
	// A connection that waited for notifications is not fit for the pool
	// again: it stays subscribed, and a cancelled wait may have broken it.
	conn := pc.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
		return fmt.Errorf("listen %s: %w", ch, err)
	}
	for {
		pace.Mark()
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait for notification on %s: %w", ch, err)
		}
	}
}
