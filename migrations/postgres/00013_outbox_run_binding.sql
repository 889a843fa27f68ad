-- A role's message belongs to a run it can prove it is. Every fence of a
-- term holds the same token, so fence_verify alone lets the role of job A
-- name job B: it could queue messages of B's slots, or queue B's key first
-- under its own job, so that B's real message became a redo and was never
-- sent. outbox_enqueue now takes a role's message only with the secret of a
-- running run of the job it names, from the transaction's setting
-- scheduler.run_secret (the scheduler hands each run its own: an exec job's
-- SCHEDULER_RUN_SECRET; a sql job's transaction has the setting already),
-- and queues it for that run's slot; and a key must begin with the job's
-- name and a dot, so that no job can queue a key of another. A secret is
-- the run id, a dot, and the hex SHA-256 of run_key's bytes followed by the
-- run id in decimal: a run id is digits alone, so no secret can be extended
-- into another run's. Only the owner reads run_key.

-- +goose Up
CREATE TABLE IF NOT EXISTS {{.Schema}}.run_key (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    key bytea NOT NULL CHECK (length(key) >= 32)
);
REVOKE ALL ON {{.Schema}}.run_key FROM PUBLIC;
-- Whoever reads the key can make every run's secret: take away what default privileges
-- granted on creation, to every role but the owner.
-- +goose StatementBegin
DO $do$
DECLARE
    g record;
BEGIN
    FOR g IN
        SELECT DISTINCT a.grantee::regrole::text AS role
        FROM pg_catalog.pg_class AS c, pg_catalog.aclexplode(c.relacl) AS a
        WHERE c.oid = '{{.Schema}}.run_key'::regclass AND a.grantee <> c.relowner AND a.grantee <> 0
    LOOP
        EXECUTE format('REVOKE ALL ON {{.Schema}}.run_key FROM %s', g.role);
    END LOOP;
END
$do$;
-- +goose StatementEnd
INSERT INTO {{.Schema}}.run_key (key)
VALUES (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'))
ON CONFLICT DO NOTHING;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION {{.Schema}}.outbox_enqueue(job text, token bigint, key text, kind text,
    destination text, subject text, body text, scheduled_at timestamptz, manual boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    queued bigint;
    secret text := coalesce(current_setting('scheduler.run_secret', true), '');
    run    bigint;
    slot   timestamptz;
    man    boolean;
    ok     boolean;
BEGIN
    PERFORM {{.Schema}}.fence_verify($1, $2);
    IF starts_with(lower(coalesce($3, '')), 'invoice.') THEN
        RAISE EXCEPTION 'outbox: key % is reserved for the invoices builtin', $3 USING ERRCODE = '42501';
    END IF;
    IF starts_with(lower(coalesce($3, '')), 'notify.') THEN
        RAISE EXCEPTION 'outbox: key % is reserved for failure notifications', $3 USING ERRCODE = '42501';
    END IF;
    IF NOT starts_with(coalesce($3, ''), $1 || '.') THEN
        RAISE EXCEPTION 'outbox: key % is not of job %', $3, $1 USING ERRCODE = '42501',
            HINT = format('a message''s key begins with its job''s name and a dot: %s.<what it is about>', $1);
    END IF;
    IF secret ~ '^[1-9][0-9]{0,17}[.][0-9a-f]{64}$' THEN
        run := split_part(secret, '.', 1)::bigint;
        SELECT r.scheduled_at, r.manual, split_part(secret, '.', 2) = encode(sha256(k.key || convert_to(run::text, 'UTF8')), 'hex')
        INTO slot, man, ok
        FROM {{.Schema}}.runs AS r, {{.Schema}}.run_key AS k
        WHERE r.run_id = run AND r.job = $1 AND r.status = 'running';
    END IF;
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'outbox: the transaction does not hold the secret of a running run of job %', $1
            USING ERRCODE = '42501',
                  HINT = 'set scheduler.run_secret to the run''s SCHEDULER_RUN_SECRET first: SELECT set_config(''scheduler.run_secret'', ..., true)';
    END IF;
    INSERT INTO {{.Schema}}.outbox AS o (key, job, scheduled_at, manual, token, kind, destination,
        subject, body, next_attempt_at, created_at, updated_at)
    VALUES ($3, $1, slot, man, $2, $4, $5, coalesce($6, ''), coalesce($7, ''),
        clock_timestamp(), clock_timestamp(), clock_timestamp())
    ON CONFLICT ON CONSTRAINT outbox_key DO NOTHING
    RETURNING o.id INTO queued;
    RETURN queued IS NOT NULL;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
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
    IF starts_with(lower(coalesce($3, '')), 'invoice.') THEN
        RAISE EXCEPTION 'outbox: key % is reserved for the invoices builtin', $3 USING ERRCODE = '42501';
    END IF;
    IF starts_with(lower(coalesce($3, '')), 'notify.') THEN
        RAISE EXCEPTION 'outbox: key % is reserved for failure notifications', $3 USING ERRCODE = '42501';
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

DROP TABLE IF EXISTS {{.Schema}}.run_key;
