-- Backfill, as in Postgres: a run made for a backfill request carries the
-- request's id, 0 for every other run. SQLite has no ADD COLUMN IF NOT
-- EXISTS: the store serialises migrations of one file with a lock of its
-- own (package fence), so this runs once. The requests live in etcd or,
-- without etcd, in Postgres: a backend without etcd needs a shared store.

-- +goose Up
ALTER TABLE runs ADD COLUMN backfill INTEGER NOT NULL DEFAULT 0 CHECK (backfill >= 0);

CREATE INDEX IF NOT EXISTS runs_backfill_idx ON runs (job, backfill) WHERE backfill <> 0;

-- +goose Down
DROP INDEX IF EXISTS runs_backfill_idx;
ALTER TABLE runs DROP COLUMN backfill;
