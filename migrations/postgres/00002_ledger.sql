-- The run ledger: one row per (job, slot). A scheduled slot is keyed by its
-- time; a manual run by its trigger time with manual = true, so the two
-- never collide. Claiming and completing are fenced writes (package fence).

-- +goose Up
CREATE TABLE {{.Schema}}.runs (
    run_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job          text NOT NULL,
    scheduled_at timestamptz NOT NULL,
    manual       boolean NOT NULL DEFAULT false,
    status       text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'skipped', 'missed', 'fenced')),
    token        bigint NOT NULL CHECK (token > 0),
    node         text NOT NULL,
    attempt      integer NOT NULL CHECK (attempt >= 0),
    started_at   timestamptz,
    finished_at  timestamptz,
    error        text NOT NULL DEFAULT '' CHECK (length(error) <= 4096),
    output       text NOT NULL DEFAULT '' CHECK (length(output) <= 4096),
    reason       text NOT NULL DEFAULT '' CHECK (length(reason) <= 4096),
    CONSTRAINT runs_slot_key UNIQUE (job, scheduled_at, manual),
    CHECK ((status = 'running') = (finished_at IS NULL))
);

-- Running rows are few; orphan detection scans only them.
CREATE INDEX runs_running_idx ON {{.Schema}}.runs (job) WHERE status = 'running';

REVOKE ALL ON {{.Schema}}.runs FROM PUBLIC;

-- +goose Down
DROP TABLE {{.Schema}}.runs;
