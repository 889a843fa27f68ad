-- The run ledger, the same shape as in Postgres. Times are Unix
-- microseconds (UTC); manual is 0 or 1.

-- +goose Up
CREATE TABLE IF NOT EXISTS runs (
    run_id       INTEGER PRIMARY KEY AUTOINCREMENT,
    job          TEXT NOT NULL,
    scheduled_at INTEGER NOT NULL,
    manual       INTEGER NOT NULL DEFAULT 0 CHECK (manual IN (0, 1)),
    status       TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'skipped', 'missed', 'fenced')),
    token        INTEGER NOT NULL CHECK (token > 0),
    node         TEXT NOT NULL,
    attempt      INTEGER NOT NULL CHECK (attempt >= 0),
    started_at   INTEGER,
    finished_at  INTEGER,
    error        TEXT NOT NULL DEFAULT '' CHECK (length(error) <= 4096),
    output       TEXT NOT NULL DEFAULT '' CHECK (length(output) <= 4096),
    reason       TEXT NOT NULL DEFAULT '' CHECK (length(reason) <= 4096),
    CONSTRAINT runs_slot_key UNIQUE (job, scheduled_at, manual),
    CHECK ((status = 'running') = (finished_at IS NULL))
);

CREATE INDEX IF NOT EXISTS runs_running_idx ON runs (job) WHERE status = 'running';

-- +goose Down
DROP TABLE runs;
