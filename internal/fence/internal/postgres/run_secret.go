package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
)

// runKey is the store's key of run secrets (table run_key, made by
// migration 13), read once and kept: it never changes.
type runKey struct {
	mu  sync.Mutex
	key []byte
}

// RunSecret returns the secret of the run runID (decimal digits, which the
// caller checks): runID, a dot, and the hex SHA-256 of the store's run key
// followed by runID, what outbox_enqueue expects in scheduler.run_secret
// for a role's message of that run (migration 13).
func (p *Backend) RunSecret(ctx context.Context, runID string) (string, error) {
	key, err := p.runKey(ctx)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(key)
	h.Write([]byte(runID))
	return runID + "." + hex.EncodeToString(h.Sum(nil)), nil
}

// runKey returns the store's run key, reading it on first use.
func (p *Backend) runKey(ctx context.Context) ([]byte, error) {
	p.secrets.mu.Lock()
	defer p.secrets.mu.Unlock()
	if p.secrets.key != nil {
		return p.secrets.key, nil
	}
	var key []byte
	if err := p.pool.QueryRow(ctx, `SELECT key FROM `+pgx.Identifier{p.schema, "run_key"}.Sanitize()).Scan(&key); err != nil {
		return nil, fmt.Errorf("read the run key of schema %q: %w", p.schema, err)
	}
	p.secrets.key = key
	return key, nil
}
