-- The fence: one row per job holding the newest fencing token seen, and the
-- functions every result-writing transaction goes through. The design and
-- its correctness argument are in the documentation of package fence.
--
-- {{.Schema}} is the quoted store.schema and {{.Name}} its plain name; the
-- migration runner substitutes both before goose reads the file.

-- +goose Up
CREATE TABLE {{.Schema}}.job_fence (
    job       text PRIMARY KEY,
    token     bigint NOT NULL CHECK (token > 0),
    raised_at timestamptz NOT NULL DEFAULT now()
);

-- fence_check is the first statement of every transaction that writes results
-- for job with token. Equal token: takes the job's shared advisory lock until
-- the transaction ends. Newer token: takes the exclusive lock (which waits for
-- every transaction holding the shared lock, that is every in-flight writer
-- with the older token), raises the row, and keeps the lock until the
-- transaction ends. Older token: SQLSTATE JF001. The row is read again in a
-- new statement after the lock is granted; in a VOLATILE function that
-- statement takes a new snapshot, which is what makes a writer that waited
-- behind a raise see it (a STABLE function would reuse the caller's snapshot).
-- The scheduler's own writers take the same lock (same key) with plain
-- statements instead, and raise with fence_raise.
-- +goose StatementBegin
CREATE FUNCTION {{.Schema}}.fence_check(job text, token bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    p_job    ALIAS FOR $1;
    p_token  ALIAS FOR $2;
    lock_key bigint := hashtextextended('{{.Name}}.job_fence:' || $1, 0);
    cur      bigint;
    saved    text;
BEGIN
    IF p_token <= 0 THEN
        RAISE EXCEPTION 'fence: invalid token % for job %', p_token, p_job
            USING ERRCODE = '22023';
    END IF;

    SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = p_job;
    IF cur = p_token THEN
        PERFORM pg_advisory_xact_lock_shared(lock_key);
    ELSIF cur IS NULL OR cur < p_token THEN
        -- A raise must not wait forever behind a frozen writer: apply a
        -- lock_timeout unless the caller chose one (SQLSTATE 55P03).
        saved := current_setting('lock_timeout');
        IF saved = '0' THEN
            PERFORM set_config('lock_timeout', '10s', true);
        END IF;
        PERFORM pg_advisory_xact_lock(lock_key);
        IF saved = '0' THEN
            PERFORM set_config('lock_timeout', saved, true);
        END IF;
        INSERT INTO {{.Schema}}.job_fence AS f (job, token) VALUES (p_job, p_token)
        ON CONFLICT ON CONSTRAINT job_fence_pkey
        DO UPDATE SET token = excluded.token, raised_at = now()
        WHERE f.token < excluded.token;
    END IF;

    -- Read again, in a new snapshot taken after the lock was granted. Under
    -- REPEATABLE READ or SERIALIZABLE the snapshot is the transaction's, so
    -- lock the row as well: a raise committed after that snapshot then fails
    -- this statement with SQLSTATE 40001 instead of passing unseen.
    IF current_setting('transaction_isolation') = 'read committed' THEN
        SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = p_job;
    ELSE
        SELECT f.token INTO cur FROM {{.Schema}}.job_fence AS f WHERE f.job = p_job FOR SHARE;
    END IF;
    IF cur IS DISTINCT FROM p_token THEN
        RAISE EXCEPTION 'fenced out: job % token % is older than the fence %', p_job, p_token, cur
            USING ERRCODE = 'JF001',
                  DETAIL = format('job=%s token=%s fence=%s', p_job, p_token, cur),
                  HINT = 'a newer leader owns this job: discard the result and stop acting as leader';
    END IF;
    RETURN cur;
END
$fn$;
-- +goose StatementEnd

-- fence_check_all enters the fences of several jobs in one statement, in a
-- fixed order so that two such transactions cannot deadlock.
-- +goose StatementBegin
CREATE FUNCTION {{.Schema}}.fence_check_all(jobs text[], token bigint) RETURNS void
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

-- fence_raise raises the fences of jobs to token (a new leader does this
-- before it runs anything) and returns every job's fence afterwards. A fence
-- already above token is left alone and returned: the caller decides whether
-- that is a newer leader or a token regression. Each raise waits for the
-- in-flight writers with older tokens, under the caller's lock_timeout, or
-- 10s when the caller has none.
-- +goose StatementBegin
CREATE FUNCTION {{.Schema}}.fence_raise(jobs text[], token bigint)
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

-- fence_current returns the job's fence, or NULL when it has none.
-- +goose StatementBegin
CREATE FUNCTION {{.Schema}}.fence_current(job text) RETURNS bigint
LANGUAGE sql STABLE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$ SELECT f.token FROM {{.Schema}}.job_fence AS f WHERE f.job = $1 $fn$;
-- +goose StatementEnd

-- fence_admin_reset removes a job's fence so that a lower token is accepted
-- again: only for an operator after a deliberate rebuild of etcd whose
-- revisions cannot be bumped. It runs with the caller's privileges (DELETE
-- on job_fence is needed) and waits for the job's in-flight writers first.
-- +goose StatementBegin
CREATE FUNCTION {{.Schema}}.fence_admin_reset(job text) RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    removed bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('{{.Name}}.job_fence:' || $1, 0));
    DELETE FROM {{.Schema}}.job_fence AS f WHERE f.job = $1 RETURNING f.token INTO removed;
    RETURN removed;
END
$fn$;
-- +goose StatementEnd

-- Functions are executable by PUBLIC by default. Anyone able to call
-- fence_check can raise a fence to any token and so lock every leader out,
-- so EXECUTE is granted explicitly (see the package documentation).
REVOKE ALL ON {{.Schema}}.job_fence FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION
    {{.Schema}}.fence_check(text, bigint),
    {{.Schema}}.fence_check_all(text[], bigint),
    {{.Schema}}.fence_raise(text[], bigint),
    {{.Schema}}.fence_current(text),
    {{.Schema}}.fence_admin_reset(text)
FROM PUBLIC;

-- +goose Down
DROP FUNCTION {{.Schema}}.fence_admin_reset(text);
DROP FUNCTION {{.Schema}}.fence_current(text);
DROP FUNCTION {{.Schema}}.fence_raise(text[], bigint);
DROP FUNCTION {{.Schema}}.fence_check_all(text[], bigint);
DROP FUNCTION {{.Schema}}.fence_check(text, bigint);
DROP TABLE {{.Schema}}.job_fence;
