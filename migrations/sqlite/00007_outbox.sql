-- The outbox, the same shape as in Postgres: the e-mails and webhooks of a
-- job's runs, written in the same fenced transaction as the run's results
-- and delivered afterwards by the leader's dispatcher. SQLite has no roles
-- and no functions: package fence checks the fence in Go, and scripts that
-- write the file themselves are trusted with it. Times are Unix
-- microseconds (UTC); manual is 0 or 1.

-- +goose Up
CREATE TABLE IF NOT EXISTS outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    key             TEXT NOT NULL UNIQUE CHECK (length(key) BETWEEN 1 AND 200 AND key NOT GLOB '*[^A-Za-z0-9._~/+=-]*'
                        AND key NOT GLOB '.*' AND key NOT GLOB '*.' AND key NOT GLOB '*..*'),
    job             TEXT NOT NULL CHECK (length(job) BETWEEN 1 AND 200),
    scheduled_at    INTEGER NOT NULL,
    manual          INTEGER NOT NULL DEFAULT 0 CHECK (manual IN (0, 1)),
    token           INTEGER NOT NULL CHECK (token > 0),
    kind            TEXT NOT NULL CHECK (kind IN ('email', 'webhook')),
    destination     TEXT NOT NULL CHECK (length(destination) BETWEEN 1 AND 2048),
    subject         TEXT NOT NULL DEFAULT '' CHECK (length(subject) <= 998),
    body            TEXT NOT NULL DEFAULT '' CHECK (length(body) <= 1048576),
    status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'delivered', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at INTEGER NOT NULL,
    claim_token     INTEGER NOT NULL DEFAULT 0 CHECK (claim_token >= 0),
    last_error      TEXT NOT NULL DEFAULT '' CHECK (length(last_error) <= 4096),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    delivered_at    INTEGER,
    CHECK ((status = 'delivered') = (delivered_at IS NOT NULL))
);

CREATE INDEX IF NOT EXISTS outbox_due_idx ON outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS outbox_sending_idx ON outbox (claim_token) WHERE status = 'sending';
CREATE INDEX IF NOT EXISTS outbox_slot_idx ON outbox (job, scheduled_at, manual);

-- +goose Down
DROP TABLE outbox;
