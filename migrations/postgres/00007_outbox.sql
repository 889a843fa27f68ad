-- The outbox: the e-mails and webhooks of a job's runs, written in the same
-- fenced transaction as the run's results and delivered afterwards by one
-- dispatcher, the leader's (package outbox). A message of a transaction that
-- was fenced out never exists; a redo of a slot queues nothing twice,
-- because every message has a stable key.
--
-- Job roles do not write the table: they call outbox_enqueue after their
-- fence check, which checks the fence again itself, and so cannot queue a
-- message for a token that is not the job's fence, nor change a message
-- once it is queued. Every statement may run again on a schema that has
-- them (IF NOT EXISTS, OR REPLACE), as a migration recorded as missing does.

-- +goose Up
CREATE TABLE IF NOT EXISTS {{.Schema}}.outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The key is also the left side of an e-mail's Message-ID: a dot-atom.
    key             text NOT NULL CHECK (length(key) <= 200 AND key ~ '^[A-Za-z0-9_~/+=-]+(\.[A-Za-z0-9_~/+=-]+)*$'),
    job             text NOT NULL CHECK (length(job) BETWEEN 1 AND 200),
    scheduled_at    timestamptz NOT NULL,
    manual          boolean NOT NULL DEFAULT false,
    token           bigint NOT NULL CHECK (token > 0),
    kind            text NOT NULL CHECK (kind IN ('email', 'webhook')),
    destination     text NOT NULL CHECK (length(destination) BETWEEN 1 AND 2048),
    subject         text NOT NULL DEFAULT '' CHECK (length(subject) <= 998),
    body            text NOT NULL DEFAULT '' CHECK (length(body) <= 1048576),
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'delivered', 'dead')),
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL,
    claim_token     bigint NOT NULL DEFAULT 0 CHECK (claim_token >= 0),
    last_error      text NOT NULL DEFAULT '' CHECK (length(last_error) <= 4096),
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    delivered_at    timestamptz,
    CONSTRAINT outbox_key UNIQUE (key),
    CHECK ((status = 'delivered') = (delivered_at IS NOT NULL))
);

-- The dispatcher takes due pending messages oldest first, and finds the
-- in-flight messages of earlier terms; both sets are small.
CREATE INDEX IF NOT EXISTS outbox_due_idx ON {{.Schema}}.outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS outbox_sending_idx ON {{.Schema}}.outbox (claim_token) WHERE status = 'sending';
-- Pruning follows the runs of a job: the messages of a slot go with its run.
CREATE INDEX IF NOT EXISTS outbox_slot_idx ON {{.Schema}}.outbox (job, scheduled_at, manual);

REVOKE ALL ON {{.Schema}}.outbox FROM PUBLIC;

-- outbox_enqueue queues one message of job's slot (scheduled_at, manual) in
-- the caller's transaction, which must hold job's fence with token: it checks
-- the fence itself with fence_verify (JF001 for any other token, the job's
-- shared lock until the transaction ends otherwise). It returns true when it
-- queued the message and false when a message with this key already exists
-- (a redo of the slot), whatever that message holds. The times are the
-- server's. It runs as its owner, so a caller needs EXECUTE on it and nothing
-- on the table.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION {{.Schema}}.outbox_enqueue(job text, token bigint, key text, kind text,
    destination text, subject text, body text, scheduled_at timestamptz, manual boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    queued bigint;
BEGIN
    PERFORM {{.Schema}}.fence_verify($1, $2);
    IF $8 IS NULL THEN
        RAISE EXCEPTION 'outbox: message % of job % has no slot', $3, $1 USING ERRCODE = '22004';
    END IF;
    INSERT INTO {{.Schema}}.outbox AS o (key, job, scheduled_at, manual, token, kind, destination,
        subject, body, next_attempt_at, created_at, updated_at)
    VALUES ($3, $1, $8, coalesce($9, false), $2, $4, $5, coalesce($6, ''), coalesce($7, ''),
        clock_timestamp(), clock_timestamp(), clock_timestamp())
    ON CONFLICT ON CONSTRAINT outbox_key DO NOTHING
    RETURNING o.id INTO queued;
    RETURN queued IS NOT NULL;
END
$fn$;
-- +goose StatementEnd

REVOKE EXECUTE ON FUNCTION {{.Schema}}.outbox_enqueue(text, bigint, text, text, text, text, text, timestamptz, boolean) FROM PUBLIC;

-- Every role that may check a fence may queue messages: grant the function to
-- the grantees of fence_verify, but its owner and the role migrating.
-- +goose StatementBegin
DO $do$
DECLARE
    g record;
BEGIN
    FOR g IN
        SELECT DISTINCT r.rolname
        FROM pg_proc AS p, aclexplode(p.proacl) AS a, pg_roles AS r
        WHERE p.oid = '{{.Schema}}.fence_verify(text, bigint)'::regprocedure
          AND a.privilege_type = 'EXECUTE' AND a.grantee = r.oid
          AND a.grantee <> p.proowner AND r.rolname <> current_user
        ORDER BY 1
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION {{.Schema}}.outbox_enqueue(text, bigint, text, text, text, text, text, timestamptz, boolean) TO %I', g.rolname);
    END LOOP;
END
$do$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION {{.Schema}}.outbox_enqueue(text, bigint, text, text, text, text, text, timestamptz, boolean);
DROP TABLE {{.Schema}}.outbox;
