-- The keys of the builtins' messages belong to the builtins. outbox_enqueue
-- does nothing for a key that exists, so a job role that queued a key of the
-- invoices builtin first (invoice.<job>.<slot>.<client>) would silently drop
-- the real invoice's e-mail. A role's call is refused for such a key; the
-- builtins write through package fence and are not affected.

-- +goose Up
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
