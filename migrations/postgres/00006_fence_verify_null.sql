-- fence_verify refuses a NULL job or token.
--
-- Migration 5 declared fence_verify STRICT, so a call with a NULL argument
-- (a script whose token variable came out empty and was turned into NULL)
-- returned NULL without checking anything, and the transaction went on as if
-- the check had passed. The check now refuses it with JF001, as it refuses
-- every token that is not the job's fence. CREATE OR REPLACE keeps the
-- grants.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION {{.Schema}}.fence_verify(job text, token bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    p_job   ALIAS FOR $1;
    p_token ALIAS FOR $2;
    cur     bigint;
BEGIN
    IF p_job IS NULL OR p_token IS NULL THEN
        RAISE EXCEPTION 'fenced out: job % token % is not a fence', p_job, p_token
            USING ERRCODE = 'JF001',
                  DETAIL = format('job=%s token=%s fence=', p_job, p_token),
                  HINT = 'the job name and the token must both be given: discard the result';
    END IF;
    IF p_token <= 0 THEN
        RAISE EXCEPTION 'fence: invalid token % for job %', p_token, p_job
            USING ERRCODE = '22023';
    END IF;

    SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = p_job;
    IF cur = p_token THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('{{.Name}}.job_fence:' || p_job, 0));
        IF current_setting('transaction_isolation') = 'read committed' THEN
            SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = p_job;
        ELSE
            SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = p_job FOR SHARE;
        END IF;
    END IF;
    IF cur IS DISTINCT FROM p_token THEN
        RAISE EXCEPTION 'fenced out: job % token % is not the fence %', p_job, p_token, cur
            USING ERRCODE = 'JF001',
                  DETAIL = format('job=%s token=%s fence=%s', p_job, p_token, cur),
                  HINT = 'the token is not the current leader''s for this job: discard the result';
    END IF;
    RETURN cur;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION {{.Schema}}.fence_verify(job text, token bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    p_job   ALIAS FOR $1;
    p_token ALIAS FOR $2;
    cur     bigint;
BEGIN
    IF p_token <= 0 THEN
        RAISE EXCEPTION 'fence: invalid token % for job %', p_token, p_job
            USING ERRCODE = '22023';
    END IF;

    SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = p_job;
    IF cur = p_token THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('{{.Name}}.job_fence:' || p_job, 0));
        IF current_setting('transaction_isolation') = 'read committed' THEN
            SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = p_job;
        ELSE
            SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = p_job FOR SHARE;
        END IF;
    END IF;
    IF cur IS DISTINCT FROM p_token THEN
        RAISE EXCEPTION 'fenced out: job % token % is not the fence %', p_job, p_token, cur
            USING ERRCODE = 'JF001',
                  DETAIL = format('job=%s token=%s fence=%s', p_job, p_token, cur),
                  HINT = 'the token is not the current leader''s for this job: discard the result';
    END IF;
    RETURN cur;
END
$fn$;
-- +goose StatementEnd
