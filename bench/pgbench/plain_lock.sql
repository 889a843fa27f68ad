-- (g) a stand-in for the check's lock alone: (f) with the first SELECT taking the job's shared
-- advisory lock, as fence_verify takes it (any role may take an advisory lock; it checks
-- nothing).
\set n random(1, 1000000000)
BEGIN \;
SELECT pg_advisory_xact_lock_shared(hashtextextended('scheduler.job_fence:bench', 0)) \;
SELECT 2 \;
INSERT INTO bench_rows (job, token, n) VALUES ('bench', :token, :n) \;
COMMIT;
