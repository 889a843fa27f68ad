-- Fences entered and raised with a few statements over a set of jobs
-- instead of one function call (and four statements) per job. The argument
-- of package fence holds job by job: a writer's read of each fence is a
-- later statement than the one that took that job's shared lock, and a
-- raise updates a fence only while it holds that job's exclusive lock,
-- until it commits. Both take their locks in the byte order of the job
-- names (COLLATE "C"), as before, so they cannot deadlock.
--
-- fence_check_all takes the set-based path when every fence already
-- equals the token (the common case: a leader raised them when it took
-- over). Any other case (a fence below the token, which the writer raises,
-- or an isolation level above READ COMMITTED) takes the path of migration
-- 1, one fence_check per job.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION {{.Schema}}.fence_check_all(jobs text[], token bigint) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    p_token ALIAS FOR $2;
    j       text;
    cur     bigint;
BEGIN
    IF p_token <= 0 THEN
        RAISE EXCEPTION 'fence: invalid token %', p_token USING ERRCODE = '22023';
    END IF;
    IF current_setting('transaction_isolation') = 'read committed' AND NOT EXISTS (
        SELECT 1 FROM unnest($1) AS u(job) LEFT JOIN {{.Schema}}.job_fence AS f ON f.job = u.job
        WHERE f.token IS DISTINCT FROM p_token)
    THEN
        PERFORM count(pg_advisory_xact_lock_shared(hashtextextended('{{.Name}}.job_fence:' || s.job, 0)))
        FROM (SELECT DISTINCT u COLLATE "C" AS job FROM unnest($1) AS u ORDER BY 1) AS s;
        -- A new statement: its snapshot is taken after every lock above was granted.
        SELECT u.job, f.token INTO j, cur
        FROM unnest($1) AS u(job) LEFT JOIN {{.Schema}}.job_fence AS f ON f.job = u.job
        WHERE f.token IS DISTINCT FROM p_token
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'fenced out: job % token % is older than the fence %', j, p_token, cur
                USING ERRCODE = 'JF001',
                      DETAIL = format('job=%s token=%s fence=%s', j, p_token, cur),
                      HINT = 'a newer leader owns this job: discard the result and stop acting as leader';
        END IF;
        RETURN;
    END IF;
    FOR j IN SELECT DISTINCT u COLLATE "C" FROM unnest($1) AS u ORDER BY 1 LOOP
        PERFORM {{.Schema}}.fence_check(j, $2);
    END LOOP;
END
$fn$;
-- +goose StatementEnd

-- fence_raise: the same contract as in migration 1 (raise the fences of
-- jobs to token, waiting for the in-flight writers with older tokens under
-- the caller's lock_timeout or 10s; return every job's fence afterwards; a
-- fence already at or above token is left alone).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION {{.Schema}}.fence_raise(jobs text[], token bigint)
RETURNS TABLE (fenced_job text, fence bigint)
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    p_token ALIAS FOR $2;
    saved   text := current_setting('lock_timeout');
    below   text[];
BEGIN
    IF p_token <= 0 THEN
        RAISE EXCEPTION 'fence: invalid token %', p_token USING ERRCODE = '22023';
    END IF;
    IF saved = '0' THEN
        PERFORM set_config('lock_timeout', '10s', true);
    END IF;
    SELECT array_agg(u.job ORDER BY u.job COLLATE "C") INTO below
    FROM (SELECT DISTINCT x AS job FROM unnest($1) AS x) AS u
    LEFT JOIN {{.Schema}}.job_fence AS f ON f.job = u.job
    WHERE f.token IS NULL OR f.token < p_token;
    IF below IS NOT NULL THEN
        PERFORM count(pg_advisory_xact_lock(hashtextextended('{{.Name}}.job_fence:' || b.job, 0)))
        FROM (SELECT x AS job FROM unnest(below) WITH ORDINALITY AS t(x, n) ORDER BY n) AS b;
        INSERT INTO {{.Schema}}.job_fence AS f (job, token)
        SELECT b, p_token FROM unnest(below) AS b
        ON CONFLICT ON CONSTRAINT job_fence_pkey
        DO UPDATE SET token = excluded.token, raised_at = now()
        WHERE f.token < excluded.token;
    END IF;
    IF saved = '0' THEN
        PERFORM set_config('lock_timeout', saved, true);
    END IF;
    RETURN QUERY
        SELECT u.job, f.token
        FROM (SELECT DISTINCT x AS job FROM unnest($1) AS x) AS u
        JOIN {{.Schema}}.job_fence AS f ON f.job = u.job;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION {{.Schema}}.fence_check_all(jobs text[], token bigint) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    j text;
BEGIN
    FOR j IN SELECT DISTINCT u COLLATE "C" FROM unnest($1) AS u ORDER BY 1 LOOP
        PERFORM {{.Schema}}.fence_check(j, $2);
    END LOOP;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION {{.Schema}}.fence_raise(jobs text[], token bigint)
RETURNS TABLE (fenced_job text, fence bigint)
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    p_token ALIAS FOR $2;
    j       text;
    cur     bigint;
    saved   text := current_setting('lock_timeout');
BEGIN
    IF p_token <= 0 THEN
        RAISE EXCEPTION 'fence: invalid token %', p_token USING ERRCODE = '22023';
    END IF;
    IF saved = '0' THEN
        PERFORM set_config('lock_timeout', '10s', true);
    END IF;
    FOR j IN SELECT DISTINCT u COLLATE "C" FROM unnest($1) AS u ORDER BY 1 LOOP
        SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = j;
        IF cur IS NULL OR cur < p_token THEN
            PERFORM pg_advisory_xact_lock(hashtextextended('{{.Name}}.job_fence:' || j, 0));
            INSERT INTO {{.Schema}}.job_fence AS f (job, token) VALUES (j, p_token)
            ON CONFLICT ON CONSTRAINT job_fence_pkey
            DO UPDATE SET token = excluded.token, raised_at = now()
            WHERE f.token < excluded.token;
            SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = j;
        END IF;
        fenced_job := j;
        fence := cur;
        RETURN NEXT;
    END LOOP;
    IF saved = '0' THEN
        PERFORM set_config('lock_timeout', saved, true);
    END IF;
END
$fn$;
-- +goose StatementEnd
