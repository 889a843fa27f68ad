-- The keys of failure notifications belong to the scheduler: a notification
-- is queued by the write of its slot's outcome, under a key of the slot
-- (notify.<job>.<slot>.<event>.<destination>), and outbox_enqueue does nothing
-- for a key that exists. A job role that queued such a key first would
-- silence its own job's failure notification; a role's call is refused for
-- it, as for the invoices builtin's keys.

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

