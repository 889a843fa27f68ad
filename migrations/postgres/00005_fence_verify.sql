-- A check-only fence for job roles, and the raising functions taken away
-- from everyone but their owner.
--
-- fence_check raises a fence when its token is newer, and inserts a row for
-- a job that has none: a job role allowed to call it could raise any job's
-- fence to a token no leader will ever hold (every leader is then refused)
-- or fill job_fence with rows for names that are not jobs. Job roles only
-- need to check: the leader raised the fences of its jobs when it took
-- over, so a run's token equals its job's fence for as long as its term
-- lasts. fence_verify is that check. Afterwards only the scheduler's own
-- role (the owner of these functions, which runs the migrations) creates or
-- raises fences.

-- +goose Up
-- fence_verify is the first statement of a job role's transaction that
-- writes results for job with token. Token equal to the fence: takes the
-- job's shared advisory lock until the transaction ends (the key of
-- fence_check, so a leader's raise waits for the transaction and a
-- transaction arriving during a raise waits for the raise), and returns the
-- fence. Any other case, including a job without a fence: SQLSTATE JF001,
-- with the DETAIL of fence_check. It never writes. The fence is read again
-- in a new statement after the lock is granted, for the reason given in
-- migration 1; under REPEATABLE READ or SERIALIZABLE the row is locked FOR
-- SHARE, so a raise committed after the transaction's snapshot fails the
-- check with SQLSTATE 40001 instead of passing unseen.
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

REVOKE EXECUTE ON FUNCTION {{.Schema}}.fence_verify(text, bigint) FROM PUBLIC;

-- Take the raising functions away from every grantee but the owner and
-- the role migrating (the scheduler's own), PUBLIC included. A role that
-- could call fence_check (the job-role recipe of earlier releases) is given
-- fence_verify instead, so that its scripts only change the function they
-- call. CASCADE also takes the grants that a grantee with the grant option
-- made in turn.
-- +goose StatementBegin
DO $do$
DECLARE
    raising regprocedure[] := ARRAY[
        '{{.Schema}}.fence_check(text, bigint)'::regprocedure,
        '{{.Schema}}.fence_check_all(text[], bigint)'::regprocedure,
        '{{.Schema}}.fence_raise(text[], bigint)'::regprocedure];
    g record;
BEGIN
    FOR g IN
        SELECT p.oid::regprocedure AS fn, a.grantee
        FROM pg_proc AS p, aclexplode(p.proacl) AS a
        WHERE p.oid = ANY (raising) AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner
          AND a.grantee <> (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user)
        ORDER BY 1, 2
    LOOP
        IF g.grantee = 0 THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC CASCADE', g.fn);
        ELSE
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %I CASCADE', g.fn, (SELECT r.rolname FROM pg_roles AS r WHERE r.oid = g.grantee));
            IF g.fn = raising[1] THEN
                EXECUTE format('GRANT EXECUTE ON FUNCTION {{.Schema}}.fence_verify(text, bigint) TO %I',
                    (SELECT r.rolname FROM pg_roles AS r WHERE r.oid = g.grantee));
            END IF;
        END IF;
    END LOOP;
END
$do$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION {{.Schema}}.fence_verify(text, bigint);
