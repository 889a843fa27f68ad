-- The fence on the embedded store. SQLite has one writer at a time: every
-- fenced transaction is BEGIN IMMEDIATE, so the check, the raise and the
-- writes of one transaction are serial with every other writer and the
-- check is done by package fence inside that transaction. IF NOT EXISTS
-- makes a migration that two processes apply at once harmless.

-- +goose Up
CREATE TABLE IF NOT EXISTS job_fence (
    job       TEXT PRIMARY KEY,
    token     INTEGER NOT NULL CHECK (token > 0),
    raised_at INTEGER NOT NULL -- Unix microseconds
) WITHOUT ROWID;

-- +goose Down
DROP TABLE job_fence;
