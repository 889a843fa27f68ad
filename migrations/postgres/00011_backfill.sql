-- Backfill (`scheduler backfill`): a run made for a backfill request carries
-- the request's id, 0 for every other run. The ledger still keeps one run
-- per slot: a backfill of a slot that has a run takes that run over as its
-- next attempt. The requests themselves, with their progress, live in
-- control_backfill for the election backends without etcd (package control).

-- +goose Up
ALTER TABLE {{.Schema}}.runs ADD COLUMN IF NOT EXISTS backfill bigint NOT NULL DEFAULT 0 CHECK (backfill >= 0);

CREATE INDEX IF NOT EXISTS runs_backfill_idx ON {{.Schema}}.runs (job, backfill) WHERE backfill <> 0;

CREATE TABLE IF NOT EXISTS {{.Schema}}.control_backfill (
    job     text NOT NULL,
    id      bigint NOT NULL CHECK (id > 0),
    request jsonb NOT NULL,
    PRIMARY KEY (job, id)
);

REVOKE ALL ON {{.Schema}}.control_backfill FROM PUBLIC;

-- +goose Down
DROP TABLE IF EXISTS {{.Schema}}.control_backfill;
DROP INDEX IF EXISTS {{.Schema}}.runs_backfill_idx;
ALTER TABLE {{.Schema}}.runs DROP COLUMN IF EXISTS backfill;
